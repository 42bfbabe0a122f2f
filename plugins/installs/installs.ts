/**
 * One running installs instance: the locks it reads (its scopes), what it found in them (states),
 * and what it handed to which service (registrations). `apply` builds it, registers its close and
 * starts it; what becomes of one lock entry is `decide`, a pure function the tests call alone.
 */
import { join, sep } from 'node:path'
import {
  messageOf,
  settledWithin,
  YokeError,
  definePlugin,
  type ChildHandle,
  type FiberInfo,
  type InjectedContext,
  type TrustVerdict,
} from 'yoke'
import type { InstallKind, InstallsApi, InstallState, LockEntry } from './api.ts'
import { verify } from './install.ts'
import { problemText, readLock, type Scope } from './lock.ts'
import { isCache } from './tree.ts'

export type InstallsContext = InjectedContext<['project']>

type Register = (dir: string, options: { source: string }) => () => void

/** The kinds whose install runs programs (a package's executable, a plugin's hooks and servers). */
const RUNS_CODE: ReadonlySet<InstallKind> = new Set(['exec-package', 'claude-plugin'])

/**
 * The service each kind goes to, and its method that takes the install's folder: a folder of
 * skills, a folder of packages, a plugin's folder (install.ts lays each out so).
 */
const TARGETS: Record<InstallKind, Array<{ service: string; method: string }>> = {
  skill: [{ service: 'skills', method: 'addRoot' }],
  skills: [{ service: 'skills', method: 'addRoot' }],
  'exec-package': [{ service: 'execTools', method: 'addRoot' }],
  'claude-plugin': [{ service: 'claudePlugins', method: 'add' }],
}
const SERVICES = new Set(Object.values(TARGETS).flatMap((ts) => ts.map((t) => t.service)))

/** How long a first load waits for the services it hands installs to, and for what they load. */
const SETTLE_MS = 30_000

/** What `verify` said of an installed tree. */
export interface Checked {
  ok: boolean
  missing?: boolean
  why?: string
}

/**
 * What becomes of one lock entry, decided without a kernel: `shadowed` when an install of the
 * same name was taken before it (the project's wins), `waiting` for a project install that runs
 * code in a project not trusted (the user's own run meanwhile), `missing` or `tampered` when its
 * tree does not check, else `registered` (its service may still skip it). `takesName`: whether
 * it takes its name from a later scope's install of the same name.
 */
export function decide(
  entry: Pick<LockEntry, 'name' | 'kind'>,
  checked: Checked,
  at: { scope: Scope['name']; taken: boolean; verdict: TrustVerdict; projectDir: string },
): { state: InstallState['state']; why?: string; takesName: boolean } {
  if (at.taken)
    return {
      state: 'shadowed',
      why: `a project install named ${entry.name} is used instead`,
      takesName: true,
    }
  if (checked.ok && at.verdict !== true && at.scope === 'project' && RUNS_CODE.has(entry.kind))
    return { state: 'waiting', why: waitingWhy(at.verdict, at.projectDir), takesName: false }
  if (!checked.ok)
    return { state: checked.missing ? 'missing' : 'tampered', why: checked.why, takesName: true }
  return { state: 'registered', takesName: true }
}

/** Why a project install waits, and what to do: as a waiting instance says it. */
export const waitingWhy = (verdict: string, dir: string) =>
  `${verdict}, and it runs the project's code: review yoke.lock, then run \`yoke trust\` in ${dir} (--trust or YOKE_TRUST=1 trusts one run)`

export class Installs {
  /** what each lock entry became at the last verification, project scope first */
  private states: InstallState[] = []
  /** live registrations by `name:service`, with what they were made for */
  private readonly registered = new Map<string, { key: string; dispose: () => void }>()
  /** a number per service object, so that a replaced service is registered with again */
  private readonly serviceIds = new WeakMap<object, number>()
  private nextServiceId = 1
  /** the skipped kinds warned of already */
  private readonly warned = new Set<string>()
  /** the lock problems said already: each is said once, again only after it was fixed */
  private said = new Set<string>()
  /** the trust verdict the states were decided with */
  private verdict: TrustVerdict
  /** the last "project installs wait for trust" line, so it is said once per change */
  private waitNote = ''
  /** each waiting install's pending stand-in child, with the why it shows */
  private readonly standIns = new Map<string, { why: string; child: ChildHandle }>()
  /** every verification runs after the one before: a watch event never interleaves with another */
  private chain: Promise<void> = Promise.resolve()
  /** a registration pass is queued for a provider's state change */
  private queued = false

