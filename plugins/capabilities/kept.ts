/**
 * What one version of a capabilities instance hands to the next (`ctx.keep`): the metrics rows, the
 * audit log's last known state and what the rules hold. A reload of this instance, or of any other,
 * keeps them; removing the instance from the config drops them.
 */
import type { Capability } from './api.ts'
import { MetricsStore } from './metrics.ts'
import { SharedState } from './shared.ts'

export interface Kept {
  store: MetricsStore
  /** what the metrics and the audit log owe a `store` service, and its merged view (shared.ts) */
  shared: SharedState
  /** the audit log's last recorded state (scope + id → version), read from the file once */
  state?: Map<string, string | null>
  /** the fiber each owner key had at the last flush: a new one means its instance reloaded */
  fibers: Map<string, number>
  /** the tools a dynamic plugin had registered at the last flush (their going is the repository's doing) */
  dynamic: Set<string>
  /** whether the audit log has been brought up to date once (what changes after is not `start`) */
  started: boolean
  /** what each thing a rule unloaded was when it was held (`<kind>:<name>`): unload.ts */
  held: Map<string, Capability>
  /** scope + tool name → the dynamic plugin version that registered it, once listed (unknown.ts) */
  gone: Map<string, Capability>
}

/** The first version's: nothing counted, nothing held. */
export function newKept(): Kept {
  const store = new MetricsStore()
  const shared = new SharedState()
  store.onSeed = (key, row) => shared.seeded(key, row)
  shared.mark = (key) => store.mark(key)
  return {
    store,
    shared,
    fibers: new Map(),
    dynamic: new Set(),
    started: false,
    held: new Map(),
    gone: new Map(),
  }
}
