/**
 * Agent-loop test helpers: a kernel with the runtime, a project in a temporary directory, the
 * prompt plugin, a model provider instance (a real provider pointed at the in-test model server,
 * or replay) and the loop (agent-loop, or a replacement), plus any extra plugins (tools, taps).
 */
import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import agentLoop from '../../plugins/agent-loop/index.ts'
import type { AgentApi, RunResult, AgentEvent } from '../../plugins/agent-loop/api.ts'
import promptPlugin from '../../plugins/prompt/index.ts'
import { removeTree } from './temp.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type LogRecord,
  type Plugin,
  type ToolRuntime,
  type Fiber,
} from '../../src/index.ts'

export interface AgentHarness {
  root: string
  kernel: Kernel
  rt: ToolRuntime
  logs: LogRecord[]
  agent(): AgentApi
  /** spawns another instance and waits for it */
  add(plugin: unknown, config: unknown, key: string): Promise<Fiber>
  /** runs a task to its end, collecting its events */
  run(
    task: string,
    options?: Parameters<AgentApi['run']>[1],
  ): Promise<{ result: RunResult; events: AgentEvent[] }>
  close(): Promise<void>
}

export async function agentHarness(options: {
  model: [unknown, unknown]
  loop?: [unknown, unknown]
  extra?: Array<[unknown, unknown, string]>
  runtime?: Record<string, unknown>
}): Promise<AgentHarness> {
  const root = mkdtempSync(join(tmpdir(), 'yoke-agent-'))
  const kernel = new Kernel()
  const logs: LogRecord[] = []
  kernel.hooks.log.tap('test', (r) => void logs.push(r))
  kernel.spawn(
    toPlugin(runtimePlugin) as Plugin,
    { unloadGraceMs: 200, ...options.runtime },
    { key: 'yoke:runtime' },
  )
  kernel.spawn(
    toPlugin({
      name: 'project',
      provides: ['project'],
      apply: (ctx: any) => void ctx.provide('project', { dir: root, home: join(root, '.home') }),
    }) as Plugin,
    {},
    { key: 'yoke:project' },
  )
  kernel.spawn(toPlugin(promptPlugin) as Plugin, {}, { key: 'prompt' })
  const add = async (plugin: unknown, config: unknown, key: string) => {
    const p = toPlugin(plugin) as Plugin
    const checked = validateConfig(p, config)
    assert.ok('value' in checked, JSON.stringify(checked))
    const fiber = kernel.spawn(p, checked.value, { key })
    await kernel.whenSettled(fiber, 10_000)
    return fiber
  }
  for (const [plugin, cfg, key] of options.extra ?? []) await add(plugin, cfg, key)
  await add(options.model[0], options.model[1], 'model')
  const loop = await add(...(options.loop ?? [agentLoop, {}]), 'agent')
  assert.equal(loop.state, 'active', `the loop is ${loop.state}: ${loop.error?.message}`)
  const rt = kernel.services.get('runtime')!.value as unknown as ToolRuntime
  const agent = () => kernel.services.get('agent')!.value as AgentApi
  return {
    root,
    kernel,
    rt,
    logs,
    agent,
    add,
    async run(task, runOptions) {
      const events: AgentEvent[] = []
      const run = agent().run(task, { ...runOptions, onEvent: (e) => events.push(e) })
      const result = await withTimeout(run.result, 30_000, `run "${task}"`)
      return { result, events }
    },
    async close() {
      await kernel.dispose()
      await removeTree(root)
    },
  }
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout
  return Promise.race([
    promise,
    new Promise<never>(
      (_, reject) =>
        (timer = setTimeout(() => reject(new Error(`${what} did not end within ${ms} ms`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer))
}
