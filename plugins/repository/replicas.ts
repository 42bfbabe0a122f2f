/**
 * @module repository/replicas
 * A session's dynamic plugins on every replica of a gateway (issue 31): with a shared store (the
 * `store` service on an engine other than `memory`), what the sessions did — each plugin's
 * versions (their sources), the approvals given, and the last run, stop or undefine asked — is kept
 * in the store, one record per session (`repo:session:<session>`), and every replica applies it to
 * its own workers. So a caller's plugin defined on one replica is listed, run, called, updated,
 * stopped and undefined through any other, and a replica that starts later runs what runs.
 *
 * How a change travels: the replica where it happens writes the session's record (compare-and-set,
 * re-read on a race), then publishes the session's name on `repo:changes`; each other replica reads
 * the record, applies it (checking each new version's source as define does, starting or stopping
 * workers) and answers with its plugin's state. A run, stop or undefine waits for those answers
 * (bounded: the version's start, initTimeoutMs, plus ACK_MARGIN_MS), so the caller's next request
 * finds it applied wherever it lands; the answer names a replica where it did not start. Before
 * each repository tool call the replica reads its caller's session records (a message it missed
 * while the store was away is made up for there), and at joining it applies every session's.
 *
 * A definition's number is shared: define reads the record first and writes the new version only
 * if nobody wrote one meanwhile (else it reads again and takes the next number). Versions are
 * immutable, so applying one is adding what is missing; a replica whose versions differ from the
 * record's (defined while the store was away) keeps its own and says so. Records expire
 * `sharedTtlMs` after their last change, as a session's plugins would end with its process.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import { YokeError, type InjectedContext, type Logger } from 'yoke'
import type { Store, Unsubscribe } from '../store/api.ts'
import type { DynamicVersion, StopRecord } from './api.ts'
import { SourceProblem } from './check.ts'
import type { Record_, Repository } from './repository.ts'

/** beyond a version's start (initTimeoutMs), how long a change waits for the other replicas' answers */
export const ACK_MARGIN_MS = 5_000
/** the most sessions the index lists (the oldest goes first) */
const MAX_SESSIONS = 10_000
const CHANGES = 'repo:changes'
const SESSIONS = 'repo:sessions'
const sessionKey = (session: string) => `repo:session:${session}`

/** What was last asked of a plugin, numbered: a replica applies each number once. */
export interface Desired {
  seq: number
  state: 'defined' | 'running' | 'stopped'
  /** the version a run activated, and the scope its approval was given in */
  version?: number
  scope?: string
  /** the tools the running version registered where it started (what another replica expects) */
  tools?: string[]
  stop?: StopRecord
}

/** One plugin of a session, as the store keeps it. */
export interface SharedPlugin {
  /** new with each definition of the name (a name undefined and defined again is another plugin) */
  id: string
  purpose: string
  versions: Array<Omit<DynamicVersion, 'session' | 'notes'>>
  /** `<scope>\0<version>` approvals given */
  approved: string[]
  desired: Desired
}

export interface SharedSession {
  plugins: Record<string, SharedPlugin>
  /** ids of plugins undefined, newest last (a replica that still runs one ends it) */
  gone: string[]
}

/** What the other replicas answered to a change: each one's state of the plugin after it. */
export interface ReplicaAnswer {
  replica: string
  state: string
  reason?: string
}

/** The answers a change got, and how many replicas that heard it did not answer in time. */
export interface Heard {
  answers: ReplicaAnswer[]
  silent: number
}

interface ChangeMessage {
  session: string
  /** the plugin changed */
  name: string
  origin: string
  /** set when the origin waits for answers */
  change?: string
}

interface Waiting {
  needed: number
  answers: ReplicaAnswer[]
  done: () => void
}

/**
 * The repository's link to the other replicas through one store. State: the store, this
 * replica's id, the subscriptions, the changes waiting for answers, and per session the chain of
 * applications (one at a time, so a message and a pull never apply the same record twice at once).
 */
export class Replicas {
  /** this replica, as answers and warnings name it (YOKE_REPLICA_ID, else host-pid) and a suffix of this instance */
  readonly id = `${process.env.YOKE_REPLICA_ID?.trim() || `${hostname()}-${process.pid}`}/${randomUUID().slice(0, 6)}`
  readonly #subscriptions: Unsubscribe[] = []
  readonly #waiting = new Map<string, Waiting>()
  readonly #applying = new Map<string, Promise<void>>()
  /** warnings said once per kind while the store stays away */
  readonly #said = new Set<string>()

