/**
 * The public face of turn-guard: the reload gate that knows when an agent's turn is in flight
 * and which reload changes would alter the model's cached prompt (see README, "Hot reload").
 */
import type { DoctorCheck } from 'yoke'

export interface TurnGuardStatus {
  /** the runs in flight, oldest first (`run <id> (<scope>)`) */
  inFlight: string[]
  /** the reload held until they end: what it would change and why */
  held?: { since: string; cacheImpact: Array<{ instance: string; change: string; why: string }> }
}

declare module 'yoke' {
  interface Controls {
    /** `yoke doctor`: a reload held until a turn ends (a warning, with what it waits for) */
    'turn-guard/doctor': { request: Record<string, never>; answer: DoctorCheck[] }
    /** what is in flight, and the reload held until it ends */
    'turn-guard/status': { request: Record<string, never>; answer: TurnGuardStatus }
  }
}
