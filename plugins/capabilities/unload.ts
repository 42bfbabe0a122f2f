/**
 * A rule that refuses a version everywhere (withdrawn, or pinned at what it no longer is) unloads
 * what it refuses, not only its tools: an MCP server is held (its process ends), an exec package is
 * held (its tools, hooks and servers go), a skill is held (out of the prompt and skills_list), and a
 * running dynamic plugin version is stopped. A rollout does not unload: other scopes use the version.
 *
 * Each kind is a child instance that waits for its provider's service and looks again whenever the
 * provider announces a change. Its holds last as long as the child does. The next version of this
 * instance takes its holds before this one lets go (holds are counted), so nothing comes up in
 * between. What a held server was is remembered across those reloads (`Shared.held`): held, it
 * has no tools, so its content hash cannot be computed again. The audit log hears of each unload
 * from the providers' own lists: what is held is `refused` there (identity.ts, changes.ts).
 */
import { definePlugin, toDisposer, YokeError, type Context, type Disposer } from 'yoke'
import type {} from '../exec-tools/api.ts'
import type {} from '../mcp/api.ts'
import type {} from '../repository/api.ts'
import type {} from '../skills/api.ts'
import type { Capability } from './api.ts'
import type { Shared } from './changes.ts'
import type { Governance, Refusal } from './governance.ts'
import { dynamicCapability } from './dynamic.ts'

/** One thing a provider has now, as a capability. */
export interface Unloadable {
  /** what the provider's hold takes: a server's, package's or skill's name */
  key: string
  cap: Capability
  /** held, by anyone */
  held: boolean
  /** up, so what it is can be judged: a server connected (its handshake named its version) */
  ready: boolean
  /** what a hold lands on (a server's handle): a new one, after its instance reloaded, holds none */
  target?: object
}

const WHO: Partial<{ [C in Refusal['code']]: string }> = {
  CAPABILITY_WITHDRAWN: 'withdraw',
  CAPABILITY_PIN_MISMATCH: 'pin',
}

/** Starts one child per kind of provider; nothing at all when there are no rules. */
export function unloadRefused(
  ctx: Context,
  rules: Governance,
  mine: Shared,
  items: { mcp: () => Unloadable[]; exec: () => Unloadable[]; skill: () => Unloadable[] },
): void {
  if (rules.empty) return
  /** the refusal that unloads `cap`: a withdrawal or a pin, never a rollout */
  const everywhere = (cap: Capability) => {
    const why = rules.refusal(cap, [], '')
    return why && WHO[why.code] ? why : undefined
  }
  /**
   * Holds what is refused, and lets go of what no longer is (a package edited to a version the
   * rules allow). A server is judged as it was when held (`Shared.held`): held, it has no tools
   * to hash, and one that is not connected has no version to show, so neither is judged afresh.
   */
  const holder = (
    child: Context,
    kind: keyof typeof items,
    hold: (key: string, why: string) => Disposer | undefined,
  ) => {
    const holds = new Map<string, { release: Disposer; target?: object }>()
    const letGo = (key: string) => {
      holds.get(key)?.release()
      holds.delete(key)
    }
    const look = () => {
      if (child.signal.aborted) return
      for (const item of items[kind]()) {
        const memo = `${kind}:${item.key}`
        // its instance reloaded: the old hold went with the old one
        const mineNow = holds.get(item.key)
        if (mineNow && item.target && mineNow.target !== item.target) holds.delete(item.key)
        if (!item.held) mine.held.delete(memo) // up again: what it is now is what counts
        const remembered = kind === 'mcp' && item.held ? mine.held.get(memo) : undefined
        if (!item.ready && !remembered) continue
        const cap = remembered ?? item.cap
        const why = everywhere(cap)
        if (!why) {
          if (holds.has(item.key)) letGo(item.key)
          continue
        }
        if (holds.has(item.key)) continue
        const error = new YokeError(why.code, why.params)
        // taken before the hold: the provider announces it at once, and this look runs again inside
        holds.set(item.key, { release: toDisposer(() => {}), target: item.target })
        try {
          const release = hold(item.key, `${error.code}: ${error.message}`)
          if (!release) holds.delete(item.key)
          else {
            holds.set(item.key, { release, target: item.target })
            if (kind === 'mcp') mine.held.set(memo, cap)
          }
        } catch (err) {
          holds.delete(item.key)
          child.logger.error(`could not unload ${cap.id}`, err)
        }
      }
    }
    child.effect(`capabilities: the ${kind} it holds`, () => {
      for (const key of [...holds.keys()]) letGo(key)
    })
    return look
  }

  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-mcp',
      inject: ['mcp'],
      apply(child) {
        const look = holder(child, 'mcp', (name, why) => child.mcp.hold(name, why))
        child.tap(child.mcp.hooks.change, 'capabilities', () => look())
        child.tap(child.mcp.hooks.listChanged, 'capabilities', () => look())
        look()
      },
    }),
  )
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-packages',
      inject: ['execTools'],
      apply(child) {
        const look = holder(child, 'exec', (id, why) => child.execTools.hold(id, why))
        child.tap(child.execTools.hooks.change, 'capabilities', () => look())
        look()
      },
    }),
  )
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-skills',
      inject: ['skills'],
      apply(child) {
        const look = holder(child, 'skill', (name, why) => child.skills.hold(name, why))
        child.tap(child.skills.hooks.change, 'capabilities', () => look())
        look()
      },
    }),
  )
  // a running dynamic version is stopped, in its own session, by the rules as they apply there
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-dynamic',
      inject: ['repository'],
      apply(child) {
        const repository = child.repository
        const stopping = new Set<string>()
        const look = () => {
          if (child.signal.aborted) return
          for (const p of repository.plugins()) {
            const key = `${p.session}\u0000${p.name}`
            if (p.state !== 'running' || stopping.has(key)) continue
            const version = p.versions.find((v) => v.version === p.current)
            if (!version) continue
            const cap = dynamicCapability(version, 'running')
            const why = rules.refusal(cap, [], p.session)
            if (!why) continue
            const error = new YokeError(why.code, why.params)
            stopping.add(key)
            repository
              .stop(p.session, p.name, `${error.code}: ${error.message}`, 'capabilities', p.current)
              .catch((err: unknown) =>
                child.logger.warn(`could not stop ${cap.id}@${cap.version}: ${String(err)}`),
              )
              .finally(() => stopping.delete(key))
          }
        }
        child.tap(repository.hooks.change, 'capabilities', () => void queueMicrotask(look))
        look()
      },
    }),
  )
}
