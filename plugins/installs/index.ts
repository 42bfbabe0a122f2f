/**
 * installs: what `yoke add` installed, verified and handed to the service for its kind. At load,
 * and whenever `yoke.lock` or an installed tree changes, every entry of the project's lock (and
 * of `$YOKE_HOME/yoke.lock`) is hashed again: a tree that no longer matches its sha256 is refused
 * with an error that names it, the lock and the fix, and the others still load. The good ones go
 * to `skills.addRoot` (skills), `execTools.addRoot` (exec packages) and `claudePlugins.add`
 * (Claude Code plugins). Those services are optional: a kind whose service is absent is skipped
 * with a warning, and registered as soon as an instance provides it (and again if it restarts).
 * The project's exec packages and Claude Code plugins run its code: they wait until the project is
 * trusted (`yoke trust`, whose hash covers yoke.lock), as the project's own config does; the
 * user's installs (`--user`) are the user's own, and skills run nothing.
 */
import { join, sep } from 'node:path'
import { z } from 'zod'
import {
  definePlugin,
  settledWithin,
  YokeError,
  type ChildHandle,
  type FiberInfo,
  type TrustVerdict,
} from 'yoke'
import type { InstallKind, InstallsApi, InstallState, LockEntry } from './api.ts'
import { verify } from './install.ts'
import { problemText, projectScope, readLock, userScope, type Scope } from './lock.ts'
import { isCache } from './tree.ts'
import './errors.ts'

export type * from './api.ts'

const config = z
  .object({
    /** also load the installs of $YOKE_HOME/yoke.lock (`yoke add --user`) */
    user: z.boolean().default(true),
    watch: z.boolean().default(true),
  })
  .strict()

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

