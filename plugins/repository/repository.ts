/**
 * @module repository/repository
 * The dynamic plugins of every session, in memory. A session is the runtime scope a call runs in
 * (an MCP client's session scope, an agent run's scope; the global scope for `yoke run`, `yoke
 * chat` and `yoke tools call`): its plugins are visible and changeable from that scope and the
 * subagents it spawned (`<scope>/spawn-<n>`) only; approvals are kept per scope. Each plugin's
 * runs, stops and undefines run one at a time, and so do its defines (apart from the others); a
 * run's approval is asked before, outside that queue, and a stop asked meanwhile wins over it.
 * Running a version applies it as a child instance of this plugin (`repository/<s>/<name>`); an
 * update starts the new version beside the old one (its tools stand in front at once) and stops
 * the old one only when the new one is active, so a failure leaves the current version running.
 */
import { createHash, randomUUID } from 'node:crypto'
import {
  defineHooks,
  notify,
  SyncHook,
  type ChildHandle,
  type FiberInfo,
  type InjectedContext,
} from 'yoke'
import type {
  DynamicPluginInfo,
  DynamicState,
  DynamicVersion,
  RepositoryApi,
  RepositoryChange,
  RunRecord,
  StopRecord,
} from './api.ts'
import { modulePlugin, fragmentPlugin, type Limits } from './activate.ts'
import { checkModule, SourceProblem } from './check.ts'
import { activation, runRefusal, type RunDecision, type StopAsked } from './decisions.ts'
import { checkFragment } from './fragment.ts'
import { ACK_MARGIN_MS, type Heard, type Replicas, type SharedPlugin } from './replicas.ts'

export type { RunDecision } from './decisions.ts'

export interface DefineInput {
  name: string
  purpose: string
  kind?: 'module' | 'fragment'
  language?: 'javascript' | 'typescript'
  source: string
  config?: Record<string, unknown>
}

export interface Record_ {
  name: string
  session: string
  /** `s<n>`: the session's part of child keys and tool owners */
  tag: string
  purpose: string
  versions: DynamicVersion[]
  /** what each version runs: the checked module code and inject, or the fragment's instances */
  runnable: Map<number, unknown>
  /** `<scope>\0<version>`: approved to run from that scope (a grant is never shared between scopes) */
  approved: Set<string>
  state: DynamicState
  current?: number
  child?: ChildHandle
  tools: Set<string>
  lastRun?: RunRecord
  lastStop?: StopRecord
  diagnostics: string[]
  /** this plugin's operations, one at a time */
  queue: Promise<unknown>
  /** the stops asked for, latest last (numbered): a run whose approval was pending meanwhile does not start */
  stops: StopAsked[]
  stopSeq: number
  /** the plugin's id in the shared store (replicas.ts); absent: never shared */
  shareId?: string
  /** the last of the shared record's asked changes this replica applied or made */
  appliedSeq: number
  /** the tools the shared record says the running version has (for a call that finds none here) */
  sharedTools?: string[]
}

/** A run's result for the model: its outcome, and what went wrong when it did not start. */
export type RunAnswer =
  | { outcome: 'running'; version: DynamicVersion; from?: number; tools: string[]; heard?: Heard }
  | { outcome: 'rejected' | 'failed'; version: DynamicVersion; reason: string; code?: string }

const MAX_DIAGNOSTICS = 20

export class Repository {
  readonly hooks = defineHooks('repository', {
    /** what a session's model can use changed (see RepositoryChange) */
    change: new SyncHook<[RepositoryChange]>(['change']),
  })
  /** session → name → plugin */
  readonly #sessions = new Map<string, Map<string, Record_>>()
  /** `s<n>` → session */
  readonly #tags = new Map<string, string>()
  #nextTag = 0
  /** `<session>\0<name>` → the end of that plugin's pending defines */
  readonly #defining = new Map<string, Promise<void>>()
  /** set while this plugin lists tools for itself: its visibility filter lets everything through */
  unfiltered = false
  /** the other replicas, while the composition has a shared store (replicas.ts) */
  replicas?: Replicas

