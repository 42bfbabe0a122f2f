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
  type Context,
  type Disposer,
  type InspectSection,
} from 'yoke'
import type { PromptApi, PromptSection, RenderContext } from './api.ts'
import './errors.ts'

export type * from './api.ts'

type Entry = PromptSection & { owner: string; fiber?: number }

export class PromptSections {
  readonly hooks = defineHooks('prompt', {
    /** sections were added or removed */
    change: new SyncHook<[string[]]>(['names']),
  })
  /** the section each name renders */
  readonly #sections = new Map<string, Entry>()
  /** older sections a reloading instance's new version stands in front of, newest first */
  readonly #shadowed = new Map<string, Entry[]>()

  /**
   * Adds a section. A name is taken once, except by the new version of a reloading instance (the
   * same owner key, another fiber), which stands in front of the old one until that one goes.
   */
  register(section: PromptSection, owner: string, fiber?: number): () => void {
    const current = this.#sections.get(section.name)
    if (current && (current.owner !== owner || fiber === undefined || current.fiber === fiber))
      throw new YokeError('PROMPT_DUPLICATE', { name: section.name, owner: current.owner })
    const entry = { ...section, owner, fiber }
    const below = current ? [current, ...(this.#shadowed.get(section.name) ?? [])] : []
    if (below.length) this.#shadowed.set(section.name, below)
    this.#sections.set(section.name, entry)
    this.hooks.change.call([section.name])
    return () => {
      const older = this.#shadowed.get(section.name) ?? []
      const rest = older.filter((e) => e !== entry)
      if (this.#sections.get(section.name) !== entry) {
        if (rest.length) this.#shadowed.set(section.name, rest)
        else this.#shadowed.delete(section.name)
        return
      }
      const [next, ...others] = rest
      if (others.length) this.#shadowed.set(section.name, others)
      else this.#shadowed.delete(section.name)
      if (next) this.#sections.set(section.name, next)
      else this.#sections.delete(section.name)
      this.hooks.change.call([section.name])
    }
  }

  list() {
    return this.#ordered().map((s) => ({ name: s.name, order: s.order ?? 100, owner: s.owner }))
  }

  render(context: RenderContext = {}): string {
    return this.#ordered()
      .map((s) => (typeof s.text === 'function' ? s.text(context) : s.text).trim())
      .filter(Boolean)
      .join('\n\n')
  }

  #ordered() {
    return [...this.#sections.values()].sort(
      (a, b) => (a.order ?? 100) - (b.order ?? 100) || a.name.localeCompare(b.name),
    )
  }

  /** A view in which registrations are tracked by `track` (a consumer's effects, or plain disposers). */
  view(
    owner: string,
    track: (label: string, cleanup: () => void) => Disposer,
    fiber?: number,
  ): PromptApi {
    return {
      hooks: this.hooks,
      register: (section) =>
        track(`prompt section ${section.name}`, this.register(section, owner, fiber)),
      list: () => this.list(),
      render: (context) => this.render(context),
    }
  }
}

export default definePlugin({
  name: 'prompt',
  provides: ['prompt'],
  apply(ctx) {
    const sections = new PromptSections()
    const host = sections.view('host', (_label, cleanup) => toDisposer(cleanup))
    // `yoke inspect --section prompt`: the system prompt as the model would see it now
    ctx.control('prompt/inspect', () => inspectSection(sections.render()))
    ctx.provide(
      'prompt',
      Object.assign(host, {
        [bindToContext]: (c: Context) => sections.view(c.key, c.effect, c.fiberId),
      }),
    )
  },
})

/** The `prompt` section of `yoke inspect`: the rendered prompt line by line (`--json`: the text). */
export function inspectSection(prompt: string): InspectSection {
  return prompt
    ? { title: 'prompt', lines: prompt.split('\n'), data: prompt }
    : { title: 'prompt', note: 'empty: no prompt sections', lines: [], data: prompt }
}
