/**
 * What the capabilities commands read of the project config: the capabilities instance (its key,
 * its config as written) and where its audit log is.
 */
import { resolve } from 'node:path'
import type { Document } from 'yaml'
import { YokeError, type CommandContext } from 'yoke/cli'

export interface ConfiguredRules {
  withdrawn?: unknown[]
  pins?: Array<{ id: string; version?: string; hash?: string }>
  audit?: string | false
}

/** The project's capabilities instance (base preset: `capabilities`) and its config as written. */
export async function configured(
  cli: CommandContext,
): Promise<{ key: string; config: ConfiguredRules }> {
  const found = (await cli.instances()).find((i) => i.use === 'capabilities')
  if (!found)
    throw new YokeError('USAGE', {
      reason:
        'no instance of the capabilities plugin is configured (the base preset has one): add `capabilities: { use: capabilities }` under plugins',
    })
  return { key: found.key, config: (found.config ?? {}) as ConfiguredRules }
}

export async function auditPath(cli: CommandContext, audit: string | false | undefined) {
  if (audit === false) return undefined
  return resolve(await cli.projectDir(), audit ?? '.yoke/audit.jsonl')
}

/**
 * A list of the capabilities instance's config as the project config holds it now: `doc` is the
 * document `cli.editConfig` read under the file's lock, so an edit made meanwhile by another
 * command is in it. When the project config does not set the list, it is the list in effect from
 * the other layers (`effective`: lists replace in a layer merge, so the first edit starts from it).
 */
export function listNow<T>(doc: Document, path: string[], effective: T[] | undefined): T[] {
  if (!doc.hasIn(path)) return [...(effective ?? [])]
  const own = doc.getIn(path) as { toJSON?: () => unknown } | null | undefined
  const value = own?.toJSON?.() ?? own
  return Array.isArray(value) ? (value as T[]) : []
}