  constructor(
    private readonly ctx: InstallsContext,
    /** the locks read: the project's, then the user's */
    readonly scopes: Scope[],
  ) {
    this.verdict = this.trusted()
  }

  private trusted(): TrustVerdict {
    return this.ctx.project.trusted?.() ?? true
  }

  /** The service: the locks and a copy of each install's state. */
  api(): InstallsApi {
    return { locks: this.scopes.map((s) => s.lock), list: () => this.list() }
  }

  list(): InstallState[] {
    return this.states.map((s) => ({ ...s }))
  }

  /**
   * Verifies, provides the service, follows the providers and the files; a first load hands the
   * installs over before it is done, so that a one-shot command sees their tools: the providers
   * that are starting are waited for, then what they load for the installs.
   */
  async start(watch: boolean): Promise<void> {
    await this.enqueue(() => this.verifyAll())
    this.ctx.provide('installs', this.api())
    this.ctx.tap(this.ctx.hooks.state, 'installs', (fiber) => this.providerChanged(fiber))
    if (watch) this.watch()
    this.ctx.control('installs/summary', () => this.summary())
    this.ctx.control('installs/list', () => ({
      locks: this.scopes.map((s) => s.lock),
      installs: this.states,
    }))
    const starting = this.providers().filter((f) => f.busy)
    await settledWithin(Promise.all(starting.map((f) => f.settled())), SETTLE_MS)
    await this.enqueue(() => void (this.ctx.signal.aborted || this.registerAll()))
    await settledWithin(this.loadsFor(this.providers()), SETTLE_MS)
  }

  /**
   * Drops what it holds: the stand-ins and registrations themselves are the context's children and
   * effects, which end with the instance.
   */
  close(): void {
    this.standIns.clear()
    this.registered.clear()
    this.states = []
  }

  /** The dev screen's and `yoke doctor`'s section (`installs/summary`). */
  summary() {
    if (!this.states.length) return undefined
    const loaded = this.states.filter((s) => s.state === 'registered').length
    return {
      title: 'installs',
      note: `${loaded} of ${this.states.length} loaded`,
      rows: this.states.map((s): [string, string] => [
        s.entry.name,
        `${s.state}${s.entry.version ? ` · ${s.entry.version}` : ''} · ${s.entry.kind}${s.scope === 'user' ? ' · user' : ''}`,
      ]),
    }
  }

  /** Runs `step` after every step before it; a failure is logged, never thrown. */
  private enqueue(step: () => void | Promise<void>): Promise<void> {
    return (this.chain = this.chain
      .then(step)
      .catch((err) =>
        this.ctx.logger.error(`verifying the installs failed: ${messageOf(err)}`, err),
      ))
  }

  /** Verifies and registers again (a lock, a tree or the trust store changed). */
  refresh(): Promise<void> {
    return this.enqueue(async () => {
      await this.verifyAll()
      if (!this.ctx.signal.aborted) this.registerAll()
    })
  }

  /** A lock's entries, its problems said once each; undefined when the lock does not read. */
  private entriesOf(scope: Scope, saying: Set<string>): LockEntry[] | undefined {
    try {
      const lock = readLock(scope.lock)
      for (const problem of lock.problems) {
        const line = problemText(problem)
        saying.add(line)
        if (!this.said.has(line))
          this.ctx.logger.warn(
            `${line}; the other entries load: fix it, \`yoke remove ${problem.key}\`, or \`yoke add SOURCE --force\``,
          )
      }
      return Object.values(lock.installs)
    } catch (err) {
      this.ctx.logger.error(`${scope.lock} is not read: its installs are not loaded`, err)
      return undefined
    }
  }

