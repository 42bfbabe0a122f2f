/**
 * @module cli/contributions
 * What plugins add to the kernel's commands, without `src/` naming a plugin: every control named
 * `<plugin>/<verb>` for a contribution verb (`summary`, `inspect`, `tool-columns`, `doctor`) is
 * asked, in plugin-name order, each bounded; an answer that fails or has the wrong shape is that
 * plugin's entry with the error, never the command's failure.
 */
import type { Kernel } from '../kernel/kernel.ts'
import type { ContributedControls } from '../kernel/types.ts'
import { messageOf } from '../errors.ts'

export interface Contribution<V extends keyof ContributedControls> {
  /** the plugin part of the control's name */
  plugin: string
  answer?: ContributedControls[V]
  /** why it could not be read */
  error?: string
}

/** The controls that contribute `verb`, by plugin name. */
export function contributors(kernel: Kernel, verb: keyof ContributedControls): string[] {
  return kernel.controls().filter((name) => name.endsWith(`/${verb}`))
}

/** Asks every contributor of `verb`; `check` turns an answer into its shape or throws why not. */
export async function contributions<V extends keyof ContributedControls>(
  kernel: Kernel,
  verb: V,
  check: (answer: unknown) => ContributedControls[V],
  timeoutMs = 2000,
): Promise<Array<Contribution<V>>> {
  return Promise.all(
    contributors(kernel, verb).map(async (name) => {
      const plugin = name.slice(0, -verb.length - 1)
      try {
        return { plugin, answer: check(await kernel.ask(name, {}, timeoutMs)) }
      } catch (err) {
        return { plugin, error: messageOf(err) }
      }
    }),
  )
}
