/**
 * @module runtime/prompt
 * The `prompt` service: named, ordered sections of the system prompt. Skills, package prompts and
 * the agent loop register sections; the agent loop renders them at the start of each turn.
 */
import { SyncHook } from 'tapable'
import { YokeError } from '../errors.ts'
import { defineHooks } from '../kernel/hooks.ts'

export interface PromptSection {
  name: string
  /** lower comes first (default 100); ties by name */
  order?: number
  /** the text, or a function that renders it when the prompt is assembled */
  text: string | (() => string)
}

export class PromptSections {
  readonly hooks = defineHooks('prompt', {
    /** sections were added or removed */
    change: new SyncHook<[string[]]>(['names']),
  })
  readonly #sections = new Map<string, PromptSection & { owner: string }>()

  register(section: PromptSection, owner = 'host'): () => void {
    const current = this.#sections.get(section.name)
    if (current) throw new YokeError('PROMPT_DUPLICATE', { name: section.name, owner: current.owner })
    const entry = { ...section, owner }
    this.#sections.set(section.name, entry)
    this.hooks.change.call([section.name])
    return () => {
      if (this.#sections.get(section.name) !== entry) return
      this.#sections.delete(section.name)
      this.hooks.change.call([section.name])
    }
  }

  list(): Array<{ name: string; order: number; owner: string }> {
    return this.#ordered().map((s) => ({ name: s.name, order: s.order ?? 100, owner: s.owner }))
  }

  /** The sections' texts in order, separated by blank lines; empty sections are left out. */
  render(): string {
    return this.#ordered()
      .map((s) => (typeof s.text === 'function' ? s.text() : s.text).trim())
      .filter(Boolean)
      .join('\n\n')
  }

  #ordered() {
    return [...this.#sections.values()].sort((a, b) => (a.order ?? 100) - (b.order ?? 100) || a.name.localeCompare(b.name))
  }
}
