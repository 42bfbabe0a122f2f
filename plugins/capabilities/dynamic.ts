/**
 * Dynamic plugins, the repository plugin's: each version a session defined is the capability
 * `repo:<name>` at version `<n>` with its content hash, a tool one registered carries that version,
 * and each change the repository reports becomes an audit line. The repository service is read
 * through its api.ts; it knows nothing of this plugin.
 */
import type { Context, FiberInfo, RegisteredTool } from 'yoke'
import type { RepositoryApi, RepositoryChange, DynamicVersion } from '../repository/api.ts'
import type { AuditEntry, Capability } from './api.ts'

/** the name of the child instance that runs one version (`repo:<name>@<n>`) */
const VERSION_ID = /^repo:(.+)@(\d+)$/

/** `sha256:` and 12 hex digits, as every capability's hash is written */
export const shortHash = (hash: string) => `sha256:${hash.replace(/^sha256:/, '').slice(0, 12)}`

export function dynamicCapability(v: DynamicVersion, state: string): Capability {
  return {
    kind: 'plugin',
    id: `repo:${v.name}`,
    version: String(v.version),
    hash: shortHash(v.hash),
    scope: v.session,
    state,
  }
}

/** Every version every session defined: the current one in its plugin's state, the rest `defined`. */
export function dynamicCapabilities(repository: RepositoryApi | undefined): Capability[] {
  return (repository?.plugins() ?? []).flatMap((p) =>
    p.versions.map((v) => dynamicCapability(v, v.version === p.current ? p.state : 'defined')),
  )
}

/**
 * The version that registered `tool`, if a dynamic plugin did: the nearest instance up from its
 * owner that runs a `repo:<name>@<n>` version (a fragment's instances are its children). An update
 * starts the new version under the same key beside the old one, so the newest is taken; a tool is
 * looked at when it is registered or first listed, before its version can be replaced.
 */
export function dynamicVersionOf(ctx: Context, tool: RegisteredTool): Capability | undefined {
  const repository = ctx.get('repository')
  if (!repository) return undefined
  let fiber: FiberInfo | undefined = ctx
    .instances()
    .filter((f) => f.key === tool.owner && f.state !== 'disposed')
    .sort((a, b) => b.id - a.id)[0]
  while (fiber && !VERSION_ID.test(fiber.plugin.name)) fiber = fiber.parent
  if (!fiber) return undefined
  const same = repository.versions().filter((v) => v.id === fiber.plugin.name)
  // the same name and number in two sessions: the version whose config object the child was given
  const version = same.find((v) => v.config === fiber.config) ?? same[0]
  return version && dynamicCapability(version, 'running')
}

/**
 * The version a `repository_run` call in `session` would activate (its `version`, else the
 * latest of that session's plugin), as a capability; undefined when it names none (the tool says so).
 */
export function versionToRun(
  repository: RepositoryApi | undefined,
  session: string,
  args: unknown,
): Capability | undefined {
  const { plugin, version } = (args ?? {}) as { plugin?: unknown; version?: unknown }
  const versions = repository?.plugins(session).find((p) => p.name === plugin)?.versions ?? []
  const n = typeof version === 'number' ? version : Math.max(0, ...versions.map((v) => v.version))
  const found = versions.find((v) => v.version === n)
  return found && dynamicCapability(found, 'defined')
}

const SAID: Record<RepositoryChange['action'], string> = {
  define: 'defined, not running',
  run: 'run',
  update: 'updated',
  stop: 'stopped',
  undefine: 'undefined: every version forgotten',
  failed: 'its worker died',
}

/** A repository change as an audit line: `repo:<name>`, version before → after, in its session. */
export function repositoryEntry(
  change: RepositoryChange,
  repository: RepositoryApi,
): Omit<AuditEntry, 'at'> {
  const number = (id: string | undefined) => (id ? (VERSION_ID.exec(id)?.[2] ?? id) : null)
  const to = change.to
    ? repository.versions().find((v) => v.id === change.to && v.session === change.session)
    : undefined
  return {
    who: 'repository',
    id: `repo:${change.name}`,
    from: number(change.from),
    to: number(change.to),
    ...(to && { hash: shortHash(to.hash) }),
    scope: change.session,
    why: change.why ? `${SAID[change.action]}: ${change.why}` : SAID[change.action],
    by: change.by,
  }
}