  constructor(
    readonly ctx: InjectedContext<['runtime']>,
    readonly limits: Limits,
  ) {}

  /** The session a child instance key belongs to (`repository/s1/weather/…`), if it is one of ours. */
  sessionOfOwner(owner: string | undefined): string | undefined {
    const prefix = `${this.ctx.key}/`
    if (!owner?.startsWith(prefix)) return undefined
    return this.#tags.get(owner.slice(prefix.length).split('/')[0]!)
  }

  /**
   * A session's plugins are seen from its own scope and from the subagents it spawned
   * (`<session>/spawn-<n>`, their subagents too) only: not from other scopes whose key merely
   * starts with it, such as an MCP gateway view's sessions under the view's stateless scope.
   */
  static sees(scope: string, session: string): boolean {
    if (scope === session) return true
    if (!scope.startsWith(`${session}/`)) return false
    return scope
      .slice(session.length + 1)
      .split('/')
      .every((part) => /^spawn-\d+$/.test(part))
  }

  find(scope: string, name: string): Record_ | undefined {
    for (const [session, plugins] of this.#sessions)
      if (Repository.sees(scope, session) && plugins.has(name)) return plugins.get(name)
    return undefined
  }

  /** The plugin `name` of exactly `session` (not of a session it sees, nor one that sees it). */
  ofSession(session: string, name: string): Record_ | undefined {
    return this.#sessions.get(session)?.get(name)
  }

  list(scope?: string): Record_[] {
    return [...this.#sessions]
      .filter(([session]) => scope === undefined || Repository.sees(scope, session))
      .flatMap(([, plugins]) => [...plugins.values()])
  }

  /**
   * Checks and stores a new immutable version; runs nothing. The defines of one plugin run one at
   * a time (apart from its runs, which may wait minutes for a person), so each takes its own number.
   */
  define(scope: string, input: DefineInput, by: string): Promise<DynamicVersion> {
    const key = `${this.find(scope, input.name)?.session ?? scope}\0${input.name}`
    const next = (this.#defining.get(key) ?? Promise.resolve()).then(() =>
      this.#define(scope, input, by),
    )
    const tail = next.then(
      () => {},
      () => {},
    )
    this.#defining.set(key, tail)
    void tail.then(() => this.#defining.get(key) === tail && this.#defining.delete(key))
    return next
  }

  /**
   * With other replicas, the number is shared: the record is read first, and a number another
   * replica took meanwhile is given up for the next (the source is checked again: it is cheap
   * beside a race that silently forks a plugin's history).
   */
  async #define(scope: string, input: DefineInput, by: string): Promise<DynamicVersion> {
    for (let attempt = 1; ; attempt++) {
      await this.replicas?.pullScope(scope)
      const existing = this.find(scope, input.name)
      const version = await this.#check(scope, input, existing)
      const shareId = existing ? existing.shareId : this.replicas && randomUUID()
      const shared =
        this.replicas && shareId
          ? await this.replicas.defined({ ...version, shareId, purpose: input.purpose }, version)
          : 'alone'
      if (shared === 'conflict') {
        if (attempt < 5) continue
        throw new SourceProblem(
          `${input.name}@${version.version}`,
          'other replicas kept defining this plugin at the same time; define it again',
        )
      }
      const record = existing ?? this.create(version.session, input.name, input.purpose, shareId)
      record.versions.push(version)
      record.runnable.set(version.version, await this.#runnable(version))
      record.purpose = input.purpose
      this.#emit({
        action: 'define',
        name: record.name,
        session: version.session,
        to: version.id,
        by,
      })
      return version
    }
  }

  /** Checks a new version's source (SourceProblem names the line) and makes its immutable record. */
  async #check(
    scope: string,
    input: DefineInput,
    existing: Record_ | undefined,
  ): Promise<DynamicVersion> {
    const kind = input.kind ?? 'module'
    const language = kind === 'fragment' ? 'yaml' : (input.language ?? 'javascript')
    const n = (existing?.versions.length ?? 0) + 1
    const file = `${input.name}@${n}.${kind === 'fragment' ? 'yaml' : language === 'typescript' ? 'ts' : 'mjs'}`
    if (kind === 'fragment' && input.config && Object.keys(input.config).length)
      throw new SourceProblem(
        file,
        'a fragment carries its instances’ config itself; leave config out',
      )
    const runnable =
      kind === 'fragment'
        ? await checkFragment(file, input.source)
        : await checkModule(file, input.source, language === 'typescript', input.config)
    const config = kind === 'fragment' ? {} : (runnable as { config: unknown }).config
    const hash = `sha256:${createHash('sha256')
      .update(JSON.stringify([kind, language, input.source, config]))
      .digest('hex')}`
    const version: DynamicVersion = Object.freeze({
      id: `repo:${input.name}@${n}`,
      name: input.name,
      version: n,
      hash,
      kind,
      language,
      purpose: input.purpose,
      source: input.source,
      config,
      session: existing?.session ?? scope,
      notes: Object.freeze([]),
    })
    this.#checked.set(version, runnable)
    return version
  }