  constructor(
    readonly store: Store,
    private readonly repo: Repository,
    private readonly logger: Logger,
    private readonly forget: (v: DynamicVersion) => void,
    readonly ttlMs: number,
  ) {}

  /** Subscribes, then applies every session the store lists (a replica that starts later runs what runs). */
  async join(): Promise<void> {
    // each as it is made: a join that fails halfway is closed whole before it is tried again
    this.#subscriptions.push(
      await this.store.subscribe(CHANGES, (m) => void this.#heard(m as ChangeMessage)),
    )
    this.#subscriptions.push(
      await this.store.subscribe(`repo:answers:${this.id}`, (m) => this.#answered(m as never)),
    )
    const index = await this.store.get<string[]>(SESSIONS)
    for (const session of Array.isArray(index?.value) ? index.value : [])
      if (typeof session === 'string') await this.pull(session)
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#subscriptions.splice(0).map((u) => u()))
    for (const w of this.#waiting.values()) w.done()
  }

  /** Reads the sessions `scope` may see (its own, and those it was spawned from) and applies them. */
  async pullScope(scope: string): Promise<void> {
    const parts = scope.split('/')
    const sessions = [scope]
    while (parts.length > 1 && /^spawn-\d+$/.test(parts.at(-1)!)) {
      parts.pop()
      sessions.push(parts.join('/'))
    }
    for (const session of sessions) await this.pull(session)
  }

  /** Reads one session's record and applies it; a store that does not answer leaves what runs here. */
  pull(session: string): Promise<void> {
    return this.#inOrder(session, async () => {
      let shared
      try {
        shared = (await this.store.get<SharedSession>(sessionKey(session)))?.value
      } catch (err) {
        return this.#warnOnce(
          'read',
          `could not read session ${session}'s dynamic plugins from the shared store (${messageOf(err)}): this replica goes on with what it has`,
        )
      }
      this.#said.delete('read')
      if (shared) await this.#apply(session, shared)
    })
  }

  /**
   * Writes version `v` of a plugin as the session's next; `conflict` when another replica wrote
   * that number first (read again and retry), `alone` when the store did not answer (kept here only).
   */
  async defined(
    record: Pick<Record_, 'session' | 'name' | 'purpose'> & { shareId: string },
    v: DynamicVersion,
  ): Promise<'shared' | 'conflict' | 'alone'> {
    let conflict = false
    const written = await this.#write(record.session, (s) => {
      const p = (s.plugins[record.name] ??= {
        id: record.shareId,
        purpose: v.purpose,
        versions: [],
        approved: [],
        desired: { seq: 0, state: 'defined' },
      })
      if (p.id !== record.shareId || p.versions.length !== v.version - 1) return (conflict = true)
      const { session: _s, notes: _n, ...kept } = v
      p.versions.push(kept)
      p.purpose = v.purpose
      return false
    })
    return conflict ? 'conflict' : written ? 'shared' : 'alone'
  }

  /** An approval given here holds on every replica for the same scope. */
  async approved(record: Record_, grant: string): Promise<void> {
    await this.#write(record.session, (s) => {
      const p = s.plugins[record.name]
      if (p?.id !== record.shareId || p.approved.includes(grant)) return true
      p.approved.push(grant)
      return false
    })
  }

  /**
   * Asks the other replicas to do what was done here (a run of `desired.version`, a stop), and
   * waits for their answers; undefined when there are none to wait for or the store did not answer.
   */
  async changed(
    record: Record_,
    desired: Omit<Desired, 'seq'>,
    ms: number,
  ): Promise<Heard | undefined> {
    let seq = 0
    const written = await this.#write(record.session, (s) => {
      const p = s.plugins[record.name]
      if (p?.id !== record.shareId) return true
      p.desired = { ...desired, seq: (seq = p.desired.seq + 1) }
      return false
    })
    if (!written || !seq) return undefined
    record.appliedSeq = seq
    return this.#announce(record.session, record.name, ms)
  }

  /** A plugin undefined here ends on every replica. */
  async undefined(record: Record_, ms: number): Promise<Heard | undefined> {
    const written = await this.#write(record.session, (s) => {
      if (s.plugins[record.name]?.id === record.shareId) delete s.plugins[record.name]
      if (!record.shareId || s.gone.includes(record.shareId)) return !s.gone.length
      s.gone = [...s.gone, record.shareId].slice(-100)
      return false
    })
    return written ? this.#announce(record.session, record.name, ms) : undefined
  }

  /** Why `name` answers nothing here though the session's record says it runs: it did not start here. */
  whyAway(name: string, scope: string): YokeError | undefined {
    for (const record of this.repo.list(scope)) {
      if (record.state === 'running' || !record.sharedTools?.includes(name)) continue
      const reason =
        record.lastRun?.reason ?? record.diagnostics.at(-1) ?? `it is ${record.state} here`
      return new YokeError('REPOSITORY_NOT_HERE', {
        tool: name,
        id: `repo:${record.name}@${record.current ?? record.versions.length}`,
        replica: this.id,
        reason,
      })
    }
    return undefined
  }

  /** Publishes the change and waits (at most `ms`) for each other replica that heard it to answer. */
  async #announce(session: string, name: string, ms: number): Promise<Heard | undefined> {
    const change = randomUUID()
    const waiting: Waiting = { needed: Infinity, answers: [], done: () => {} }
    const over = new Promise<void>((resolve) => (waiting.done = resolve))
    this.#waiting.set(change, waiting)
    try {
      const heard = await this.store.publish(CHANGES, { session, name, origin: this.id, change })
      // every replica subscribes, this one included
      waiting.needed = heard - 1
      if (waiting.answers.length < waiting.needed) {
        const timer = setTimeout(waiting.done, ms)
        await over
        clearTimeout(timer)
      }
      const answers = [...waiting.answers]
      return { answers, silent: Math.max(0, waiting.needed - answers.length) }
    } catch (err) {
      this.#warnOnce(
        'publish',
        `a change of session ${session}'s dynamic plugins was stored but not announced (${messageOf(err)}): the other replicas apply it at their caller's next repository call`,
      )
      return undefined
    } finally {
      this.#waiting.delete(change)
    }
  }

  #answered(message: { change?: string } & Partial<ReplicaAnswer>) {
    const waiting = message.change ? this.#waiting.get(message.change) : undefined
    if (!waiting || typeof message.replica !== 'string') return
    waiting.answers.push({
      replica: message.replica,
      state: String(message.state),
      ...(typeof message.reason === 'string' ? { reason: message.reason } : {}),
    })
    if (waiting.answers.length >= waiting.needed) waiting.done()
  }

  async #heard(message: ChangeMessage): Promise<void> {
    if (!message || message.origin === this.id || typeof message.session !== 'string') return
    await this.pull(message.session)
    if (!message.change || typeof message.origin !== 'string') return
    const record = this.repo.ofSession(message.session, String(message.name))
    const failed = record?.lastRun?.outcome === 'failed' && record.state !== 'running'
    await this.store
      .publish(`repo:answers:${message.origin}`, {
        change: message.change,
        replica: this.id,
        state: record?.state ?? 'gone',
        ...(failed && record.lastRun?.reason ? { reason: record.lastRun.reason } : {}),
      })
      .catch(() => {}) // the origin stops waiting at its bound, and says the replica did not answer
  }

  /** Applies a session's record to what runs here. */
  async #apply(session: string, shared: SharedSession): Promise<void> {
    if (!shared || typeof shared.plugins !== 'object' || !Array.isArray(shared.gone))
      return this.logger.warn(
        `session ${session}'s dynamic plugins in the shared store are not a record this version reads: left as they run here`,
      )
    for (const record of this.repo.list(session))
      if (record.session === session && record.shareId && shared.gone.includes(record.shareId))
        await this.repo.undefine(record, `replica sync`, this.forget, false)
    for (const [name, plugin] of Object.entries(shared.plugins)) {
      try {
        await this.#applyPlugin(session, name, plugin)
      } catch (err) {
        this.logger.warn(
          `session ${session}'s dynamic plugin ${name} from the shared store was not applied here: ${messageOf(err)}`,
        )
      }
    }
  }

  async #applyPlugin(session: string, name: string, shared: SharedPlugin): Promise<void> {
    let record = this.repo.ofSession(session, name)
    if (record && record.shareId !== shared.id) {
      if (record.shareId === undefined)
        throw new Error(
          'a plugin of that name was defined here while the store was away; it keeps running here alone',
        )
      await this.repo.undefine(record, 'replica sync', this.forget, false)
      record = undefined
    }
    const have = record?.versions ?? []
    for (const [i, v] of have.entries())
      if (shared.versions[i] && shared.versions[i]!.hash !== v.hash)
        throw new Error(
          `its version ${i + 1} here (${v.hash.slice(0, 19)}) differs from the shared one (${shared.versions[i]!.hash.slice(0, 19)}): defined while the store was away`,
        )
    // every new version checks before any is added (a plugin none of whose versions check is not made here)
    const adopted = []
    for (const v of shared.versions.slice(have.length))
      adopted.push(await this.repo.adoptable(session, v))
    record ??= this.repo.create(session, name, shared.purpose, shared.id)
    for (const version of adopted) this.repo.adopt(record, version)
    for (const grant of shared.approved) record.approved.add(grant)
    const desired = shared.desired
    record.sharedTools = desired.state === 'running' ? desired.tools : undefined
    if (desired.seq <= record.appliedSeq) return
    record.appliedSeq = desired.seq
    if (desired.state === 'running' && desired.version && desired.scope !== undefined) {
      if (record.state !== 'running' || record.current !== desired.version)
        await this.repo.run(
          record,
          desired.version,
          desired.scope,
          'replica sync',
          undefined,
          false,
        )
    } else if (desired.state === 'stopped' && record.state === 'running')
      await this.repo.stop(
        record,
        desired.stop?.by ?? 'replica sync',
        desired.stop?.why,
        undefined,
        false,
      )
  }

  /**
   * Read-modify-write of a session's record under compare-and-set: `mutate` changes the value (or
   * returns true: nothing to write). False when the store did not answer (said once).
   */
  async #write(session: string, mutate: (s: SharedSession) => boolean): Promise<boolean> {
    try {
      for (let attempt = 0; attempt < 20; attempt++) {
        const current = await this.store.get<SharedSession>(sessionKey(session))
        const value: SharedSession = structuredClone(current?.value) ?? { plugins: {}, gone: [] }
        if (mutate(value)) return true
        const put = await this.store.put(sessionKey(session), value, {
          ifVersion: current?.version ?? null,
          ttlMs: this.ttlMs,
        })
        if (put.ok) {
          if (!current) await this.#index(session)
          this.#said.delete('write')
          return true
        }
      }
      throw new Error('20 writers raced for it')
    } catch (err) {
      this.#warnOnce(
        'write',
        `session ${session}'s dynamic plugins could not be shared with the other replicas (${messageOf(err)}): they run on this replica only until a later change is shared`,
      )
      return false
    }
  }

  /** Adds a session to the index a joining replica reads. */
  async #index(session: string): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const current = await this.store.get<string[]>(SESSIONS)
      const list = Array.isArray(current?.value) ? current.value : []
      if (list.includes(session)) return
      const put = await this.store.put(SESSIONS, [...list, session].slice(-MAX_SESSIONS), {
        ifVersion: current?.version ?? null,
        ttlMs: this.ttlMs,
      })
      if (put.ok) return
    }
  }

  #inOrder(session: string, fn: () => Promise<void>): Promise<void> {
    const next = (this.#applying.get(session) ?? Promise.resolve()).then(fn, fn)
    const tail = next.catch(() => {})
    this.#applying.set(session, tail)
    void tail.then(() => this.#applying.get(session) === tail && this.#applying.delete(session))
    return next
  }

  #warnOnce(kind: string, message: string) {
    if (this.#said.has(kind)) return
    this.#said.add(kind)
    this.logger.warn(message)
  }
}

