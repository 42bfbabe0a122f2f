/**
 * @module repository/inspect
 * `yoke inspect` for the model: repository_list (every instance with what it provides and waits
 * for, the services, and this session's dynamic plugins: a stopped one has no instance, so the
 * list says who stopped it and why) and repository_query (one instance: its tools, its hook taps,
 * its config schema). Config values are never shown (they may hold secrets); other sessions'
 * dynamic instances are left out, by the same rule as everywhere (Repository.sees).
 */
import { z } from 'zod'
import {
  YokeError,
  type EffectNode,
  type FiberInfo,
  type InjectedContext,
  type ToolDefinition,
} from 'yoke'
import { Repository } from './repository.ts'

export function inspectTools(
  ctx: InjectedContext<['runtime']>,
  repo: Repository,
): ToolDefinition[] {
  /** the instances a scope may know of */
  const visible = (scope: string) =>
    ctx.instances().filter((f) => {
      const session = repo.sessionOfOwner(f.key)
      return session === undefined || Repository.sees(scope, session)
    })
  const summary = (f: FiberInfo) => ({
    key: f.key,
    plugin: f.plugin.name,
    state: f.state,
    provides: f.plugin.provides,
    injects: f.plugin.inject,
    waitingFor:
      f.state === 'pending' ? f.plugin.inject.filter((s) => ctx.get(s) === undefined) : [],
    ...(f.error ? { error: f.error.message } : {}),
    ...(f.parent ? { parent: f.parent.key } : {}),
  })
  return [
    {
      name: 'repository_list',
      description:
        'List the plugin instances of this runtime (state, the services each provides and injects, what a pending one waits for, why one failed), the services that exist, and this session’s dynamic plugins (state, current version; a stopped one: who stopped it and why).',
      risk: 'low',
      concurrency: 'safe',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      execute(_args, c) {
        const instances = visible(c.call.scope).map(summary)
        const services = [
          ...new Set(instances.filter((i) => i.state === 'active').flatMap((i) => i.provides)),
        ].sort()
        const dynamicPlugins = repo.list(c.call.scope).map((r) => {
          const { name, state, current, lastStop } = repo.info(r)
          return { name, state, current: current ?? null, ...(state === 'stopped' && { lastStop }) }
        })
        return { instances, services, dynamicPlugins }
      },
    },
    {
      name: 'repository_query',
      description:
        'One plugin instance in detail: its state, the tools it registered, the hooks it taps, its children and its config schema (JSON Schema; config values are not shown).',
      risk: 'low',
      concurrency: 'safe',
      inputSchema: {
        type: 'object',
        properties: { instance: { type: 'string', minLength: 1 } },
        required: ['instance'],
        additionalProperties: false,
      },
      execute(args, c) {
        const all = visible(c.call.scope)
        const f = all.find((i) => i.key === args.instance)
        if (!f) throw new YokeError('REPOSITORY_INSTANCE_UNKNOWN', { instance: args.instance })
        repo.unfiltered = true
        let tools
        try {
          tools = ctx.runtime.list().filter((t) => t.owner === f.key)
        } finally {
          repo.unfiltered = false
        }
        return {
          ...summary(f),
          tools: tools.map((t) => ({
            name: t.name,
            source: t.source,
            risk: t.risk,
            description: t.description ?? '',
          })),
          hooks: labels(f.effects()).filter((l) => l.startsWith('tap ')),
          children: all.filter((i) => i.parent === f).map((i) => i.key),
          configSchema: schemaOf(f),
        }
      },
    },
  ]
}

function labels(nodes: EffectNode[]): string[] {
  return nodes.flatMap((n) => [n.label, ...labels(n.children ?? [])])
}

function schemaOf(f: FiberInfo): unknown {
  const schema = f.plugin.config
  if (!schema) return null
  try {
    return z.toJSONSchema(schema as z.ZodType, { unrepresentable: 'any' })
  } catch {
    return 'a config schema that is not zod (it cannot be shown as JSON Schema)'
  }
}
