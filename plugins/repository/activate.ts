/**
 * @module repository/activate
 * The child plugin that runs one version. A module runs in a worker process (worker-host.ts); each tool it
 * registers through ctx.runtime is registered here, in the runtime, as `source: repo:<name>`, so it
 * goes through the same pipeline, policy and approvals as any tool, with at most callTimeoutMs per
 * call. A fragment starts its instances as children and is active once all of them are.
 */
import { messageOf, type Disposer, type FiberInfo, type InjectedContext, type Risk } from 'yoke'
import type { DynamicVersion } from './api.ts'
import type { CheckedModule } from './check.ts'
import { loadBuiltin, type FragmentInstance } from './fragment.ts'
import { WorkerHost, type RemoteTool, type WorkerLimits } from './worker-host.ts'

export interface Limits extends WorkerLimits {
  callTimeoutMs: number
}

export interface ModuleEvents {
  diagnose(line: string): void
  /** its worker ended by itself after it started */
  died(fiber: FiberInfo, reason: string): void
}

const RISKS = new Set<string>(['low', 'medium', 'high', 'critical'])

export function modulePlugin(
  version: DynamicVersion,
  module: CheckedModule,
  limits: Limits,
  events: ModuleEvents,
) {
  return {
    name: version.id,
    inject: ['runtime'] as const,
    async apply(ctx: InjectedContext<['runtime']>) {
      const tools = new Map<string, Disposer>()
      const problems: string[] = []
      let started = false
      const fiber = () => ctx.instances().find((f) => f.id === ctx.fiberId)!
      const host: WorkerHost = new WorkerHost(
        version.id,
        { code: module.code, key: ctx.key, config: version.config, inject: module.inject },
        limits,
        {
          register(tool) {
            try {
              tools.set(tool.name, ctx.runtime.register(toolOf(tool, version, limits, host)))
            } catch (err) {
              const line = `registering ${tool.name} failed: ${messageOf(err)}`
              if (!started) problems.push(line)
              events.diagnose(line)
            }
          },
          unregister(name) {
            void tools.get(name)?.()
            tools.delete(name)
          },
          log(level, message) {
            ctx.logger[level](`${version.id}: ${message}`)
            if (level === 'warn' || level === 'error') events.diagnose(`${level}: ${message}`)
          },
          died: (reason) => (started ? events.died(fiber(), reason) : undefined),
        },
      )
      ctx.effect('worker', () => host.terminate())
      await host.ready(ctx.signal)
      if (problems.length) throw new Error(problems.join('; '))
      started = true
    },
  }
}

/** A tool the worker registered, as the runtime runs it: its body is a message to the worker. */
function toolOf(tool: RemoteTool, version: DynamicVersion, limits: Limits, host: WorkerHost) {
  return {
    name: tool.name,
    description: tool.description ?? '',
    inputSchema: tool.inputSchema ?? { type: 'object' },
    source: `repo:${version.name}`,
    // a risk it does not spell right counts as high: unknown fails closed
    risk: (tool.risk === undefined ? 'low' : RISKS.has(tool.risk) ? tool.risk : 'high') as Risk,
    concurrency: tool.concurrency === 'safe' ? ('safe' as const) : ('exclusive' as const),
    timeoutMs: Math.min(tool.timeoutMs ?? limits.callTimeoutMs, limits.callTimeoutMs),
    execute: (args: Record<string, unknown>, call: Parameters<WorkerHost['call']>[2]) =>
      host.call(tool.name, args, call),
  }
}

export function fragmentPlugin(
  version: DynamicVersion,
  instances: FragmentInstance[],
  limits: Limits,
) {
  return {
    name: version.id,
    async apply(ctx: InjectedContext<[]>) {
      const plugins = await Promise.all(instances.map((i) => loadBuiltin(i.use)))
      const children = instances.map((i, n) => ctx.plugin(plugins[n], i.config, { key: i.key }))
      const deadline = performance.now() + limits.initTimeoutMs
      for (const child of children) {
        while (
          performance.now() < deadline &&
          (child.fiber.busy || child.fiber.state === 'pending')
        ) {
          await new Promise((resolve) => setTimeout(resolve, 5))
          if (child.fiber.state === 'pending' && !child.fiber.busy && child.fiber.error) break
        }
        const f = child.fiber
        if (f.state !== 'active')
          throw new Error(
            f.state === 'pending' && !f.error
              ? `${f.label} did not start within ${limits.initTimeoutMs} ms (initTimeoutMs)`
              : `${f.label} is ${f.state}${f.error ? `: ${f.error.message}` : ''}`,
          )
      }
    },
  }
}
