/**
 * The public face of the capabilities plugin: what a capability is (an id, its declared version
 * when it has one, and always a content hash), the metrics kept per id + version, the audit log's
 * lines, the `capabilities` service that a sink (metrics-jsonl) and other plugins read, and its
 * controls (`capabilities/list`, `capabilities/inspect`).
 */
import type { DoctorCheck, InspectSection } from 'yoke'

export type CapabilityKind = 'tool' | 'skill' | 'package' | 'server' | 'install' | 'plugin'

export interface Capability {
  kind: CapabilityKind
  /** a tool's name, `exec:<package>`, `mcp:<server>`, `skill:<name>`, `install:<name>`, `repo:<name>` */
  id: string
  /** the version it declares (a manifest's, a server's serverInfo, SKILL.md's, yoke.lock's) */
  version?: string
  /** `sha256:` and 12 hex digits of its content (a tool: its name, description, schemas, risk, source) */
  hash: string
  /** a tool's provider (`exec:<package>`, `mcp:<server>`, `native`) */
  source?: string
  /** the instance that registered it */
  owner?: string
  /** why the model cannot use it now (withdrawn, not rolled out here, a pin it fails) */
  refused?: string
  /** a dynamic plugin's: the session (runtime scope) it belongs to */
  scope?: string
  /** a dynamic plugin version's: running, stopped, failed (the current version), or defined */
  state?: string
}

/** `1.2.0` when declared, else the hash: what ID@VERSION names. */
export const versionOf = (c: { version?: string; hash: string }) => c.version ?? c.hash

/** One row of `yoke stats`: a tool's id at one version (a new version starts its own row). */
export interface MetricsRow {
  id: string
  version?: string
  hash: string
  source: string
  /** times offered: sent to a model by the agent loop, or listed to an MCP client by the gateway */
  offered: number
  /** times `tool_search` returned it */
  found: number
  called: number
  ok: number
  /** not-ok results by status code */
  errors: Record<string, number>
  /** call latencies in ms, over the most recent calls */
  p50?: number
  p95?: number
  firstAt: string
  lastAt: string
}

/** One line of the audit log: a change of what the model can use. */
export interface AuditEntry {
  at: string
  /** what changed it: start, reload, source (a server's or package's own change), repository, install, withdraw, rollout, pin */
  who: string
  id: string
  /** the version before (null: it was not there) */
  from: string | null
  /** the version after (null: it is gone, or refused) */
  to: string | null
  /** where it changed (a dynamic plugin: its session); absent: the global scope */
  scope?: string
  why?: string
  /** the instance that registered it; a repository change: who called the tool that made it */
  by?: string
  /** the content hash of `to`, where the version alone does not say it (a dynamic plugin's) */
  hash?: string
}

export interface CapabilitiesApi {
  /** every capability known now, tools first; `refused` says why the model cannot use one */
  list(): Capability[]
  /**
   * the metrics rows, most called first: with a `store`, every replica's merged (as last read back,
   * plus what this process counted since; p50 / p95 are bucket estimates), else this process's
   */
  stats(): MetricsRow[]
  /** the rows this process counted (and seeded), whatever the store: what `seed`/`drain` work on */
  local(): MetricsRow[]
  /** adds persisted rows (a sink's last snapshot) to rows this process has not seen yet */
  seed(rows: Array<MetricsRow & { latencies?: number[] }>): void
  /** rows changed since the last call of `drain` (for a sink), with their recent latencies */
  drain(): Array<MetricsRow & { latencies: number[] }>
  /**
   * Appends to the audit log what only the caller knows (this plugin records each repository
   * change so: the dynamic plugin's version before and after, `who: 'repository'`); `at` is added.
   */
  record(entries: Array<Omit<AuditEntry, 'at'>>): void
  /** the audit log's file (undefined: audit is off) */
  readonly auditFile?: string
}

/** The answer of the control `capabilities/list` (`yoke stats`, `yoke pin`). */
export interface CapabilitiesList {
  /** every capability known now, as `CapabilitiesApi.list` gives them */
  capabilities: Capability[]
  /** the metrics rows used at or after the request's `since` (all without one) */
  rows: MetricsRow[]
  auditFile?: string
  /** how many rules the instance has (withdrawn, rollout and pins) */
  rules: number
}

/** The answer of `capabilities/audit` (`yoke audit` with a shared store). */
export interface CapabilitiesAudit {
  /** `store`: the store's log, every replica's entries in one order (each with its `replica`) */
  source: 'store' | 'file'
  entries: Array<AuditEntry & { replica?: string }>
  /** lines of the file left out, and why (`file:line: …`) */
  problems: string[]
}

/** One capability as `yoke inspect` shows it: what it is, and its calls (from its metrics row). */
export interface CapabilityLine {
  kind: CapabilityKind
  id: string
  version?: string
  hash: string
  state?: string
  refused?: string
  called: number
  ok: number
  p95?: number
}

/** The answer of `capabilities/inspect`: the section's lines, and the same as data (`--json`). */
export interface CapabilitiesInspect extends InspectSection {
  title: 'capabilities'
  data: CapabilityLine[]
}

declare module 'yoke' {
  interface Services {
    capabilities: CapabilitiesApi
  }
  interface Controls {
    /** every capability and the metrics rows used since `since` (an ISO time) */
    'capabilities/list': { request: { since?: string }; answer: CapabilitiesList }
    /** the capabilities section of `yoke inspect` */
    'capabilities/inspect': { request: Record<string, never>; answer: CapabilitiesInspect }
    /** the audit log: the store's (one order across replicas) when one shares it, else the file */
    'capabilities/audit': { request: Record<string, never>; answer: CapabilitiesAudit }
    /** `yoke doctor`: what waits for the store, what an outage dropped (only while a store shares) */
    'capabilities-store/doctor': { request: Record<string, never>; answer: DoctorCheck[] }
  }
}

/** A config path yoke writes to: relative to the project and inside it (metrics-jsonl's `file` too). */
export { escapesProject, PROJECT_PATH_RULE, resolveInside } from './paths.ts'

/** The checked reader and appender of the JSON-lines state files yoke reads back (metrics-jsonl's too). */
export {
  appendJsonLines,
  readJsonLines,
  type JsonLines,
  type LineSchema,
  type ReadOptions,
} from './state-file.ts'
