/**
 * A rule that refuses a version everywhere (withdrawn, or pinned at what it no longer is) unloads
 * what it refuses, not only its tools: an MCP server is held (its process ends), an exec package is
 * held (its tools, hooks and servers go), a skill is held (out of the prompt and skills_list), and a
 * running dynamic plugin version is stopped. A rollout does not unload: other scopes use the version.
 *
 * Each kind is a child instance that waits for its provider's service and looks again whenever the
 * provider announces a change. Its holds last as long as the child does. The next version of this
 * instance takes its holds before this one lets go (holds are counted), so nothing comes up in
 * between. What a held thing was is remembered across those reloads (`Shared.held`): a held
 * server has no tools, so its content hash cannot be computed again while it is held.
 */
import {
  definePlugin,
  toDisposer,
  YokeError,
  type Context,
  type Disposer,
  type RegisteredTool,
} from 'yoke'
import type {} from '../exec-tools/api.ts'
import type {} from '../mcp/api.ts'
import type {} from '../repository/api.ts'
import type {} from '../skills/api.ts'
import { versionOf, type AuditEntry, type Capability } from './api.ts'
import type { Shared } from './changes.ts'
import type { Governance, Refusal } from './governance.ts'
import { dynamicCapability } from './dynamic.ts'
import type { Identities } from './identity.ts'

/** One thing a provider has now, as a capability; `held`: the provider holds it already. */
export interface Unloadable {
  /** what the provider's hold takes: a server's, package's or skill's name */
  key: string
  cap: Capability
  held: boolean
}

type Recorder = (entries: Omit<AuditEntry, 'at'>[]) => void

const WHO: Partial<{ [C in Refusal['code']]: string }> = {
  CAPABILITY_WITHDRAWN: 'withdraw',
  CAPABILITY_PIN_MISMATCH: 'pin',
}

/** Starts one child per kind of provider; nothing at all when there are no rules. */
export function unloadRefused(
  ctx: Context,
  rules: Governance,
  ids: Identities,
  mine: Shared,
  record: Recorder,
  /** the global tools as registered, before any rule hides one (a server's hash is over its own) */
  registered: () => RegisteredTool[],
): void {
  if (rules.empty) return
  /** the refusal that unloads `cap`: a withdrawal or a pin, never a rollout */
  const everywhere = (cap: Capability) => {
    const why = rules.refusal(cap, [], '')
    return why && WHO[why.code] ? why : undefined
  }
  const holder = (
    kind: string,
    items: () => Unloadable[],
    hold: (key: string, why: string) => Disposer | undefined,
  ) => {
    const holds = new Map<string, Disposer>()
    const look = () => {
      for (const item of items()) {
        const memo = `${kind}:${item.key}`
        // a held one is what it was when it was held: its content cannot be read while it is
        if (!item.held) mine.held.delete(memo) // up again: what it is now is what counts
        const cap = item.held ? (mine.held.get(memo) ?? item.cap) : item.cap
        const why = everywhere(cap)
        if (!why || holds.has(item.key)) continue
        const error = new YokeError(why.code, why.params)
        // taken before the hold: the provider announces it at once, and this look runs again inside
        holds.set(
          item.key,
          toDisposer(() => {}),
        )
        const release = hold(item.key, `${error.code}: ${error.message}`)
        if (!release) {
          holds.delete(item.key)
          continue
        }
        holds.set(item.key, release)
        mine.held.set(memo, cap)
        if (!item.held)
          record([
            {
              who: WHO[why.code]!,
              id: cap.id,
              from: versionOf(cap),
              to: null,
              why: `unloaded: ${error.message}`,
            },
          ])
      }
    }
    const releaseAll = () => {
      for (const release of holds.values()) release()
      holds.clear()
    }
    return { look, releaseAll }
  }

  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-mcp',
      inject: ['mcp'],
      apply(child) {
        const { look, releaseAll } = holder(
          'mcp',
          () => ids.servers(registered()),
          (name, why) => child.mcp.hold(name, why),
        )
        child.tap(child.mcp.hooks.change, 'capabilities', () => look())
        child.tap(child.mcp.hooks.listChanged, 'capabilities', () => look())
        child.effect('capabilities: the servers it holds', releaseAll)
        look()
      },
    }),
  )
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-packages',
      inject: ['execTools'],
      apply(child) {
        const { look, releaseAll } = holder(
          'exec',
          () => ids.packages(),
          (id, why) => child.execTools.hold(id, why),
        )
        child.tap(child.execTools.hooks.change, 'capabilities', () => look())
        child.effect('capabilities: the packages it holds', releaseAll)
        look()
      },
    }),
  )
  ctx.plugin(
    definePlugin({
      name: 'capabilities-unload-skills',
      inject: ['skills'],
      apply(child) {
        const { look, releaseAll } = holder(
          'skill',
          () => ids.skills(),
          (name, why) => child.skills.hold(name, why),
        )
        child.tap(child.skills.hooks.change, 'capabilities', () => look())
        child.effect('capabilities: the skills it holds', releaseAll)
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
              .stop(p.session, p.name, `${error.code}: ${error.message}`, 'capabilities')
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
