/**
 * prompt: the `prompt` service, named and ordered sections of the system prompt. Skills, package
 * prompts and the agent loop register sections; the agent loop renders them at the start of each
 * turn. Each section is an effect of the instance that registered it.
 */
import {
  bindToContext,
  defineHooks,
  definePlugin,
  SyncHook,
  toDisposer,
  YokeError,
  type Disposer,
} from 'yoke'
import type { PromptApi, PromptSection } from './api.ts'
import './errors.ts'

export type * from './api.ts'

export class PromptSections {
  readonly hooks = defineHooks('prompt', {
    /** sections were added or removed */
    change: new SyncHook<[string[]]>(['names']),
  })
  readonly #sections = new Map<string, PromptSection & { owner: string }>()

  register(section: PromptSection, owner: string): () => void {
    const current = this.#sections.get(section.name)
    if (current)
      throw new YokeError('PROMPT_DUPLICATE', { name: section.name, owner: current.owner })
    const entry = { ...section, owner }
    this.#sections.set(section.name, entry)
    this.hooks.change.call([section.name])
    return () => {
      if (this.#sections.get(section.name) !== entry) return
      this.#sections.delete(section.name)
      this.hooks.change.call([section.name])
    }
  }

  list() {
    return this.#ordered().map((s) => ({ name: s.name, order: s.order ?? 100, owner: s.owner }))
  }

  render(): string {
    return this.#ordered()
      .map((s) => (typeof s.text === 'function' ? s.text() : s.text).trim())
      .filter(Boolean)
      .join('\n\n')
  }

  #ordered() {
    return [...this.#sections.values()].sort(
      (a, b) => (a.order ?? 100) - (b.order ?? 100) || a.name.localeCompare(b.name),
    )
  }

  /** A view in which registrations are tracked by `track` (a consumer's effects, or plain disposers). */
  view(owner: string, track: (label: string, cleanup: () => void) => Disposer): PromptApi {
    return {
      hooks: this.hooks,
      register: (section) => track(`prompt section ${section.name}`, this.register(section, owner)),
      list: () => this.list(),
      render: () => this.render(),
    }
  }
}

export default definePlugin({
  name: 'prompt',
  provides: ['prompt'],
  apply(ctx) {
    const sections = new PromptSections()
    const host = sections.view('host', (_label, cleanup) => toDisposer(cleanup))
    // `yoke inspect --prompt`: the system prompt as the model would see it now
    ctx.control('prompt', () => sections.render())
    ctx.provide(
      'prompt',
      Object.assign(host, {
        [bindToContext]: (c: { key: string; effect: (l: string, f: () => void) => Disposer }) =>
          sections.view(c.key, c.effect),
      }),
    )
  },
})
