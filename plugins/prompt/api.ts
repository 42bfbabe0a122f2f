/**
 * The public face of the prompt plugin: the `prompt` service, named and ordered sections of the
 * system prompt that instances register (each an effect of its instance) and a loop renders.
 */
import type { Disposer, InspectSection, SyncHook } from 'yoke'

export interface PromptSection {
  name: string
  /** lower comes first (default 100); ties by name */
  order?: number
  /** the text, or a function that renders it when the prompt is assembled */
  text: string | ((context: RenderContext) => string)
}

/** What the renderer knows when it assembles the prompt (a loop passes its run's task). */
export interface RenderContext {
  /** the task of the run the prompt is for, when there is one */
  task?: string
}

export interface PromptApi {
  readonly hooks: {
    /** sections were added or removed (their names) */
    change: SyncHook<[string[]]>
  }
  register(section: PromptSection): Disposer
  list(): Array<{ name: string; order: number; owner: string }>
  /** the sections' texts in order, separated by blank lines; empty sections are left out */
  render(context?: RenderContext): string
}

declare module 'yoke' {
  interface Services {
    prompt: PromptApi
  }
  interface Controls {
    /** `yoke inspect --section prompt`: the system prompt as the model would see it now, line by line */
    'prompt/inspect': { request: Record<string, never>; answer: InspectSection }
  }
}