export default definePlugin({
  name: 'installs',
  inject: ['project'],
  provides: ['installs'],
  config,
  async apply(ctx, cfg) {
    const scopes: Scope[] = [
      projectScope(ctx.project.dir),
      ...(cfg.user ? [userScope(ctx.project.home)] : []),
    ]
    let states: InstallState[] = []
    /** live registrations by `name:service`, with what they were made for */
    const registered = new Map<string, { key: string; dispose: () => void }>()
    const serviceIds = new WeakMap<object, number>()
    let nextServiceId = 1
    const warned = new Set<string>()
    const trusted = () => ctx.project.trusted?.() ?? true
    let verdict = trusted()
    let waitNote = ''

    /** the lock problems said already: each is said once, again only after it was fixed */
    let said = new Set<string>()
    /** Reads the locks and hashes every tree again (one install at a time, streamed). */
    async function verifyAll() {
      verdict = trusted()
      const seen = new Set<string>()
      const next: InstallState[] = []
      const saying = new Set<string>()
      for (const scope of scopes) {
        let entries: LockEntry[]
        try {
          const lock = readLock(scope.lock)
          entries = Object.values(lock.installs)
          for (const problem of lock.problems) {
            const line = problemText(problem)
            saying.add(line)
            if (!said.has(line))
              ctx.logger.warn(
                `${line}; the other entries load: fix it, \`yoke remove ${problem.key}\`, or \`yoke add SOURCE --force\``,
              )
          }
        } catch (err) {
          ctx.logger.error(`${scope.lock} is not read: its installs are not loaded`, err)
          continue
        }
        for (const entry of entries) {
          if (ctx.signal.aborted) return
          const checked = await verify(entry, scope)
          const state: InstallState = {
            entry,
            scope: scope.name,
            dir: checked.dir,
            state: 'registered',
          }
          if (seen.has(entry.name)) {
            state.state = 'shadowed'
            state.why = `a project install named ${entry.name} is used instead`
          } else if (
            checked.ok &&
            verdict !== true &&
            scope.name === 'project' &&
            RUNS_CODE.has(entry.kind)
          ) {
            // not `seen`: a user install of the same name is the user's, and runs meanwhile
            next.push({ ...state, state: 'waiting', why: waitingWhy(verdict, ctx.project.dir) })
            continue
          } else if (!checked.ok) {
            state.state = checked.missing ? 'missing' : 'tampered'
            state.why = checked.why
            ctx.logger.error(
              checked.why,
              new YokeError(
                checked.missing ? 'INSTALL_FAILED' : 'INSTALL_TAMPERED',
                { reason: checked.why },
                { file: scope.lock },
              ),
            )
          }
          seen.add(entry.name)
          next.push(state)
        }
      }
      said = saying
      states = next
      const waiting = next.filter((s) => s.state === 'waiting').map((s) => s.entry.name)
      const note =
        waiting.length && verdict !== true
          ? `${waiting.join(', ')}: ${waitingWhy(verdict, ctx.project.dir)}`
          : ''
      if (note && note !== waitNote) ctx.logger.warn(`project installs wait for trust: ${note}`)
      waitNote = note
      showWaiting()
    }

    /** Each waiting install shows as a pending child (`yoke inspect`), saying why, naming `yoke trust`. */
    const standIns = new Map<string, { why: string; child: ChildHandle }>()
    function showWaiting() {
      const now = new Map(
        states.filter((s) => s.state === 'waiting').map((s) => [s.entry.name, s] as const),
      )
      for (const [name, { why, child }] of standIns)
        if (now.get(name)?.why !== why) {
          standIns.delete(name)
          void child()
        }
      for (const [name, s] of now)
        if (!standIns.has(name) && !ctx.signal.aborted)
          standIns.set(name, {
            why: s.why!,
            child: ctx.plugin(
              waitingInstall(`${ctx.key}/${name}`, s, verdict, ctx.project.dir),
              {},
              { key: name },
            ),
          })
    }

    /** Hands each verified install to its service (again, when that service was replaced). */
    function registerAll() {
      const wanted = new Set<string>()
      for (const s of states) {
        if (s.state !== 'registered' && s.state !== 'skipped') continue
        const missing: string[] = []
        for (const target of TARGETS[s.entry.kind]) {
          const service = ctx.get(target.service) as Record<string, unknown> | undefined
          const method = service?.[target.method]
          if (!service || typeof method !== 'function') {
            missing.push(
              service
                ? `the ${target.service} service has no ${target.method}()`
                : `no ${target.service} service`,
            )
            continue
          }
          if (!serviceIds.has(service)) serviceIds.set(service, nextServiceId++)
          const slot = `${s.entry.name}:${target.service}`
          const dir = s.dir
          const key = `${serviceIds.get(service)}:${dir}:${s.entry.sha256}`
          wanted.add(slot)
          if (registered.get(slot)?.key === key) continue
          registered.get(slot)?.dispose()
          try {
            const undo = (method as Register).call(service, dir, {
              source: `install ${s.entry.name} (${s.scope})`,
            })
            const dispose = ctx.effect(`install ${s.entry.name} → ${target.service}`, () => undo())
            registered.set(slot, { key, dispose })
          } catch (err) {
            registered.delete(slot)
            ctx.logger.error(
              `install ${s.entry.name}: ${target.service}.${target.method}() refused ${dir}`,
              err,
            )
          }
        }
        s.state = missing.length ? 'skipped' : 'registered'
        if (missing.length) {
          // an instance that provides the service but is not active (starting, waiting itself,
          // or going at shutdown) is no news: the install registers when one is active; only a
          // composition without one is warned of (a failed provider reports itself)
          const coming = TARGETS[s.entry.kind]
            .map((t) => ctx.instances().find((f) => f.plugin.provides.includes(t.service)))
            .filter((f) => f !== undefined)
          s.why = coming.length
            ? `it waits for ${coming.map((f) => `${f!.label} (${f!.state})`).join(', ')}`
            : `${missing.join('; ')}: add the plugin that provides it to the preset`
          const note = `${s.entry.kind}:${missing.join()}`
          if (!coming.length && !warned.has(note)) {
            warned.add(note)
            ctx.logger.warn(
              `installs of kind ${s.entry.kind} (${s.entry.name}, …) are skipped: ${s.why}`,
            )
          }
        } else delete s.why
      }
      for (const [slot, r] of registered)
        if (!wanted.has(slot)) {
          r.dispose()
          registered.delete(slot)
        }
    }

    /** every verification runs after the one before: a watch event never interleaves with another */
    let chain: Promise<void> = Promise.resolve()
    const refresh = () =>
      (chain = chain
        .then(async () => {
          await verifyAll()
          if (!ctx.signal.aborted) registerAll()
        })
        .catch((err) =>
          ctx.logger.error(`verifying the installs failed: ${(err as Error).message}`, err),
        ))

    // a first load hands the installs over before it is done, so that a one-shot command sees their
    // tools: the providers that are starting are waited for, then what they load for the installs
    const providers = () =>
      ctx
        .instances()
        .filter((f) => f.key !== ctx.key && f.plugin.provides.some((name) => SERVICES.has(name)))
    const starting = (fibers: readonly FiberInfo[]) => fibers.filter((f) => f.busy)
    // the states first: the service lists every install from the moment it is provided
    const failed = (err: unknown) =>
      ctx.logger.error(`verifying the installs failed: ${(err as Error).message}`, err)
    await (chain = chain.then(verifyAll).catch(failed))
    ctx.provide('installs', {
      locks: scopes.map((s) => s.lock),
      list: () => states.map((s) => ({ ...s })),
    } satisfies InstallsApi)

    // a service provider that starts, restarts or goes: register with the one there is now
    let queued = false
    ctx.tap(ctx.hooks.state, 'installs', (fiber) => {
      if (queued || fiber.key === ctx.key || ctx.signal.aborted) return
      queued = true
      queueMicrotask(() => {
        queued = false
        if (!ctx.signal.aborted) void chain.then(registerAll)
      })
    })
    if (cfg.watch) {
      const transient = (p: string) => /[/\\]\.(staging|removing)-/.test(p)
      /** a run-time cache a plugin writes into its folder (tree.ts isCache): not a change */
      const cache = (p: string) => {
        const parts = p.split(/[/\\]/)
        const tail = parts.slice(-2).join('/')
        return (
          isCache(tail, false) ||
          parts.at(-1) === '__pycache__' ||
          parts.some((part, i) => part === '.cache' && parts[i - 1] === 'node_modules')
        )
      }
      // the trust store too: `yoke trust` starts what waited, `--revoke` stops it
      const store = join(ctx.project.home, 'trust.json')
      ctx.watch(
        [...scopes.flatMap((s) => [s.lock, s.installed]), store],
        (changes) => {
          if (changes.every((c) => transient(c.path) || cache(c.path))) return
          const sameTrust = JSON.stringify(trusted()) === JSON.stringify(verdict)
          if (sameTrust && changes.every((c) => c.path === store)) return
          void refresh()
        },
        {
          ignored: (p) =>
            transient(p) ||
            p.endsWith(`${sep}yoke.lock.lock`) ||
            p.includes(`yoke.lock.lock${sep}`),
        },
      )
    }
    ctx.control('summary:installs', () => {
      if (!states.length) return undefined
      return {
        note: `${states.filter((s) => s.state === 'registered').length} of ${states.length} loaded`,
        rows: states.map((s) => [
          s.entry.name,
          `${s.state}${s.entry.version ? ` · ${s.entry.version}` : ''} · ${s.entry.kind}${s.scope === 'user' ? ' · user' : ''}`,
        ]),
      }
    })
    ctx.control('installs-list', () => ({ locks: scopes.map((s) => s.lock), installs: states }))
    await settledWithin(Promise.all(starting(providers()).map((f) => f.settled())), SETTLE_MS)
    await (chain = chain.then(() => void (ctx.signal.aborted || registerAll())).catch(failed))
    await settledWithin(loadsFor(ctx, providers()), SETTLE_MS)
  },
})

/**
 * What the providers are still loading for the installs just handed to them: exec-tools' package
 * loads (`execTools.settled()`), and the child instances a provider is starting (a Claude Code
 * plugin's folder).
 */
async function loadsFor(
  ctx: { get(name: string): unknown; instances(): readonly FiberInfo[] },
  providers: readonly FiberInfo[],
): Promise<void> {
  const exec = ctx.get('execTools') as { settled?: () => Promise<void> } | undefined
  await exec?.settled?.()
  const mine = new Set(providers)
  const children = ctx.instances().filter((f) => f.busy && f.parent && mine.has(f.parent))
  await Promise.all(children.map((f) => f.settled()))
}

/** Why a project install waits, and what to do: as a waiting instance says it. */
const waitingWhy = (verdict: string, dir: string) =>
  `${verdict}, and it runs the project's code: review yoke.lock, then run \`yoke trust\` in ${dir} (--trust or YOKE_TRUST=1 trusts one run)`

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