/**
 * What the replicas' answers say for the model: how many others are as `expected` (`running`,
 * `stopped`: anything not running, `gone`), and each replica where it is not, with why.
 */
export function answersText(
  heard: Heard | undefined,
  expected: 'running' | 'stopped' | 'gone',
): string {
  if (!heard || (!heard.answers.length && !heard.silent)) return ''
  const { answers, silent } = heard
  const off = answers.filter((a) =>
    expected === 'stopped' ? a.state === 'running' : a.state !== expected,
  )
  const parts = [
    `${answers.length - off.length} other replica(s) ${expected === 'gone' ? 'forgot it' : `have it ${expected}`}`,
  ]
  for (const a of off)
    parts.push(`on replica ${a.replica} it is ${a.state}${a.reason ? `: ${a.reason}` : ''}`)
  if (silent)
    parts.push(
      `${silent} replica(s) did not answer in time (they apply it at their caller's next repository call)`,
    )
  return ` ${parts.join('; ')}.`
}

/** An error's message; a source's problem with where it is (`name@n.mjs:line:col`). */
const messageOf = (err: unknown) =>
  err instanceof SourceProblem
    ? `${err.where}: ${err.message}`
    : err instanceof Error
      ? err.message
      : String(err)

/** The store to share through, when the composition has one that other processes share. */
export function sharedStore(ctx: InjectedContext<[]>): Store | undefined {
  const store = ctx.get('store')
  return store && store.engine !== 'memory' ? store : undefined
}
