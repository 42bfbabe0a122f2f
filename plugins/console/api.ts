/**
 * The public face of the console plugin: its controls (`console/url`: what `yoke console` asks the
 * running `yoke dev`; `console/summary`, `console/inspect`, `console/doctor`: its lines in dev's
 * ready screen, `yoke inspect` and `yoke doctor`), and its wire protocol (protocol.ts), which the
 * page in ui/ codes against.
 */
import type { DoctorCheck, InspectSection, SummarySection } from 'yoke'

export type * from './protocol.ts'

/** The answer of `console/url`. */
export interface ConsoleUrl {
  /** false: the console is off here (not under `yoke dev`, or `enabled: false`); `why` says so */
  listening: boolean
  /** `http://127.0.0.1:PORT/?token=…` (with the token: open it as is) */
  url?: string
  /** the same without the token */
  base?: string
  port?: number
  why?: string
}

declare module 'yoke' {
  interface Controls {
    /** the console's URL with its token (`yoke console`) */
    'console/url': { request: Record<string, never>; answer: ConsoleUrl }
    'console/summary': { request: Record<string, never>; answer: SummarySection | undefined }
    'console/inspect': { request: Record<string, never>; answer: InspectSection | undefined }
    'console/doctor': { request: Record<string, never>; answer: DoctorCheck[] }
  }
}