  /** what #check made runnable of each version it made, until it is stored */
  readonly #checked = new WeakMap<DynamicVersion, unknown>()

  async #runnable(version: DynamicVersion): Promise<unknown> {
    const made = this.#checked.get(version)
    if (made !== undefined) return made
    const file = `${version.name}@${version.version}`
    return version.kind === 'fragment'
      ? checkFragment(`${file}.yaml`, version.source)
      : checkModule(
          `${file}.mjs`,
          version.source,
          version.language === 'typescript',
          version.config as never,
        )
  }

  /**
   * A version another replica defined, checked here as define checks it (a source that does not
   * check here, say from another yoke version, is refused naming it); `adopt` adds it.
   */
  async adoptable(
    session: string,
    shared: SharedPlugin['versions'][number],
  ): Promise<{ version: DynamicVersion; runnable: unknown }> {
    const version: DynamicVersion = Object.freeze({
      ...shared,
      session,
      notes: Object.freeze([]),
    })
    return { version, runnable: await this.#runnable(version) }
  }

  adopt(record: Record_, { version, runnable }: { version: DynamicVersion; runnable: unknown }) {
    if (version.version !== record.versions.length + 1)
      throw new Error(
        `version ${version.version} came out of order (${record.versions.length} here)`,
      )
    record.versions.push(version)
    record.runnable.set(version.version, runnable)
  }

  /**
   * Asks for approval to run version `n` from `scope`, unless it was granted there before. Not
   * serialised with the plugin's runs and stops, and asked before the run call's body (tools.ts):
   * a run waiting for a person holds nothing others need. A stop meanwhile wins (see run).
   */
  async approve(
    record: Record_,
    n: number,
    scope: string,
    ask: (v: DynamicVersion) => Promise<string | undefined>,
  ): Promise<RunDecision> {
    const since = record.stopSeq
    const grant = `${scope}\0${n}`
    if (record.approved.has(grant)) return { since }
    const refusal = await ask(record.versions[n - 1]!)
    if (refusal !== undefined) return { refusal, since }
    record.approved.add(grant)
    await this.replicas?.approved(record, grant)
    return { since }
  }

  /**
   * Activates a version approved from `scope` (approve, before); see the module header for what a
   * failure leaves. A stop of this plugin (of this version, or of whatever runs) asked while the
   * approval was pending keeps it from starting: a stop is not held back by a person's answer.
   */
  run(
    record: Record_,
    n: number,
    scope: string,
    by: string,
    decided?: RunDecision,
    share = true,
  ): Promise<RunAnswer> {
    return this.#serial(record, async () => {
      const version = record.versions[n - 1]!
      const refused = runRefusal(record, n, scope, decided)
      if (refused) {
        record.lastRun = { version: n, ...refused }
        return { ...refused, version }
      }
      const plugin =
        version.kind === 'fragment'
          ? fragmentPlugin(version, record.runnable.get(n) as never, this.limits)
          : modulePlugin(version, record.runnable.get(n) as never, this.limits, {
              diagnose: (line) => this.#diagnose(record, line),
              died: (child, reason) => this.#died(record, child, reason, by),
            })
      const child = this.ctx.plugin(plugin, version.config, { key: `${record.tag}/${record.name}` })
      // its start is bounded by initTimeoutMs, and ending a worker that passed it by about 4 s more
      await settle(child.fiber, this.limits.initTimeoutMs + 10_000)
      if (child.fiber.state !== 'active') {
        const error = child.fiber.error
        const reason = error?.message ?? `it is ${child.fiber.state}`
        await child()
        record.lastRun = { version: n, outcome: 'failed', reason }
        this.#diagnose(record, `${version.id} did not start: ${reason}`)
        return { outcome: 'failed', version, reason, ...codeOf(error) }
      }
      const old = record.child
      const { action, from } = activation(record, n)
      record.child = child
      record.current = n
      record.state = 'running'
      record.lastRun = { version: n, outcome: 'running' }
      await old?.()
      record.tools = new Set(this.#toolsOf(child.fiber))
      const tools = [...record.tools]
      const heard = share
        ? await this.replicas?.changed(
            record,
            { state: 'running', version: n, scope, tools },
            this.#answerMs,
          )
        : undefined
      this.#emit({
        action,
        name: record.name,
        session: record.session,
        ...(from !== undefined ? { from: `repo:${record.name}@${from}` } : {}),
        to: version.id,
        by,
      })
      return {
        outcome: 'running',
        version,
        ...(from !== undefined ? { from } : {}),
        tools,
        ...(heard ? { heard } : {}),
      }
    })
  }

  /**
   * Stops the running version (with `version`: only if it is that one); the versions and the
   * current pointer stay. `why` comes with a stop from outside the session (the service's stop),
   * for the model and the audit line to read.
   */
  stop(
    record: Record_,
    by: string,
    why?: string,
    version?: number,
    share = true,
  ): Promise<{ stopped: boolean; heard?: Heard }> {
    record.stops.push({
      seq: ++record.stopSeq,
      by,
      ...(version !== undefined && { version }),
      ...(why !== undefined && { why }),
    })
    if (record.stops.length > MAX_DIAGNOSTICS) record.stops.shift()
    return this.#serial(record, async () => {
      // it may run on other replicas though not here (it failed here, or did not start here)
      const elsewhere =
        share && this.replicas && (record.child || record.state === 'failed' || record.sharedTools)
      record.sharedTools = undefined
      const heard = elsewhere
        ? await this.replicas!.changed(
            record,
            {
              state: 'stopped',
              stop: { version: record.current!, by, ...(why !== undefined ? { why } : {}) },
            },
            this.#answerMs,
          )
        : undefined
      if (!record.child || (version !== undefined && record.current !== version))
        return { stopped: false, ...(heard ? { heard } : {}) }
      const child = record.child
      record.child = undefined
      record.tools.clear()
      record.state = 'stopped'
      record.lastStop = { version: record.current!, by, ...(why !== undefined ? { why } : {}) }
      await child()
      this.#emit({
        action: 'stop',
        name: record.name,
        session: record.session,
        from: `repo:${record.name}@${record.current}`,
        by,
        ...(why !== undefined ? { why } : {}),
      })
      return { stopped: true, ...(heard ? { heard } : {}) }
    })
  }

  /** Stops it and forgets it with every version. */
  undefine(
    record: Record_,
    by: string,
    forget: (v: DynamicVersion) => void,
    share = true,
  ): Promise<Heard | undefined> {
    return this.#serial(record, async () => {
      const child = record.child
      record.child = undefined
      await child?.()
      if (this.#sessions.get(record.session)?.get(record.name) !== record) return undefined
      this.#sessions.get(record.session)?.delete(record.name)
      const heard = share ? await this.replicas?.undefined(record, this.#answerMs) : undefined
      record.versions.forEach(forget)
      this.#emit({
        action: 'undefine',
        name: record.name,
        session: record.session,
        ...(child ? { from: `repo:${record.name}@${record.current}` } : {}),
        by,
      })
      return heard
    })
  }

  /** How long a change waits for the other replicas to apply it: a version's start, and a margin. */
  get #answerMs() {
    return this.limits.initTimeoutMs + ACK_MARGIN_MS
  }

  /** The `repository` service: every session's versions and plugins, the stop from outside, the changes. */
  service(): RepositoryApi {
    return {
      versions: () => this.list().flatMap((r) => r.versions),
      plugins: (session) => this.list(session).map((r) => this.info(r)),
      stop: async (session, name, why, by = 'service', version) => {
        const record = this.ofSession(session, name)
        return record ? (await this.stop(record, by, why, version)).stopped : false
      },
      hooks: this.hooks,
    }
  }

  info(record: Record_): DynamicPluginInfo {
    return {
      name: record.name,
      session: record.session,
      purpose: record.purpose,
      state: record.state,
      ...(record.current !== undefined ? { current: record.current } : {}),
      versions: [...record.versions],
      tools: [...record.tools].sort(),
      ...(record.lastRun ? { lastRun: record.lastRun } : {}),
      ...(record.lastStop ? { lastStop: record.lastStop } : {}),
      diagnostics: [...record.diagnostics],
    }
  }

  /** A new plugin record of `session` (define, or a plugin another replica defined). */
  create(session: string, name: string, purpose: string, shareId?: string): Record_ {
    let plugins = this.#sessions.get(session)
    let tag = [...this.#tags].find(([, s]) => s === session)?.[0]
    if (!tag) this.#tags.set((tag = `s${++this.#nextTag}`), session)
    if (!plugins) this.#sessions.set(session, (plugins = new Map()))
    const record: Record_ = {
      name,
      session,
      tag,
      purpose,
      versions: [],
      runnable: new Map(),
      approved: new Set(),
      state: 'defined',
      tools: new Set(),
      diagnostics: [],
      queue: Promise.resolve(),
      stops: [],
      stopSeq: 0,
      appliedSeq: 0,
      ...(shareId !== undefined ? { shareId } : {}),
    }
    plugins.set(name, record)
    return record
  }

  /** The tools a child instance (and its children) registered, whichever session sees them. */
  #toolsOf(fiber: FiberInfo): string[] {
    const prefix = fiber.key
    this.unfiltered = true
    try {
      return this.ctx.runtime
        .list()
        .filter((t) => t.owner === prefix || t.owner.startsWith(`${prefix}/`))
        .map((t) => t.name)
    } finally {
      this.unfiltered = false
    }
  }

  #diagnose(record: Record_, line: string) {
    record.diagnostics.push(line)
    if (record.diagnostics.length > MAX_DIAGNOSTICS) record.diagnostics.shift()
  }

  /** The running version's worker ended by itself: its tools go, the current pointer stays. */
  #died(record: Record_, child: FiberInfo, reason: string, by: string) {
    if (record.child?.fiber !== child) return
    this.#diagnose(record, `repo:${record.name}@${record.current} stopped: ${reason}`)
    const handle = record.child
    record.child = undefined
    record.tools.clear()
    record.state = 'failed'
    void handle()
    this.#emit({
      action: 'failed',
      name: record.name,
      session: record.session,
      from: `repo:${record.name}@${record.current}`,
      by,
    })
  }

  #emit(change: RepositoryChange) {
    notify(this.hooks.change, [change], (message) => this.ctx.logger.warn(message))
  }

  #serial<T>(record: Record_, fn: () => Promise<T>): Promise<T> {
    const next = record.queue.then(fn, fn)
    record.queue = next.catch(() => {})
    return next
  }
}

/** A repository code the start failed with (the tool cap), wherever the kernel wrapped it. */
function codeOf(error: unknown): { code?: string } {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as never)
    if (typeof e.code === 'string' && e.code.startsWith('REPOSITORY_')) return { code: e.code }
  return {}
}

/** Waits until a child fiber has loaded (active, failed or disposed), or `ms` passed. */
async function settle(fiber: FiberInfo, ms: number): Promise<void> {
  const deadline = performance.now() + ms
  while (performance.now() < deadline) {
    await new Promise((resolve) => setImmediate(resolve))
    if (fiber.busy) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        fiber.settled(),
        new Promise((r) => (timer = setTimeout(r, deadline - performance.now()))),
      ])
      clearTimeout(timer)
    } else if (fiber.state !== 'pending') return
  }
}