  /** Reads the locks and hashes every tree again (one install at a time, streamed). */
  async verifyAll(): Promise<void> {
    this.verdict = this.trusted()
    const taken = new Set<string>()
    const next: InstallState[] = []
    const saying = new Set<string>()
    for (const scope of this.scopes) {
      for (const entry of this.entriesOf(scope, saying) ?? []) {
        if (this.ctx.signal.aborted) return
        const checked = await verify(entry, scope)
        const { state, why, takesName } = decide(entry, checked, {
          scope: scope.name,
          taken: taken.has(entry.name),
          verdict: this.verdict,
          projectDir: this.ctx.project.dir,
        })
        if (state === 'missing' || state === 'tampered') {
          const code = state === 'missing' ? 'INSTALL_FAILED' : 'INSTALL_TAMPERED'
          const error = new YokeError(code, { reason: why }, { file: scope.lock })
          this.ctx.logger.error(why!, error)
        }
        if (takesName) taken.add(entry.name)
        next.push({ entry, scope: scope.name, dir: checked.dir, state, ...(why ? { why } : {}) })
      }
    }
    this.said = saying
    this.states = next
    this.noteWaiting()
    this.showWaiting()
  }

  /** Says once which project installs wait for trust, and why. */
  private noteWaiting() {
    const waiting = this.states.filter((s) => s.state === 'waiting').map((s) => s.entry.name)
    const note =
      waiting.length && this.verdict !== true
        ? `${waiting.join(', ')}: ${waitingWhy(this.verdict, this.ctx.project.dir)}`
        : ''
    if (note && note !== this.waitNote)
      this.ctx.logger.warn(`project installs wait for trust: ${note}`)
    this.waitNote = note
  }

  /** Each waiting install shows as a pending child (`yoke inspect`), saying why, naming `yoke trust`. */
  private showWaiting() {
    const now = new Map(
      this.states.filter((s) => s.state === 'waiting').map((s) => [s.entry.name, s] as const),
    )
    for (const [name, { why, child }] of this.standIns)
      if (now.get(name)?.why !== why) {
        this.standIns.delete(name)
        void child()
      }
    for (const [name, s] of now)
      if (!this.standIns.has(name) && !this.ctx.signal.aborted) {
        const standIn = waitingInstall(
          `${this.ctx.key}/${name}`,
          s,
          this.verdict,
          this.ctx.project.dir,
        )
        const child = this.ctx.plugin(standIn, {}, { key: name })
        this.standIns.set(name, { why: s.why!, child })
      }
  }

  /** Hands each verified install to its service (again, when that service was replaced). */
  registerAll(): void {
    const wanted = new Set<string>()
    for (const s of this.states) {
      if (s.state !== 'registered' && s.state !== 'skipped') continue
      const missing = TARGETS[s.entry.kind].flatMap((target) =>
        this.registerWith(s, target, wanted),
      )
      s.state = missing.length ? 'skipped' : 'registered'
      if (missing.length) this.skipped(s, missing)
      else delete s.why
    }
    for (const [slot, r] of this.registered)
      if (!wanted.has(slot)) {
        r.dispose()
        this.registered.delete(slot)
      }
  }

  /** Registers one install with one service; what is missing for it (none: done or kept). */
  private registerWith(
    s: InstallState,
    target: { service: string; method: string },
    wanted: Set<string>,
  ): string[] {
    const service = this.ctx.get(target.service) as Record<string, unknown> | undefined
    const method = service?.[target.method]
    if (!service || typeof method !== 'function')
      return [
        service
          ? `the ${target.service} service has no ${target.method}()`
          : `no ${target.service} service`,
      ]
    if (!this.serviceIds.has(service)) this.serviceIds.set(service, this.nextServiceId++)
    const slot = `${s.entry.name}:${target.service}`
    const key = `${this.serviceIds.get(service)}:${s.dir}:${s.entry.sha256}`
    wanted.add(slot)
    if (this.registered.get(slot)?.key === key) return []
    this.registered.get(slot)?.dispose()
    try {
      const source = `install ${s.entry.name} (${s.scope})`
      const undo = (method as Register).call(service, s.dir, { source })
      const label = `install ${s.entry.name} → ${target.service}`
      this.registered.set(slot, { key, dispose: this.ctx.effect(label, () => undo()) })
    } catch (err) {
      this.registered.delete(slot)
      this.ctx.logger.error(
        `install ${s.entry.name}: ${target.service}.${target.method}() refused ${s.dir}`,
        err,
      )
    }
    return []
  }

