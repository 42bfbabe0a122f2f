/**
 * The public face of the repository plugin: the `repository` service. It lets other plugins (the
 * capability registry, an audit log) read every dynamic plugin version that any session defined,
 * with its capability id and content hash, follow each change of what runs, and stop a running
 * one from outside its session (a withdrawn capability), saying who and why.
 */
import type { SyncHook } from 'yoke'

/** `module`: a plugin module (JavaScript or TypeScript) run in a worker; `fragment`: a preset fragment of built-in plugins. */
export type DynamicKind = 'module' | 'fragment'
export type DynamicLanguage = 'javascript' | 'typescript' | 'yaml'

/** One immutable version of a dynamic plugin, as define stored it. */
export interface DynamicVersion {
  /** the capability id: `repo:<name>@<n>` */
  readonly id: string
  readonly name: string
  /** 1, 2, …: the order it was defined in */
  readonly version: number
  /** `sha256:<hex>` of the kind, language, source and config */
  readonly hash: string
  readonly kind: DynamicKind
  readonly language: DynamicLanguage
  readonly purpose: string
  readonly source: string
  /** the instance config it runs with (a module's; a fragment carries its own) */
  readonly config: unknown
  /** the session (runtime scope key) it belongs to */
  readonly session: string
  /** what define noticed without refusing it */
  readonly notes: readonly string[]
}

/**
 * `defined`: nothing ran yet; `running`: `current` is active; `stopped`: stopped, `current` kept;
 * `failed`: the running version's worker died (its tools are gone), `current` kept.
 */
export type DynamicState = 'defined' | 'running' | 'stopped' | 'failed'

export interface DynamicPluginInfo {
  readonly name: string
  readonly session: string
  readonly purpose: string
  readonly state: DynamicState
  /** the version `run` last activated (kept by stop and by a failed run) */
  readonly current?: number
  readonly versions: readonly DynamicVersion[]
  /** the tools the running version registered */
  readonly tools: readonly string[]
  /** the latest run's outcome and what went wrong, newest last */
  readonly lastRun?: RunRecord
  /** the latest stop of a running version: by whom, and why when it came from outside */
  readonly lastStop?: StopRecord
  readonly diagnostics: readonly string[]
}

export type RunOutcome = 'running' | 'rejected' | 'failed'

export interface RunRecord {
  readonly version: number
  readonly outcome: RunOutcome
  readonly reason?: string
}

export interface StopRecord {
  readonly version: number
  /** the caller of repository_stop, or who stopped it through the service (`capabilities`) */
  readonly by: string
  /** why, when it was stopped through the service (repository_stop gives none) */
  readonly why?: string
}

/** One change of what a session's model can use, for audit logs: who did it, from which version to which. */
export interface RepositoryChange {
  readonly action: 'define' | 'run' | 'update' | 'stop' | 'undefine' | 'failed'
  readonly name: string
  readonly session: string
  /** `repo:<name>@<n>` active before (none: undefined) */
  readonly from?: string
  /** `repo:<name>@<n>` active after, or defined */
  readonly to?: string
  /** the caller of the tool that changed it (`agent:<run>`, an MCP client, `cli`) */
  readonly by: string
  /** why it was stopped, when a stop through the service said so */
  readonly why?: string
}

export interface RepositoryApi {
  /** every version every session defined, oldest first */
  versions(): readonly DynamicVersion[]
  /** the dynamic plugins of one session (default: all sessions) */
  plugins(session?: string): readonly DynamicPluginInfo[]
  /**
   * Stops the running version of `name` in exactly `session` (not a session that merely sees it),
   * as repository_stop does: its worker ends, its tools go, its versions and current pointer stay,
   * and `lastStop` and the `stop` change carry `by` (default `service`) and `why`. It waits for that
   * plugin's run or update in progress and then stops whatever that left running, or, with
   * `version`, only that version (an update to another one meanwhile is left running). False
   * when nothing of that name (or not that version) runs in that session.
   * @example await repository.stop(session, 'weather', 'it is withdrawn', 'capabilities', 1)
   */
  stop(session: string, name: string, why: string, by?: string, version?: number): Promise<boolean>
  readonly hooks: { readonly change: SyncHook<[RepositoryChange]> }
}

declare module 'yoke' {
  interface Services {
    repository: RepositoryApi
  }
  interface Controls {
    /** `yoke repository list`: every session's dynamic plugins (the user sees them all) */
    'repository/list': { request: Record<string, never>; answer: readonly DynamicPluginInfo[] }
    /** `yoke repository export`: the plugins of that name (in that session), with their sources */
    'repository/source': {
      request: { name: string; session?: string }
      answer: readonly DynamicPluginInfo[]
    }
  }
}