  /**
   * Why an install is skipped. An instance that provides the service but is not active (starting,
   * waiting itself, or going at shutdown) is no news: the install registers when one is active;
   * only a composition without one is warned of (a failed provider reports itself).
   */
  private skipped(s: InstallState, missing: string[]) {
    const coming = TARGETS[s.entry.kind]
      .map((t) => this.ctx.instances().find((f) => f.plugin.provides.includes(t.service)))
      .filter((f) => f !== undefined)
    s.why = coming.length
      ? `it waits for ${coming.map((f) => `${f.label} (${f.state})`).join(', ')}`
      : `${missing.join('; ')}: add the plugin that provides it to the preset`
    const note = `${s.entry.kind}:${missing.join()}`
    if (!coming.length && !this.warned.has(note)) {
      this.warned.add(note)
      this.ctx.logger.warn(
        `installs of kind ${s.entry.kind} (${s.entry.name}, …) are skipped: ${s.why}`,
      )
    }
  }

  /** A service provider that starts, restarts or goes: register with the one there is now. */
  private providerChanged(fiber: FiberInfo) {
    if (this.queued || fiber.key === this.ctx.key || this.ctx.signal.aborted) return
    this.queued = true
    queueMicrotask(() => {
      this.queued = false
      if (!this.ctx.signal.aborted) void this.chain.then(() => this.registerAll())
    })
  }

  /** The instances that provide a service installs go to. */
  private providers(): FiberInfo[] {
    return this.ctx
      .instances()
      .filter((f) => f.key !== this.ctx.key && f.plugin.provides.some((name) => SERVICES.has(name)))
  }

  /** Follows the locks, the installed trees and the trust store (`yoke trust`, `--revoke`). */
  private watch() {
    const store = join(this.ctx.project.home, 'trust.json')
    const files = [...this.scopes.flatMap((s) => [s.lock, s.installed]), store]
    this.ctx.watch(
      files,
      (changes) => {
        if (changes.every((c) => transient(c.path) || cache(c.path))) return
        const sameTrust = JSON.stringify(this.trusted()) === JSON.stringify(this.verdict)
        if (sameTrust && changes.every((c) => c.path === store)) return
        void this.refresh()
      },
      {
        ignored: (p) =>
          transient(p) || p.endsWith(`${sep}yoke.lock.lock`) || p.includes(`yoke.lock.lock${sep}`),
      },
    )
  }

  /**
   * What the providers are still loading for the installs just handed to them: exec-tools'
   * package loads (`execTools.settled()`), and the child instances a provider is starting (a
   * Claude Code plugin's folder).
   */
  private async loadsFor(providers: readonly FiberInfo[]): Promise<void> {
    const exec = this.ctx.get('execTools') as { settled?: () => Promise<void> } | undefined
    await exec?.settled?.()
    const mine = new Set(providers)
    const children = this.ctx.instances().filter((f) => f.busy && f.parent && mine.has(f.parent))
    await Promise.all(children.map((f) => f.settled()))
  }
}

/** A file being staged or removed by `yoke add`/`remove`: not a change yet. */
const transient = (p: string) => /[/\\]\.(staging|removing)-/.test(p)

/** A run-time cache a plugin writes into its folder (tree.ts isCache): not a change. */
function cache(p: string) {
  const parts = p.split(/[/\\]/)
  const tail = parts.slice(-2).join('/')
  return (
    isCache(tail, false) ||
    parts.at(-1) === '__pycache__' ||
    parts.some((part, i) => part === '.cache' && parts[i - 1] === 'node_modules')
  )
}

/** The stand-in of a waiting install: pending with PLUGIN_WAITING, as a waiting instance is. */
const waitingInstall = (instance: string, s: InstallState, verdict: TrustVerdict, dir: string) =>
  definePlugin({
    name: 'install',
    apply() {
      throw new YokeError('PLUGIN_WAITING', {
        instance,
        reason: `${verdict}, and the install ${s.entry.name} (${s.entry.kind}, yoke.lock) runs the project's code`,
        what: `review yoke.lock, then run \`yoke trust\` in ${dir} (a running yoke dev starts it then); --trust or YOKE_TRUST=1 trusts one run`,
      })
    },
  })
