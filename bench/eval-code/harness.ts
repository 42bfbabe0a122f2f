/**
 * The eval's composition, made in code: the runtime, a project at the work directory, the prompt
 * plugin, the mcp hub with the three real servers (stdio, from node_modules), code-mode with the
 * mode's offer, the agent loop (no transcripts) and a model: the task's scripted model (recorded
 * to a cassette) or the replay of that cassette.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import agentLoop from '../../plugins/agent-loop/index.ts'
import type { AgentApi, RunResult } from '../../plugins/agent-loop/api.ts'
import codeMode from '../../plugins/code-mode/index.ts'
import mcpHub from '../../plugins/mcp/index.ts'
import mcpClient from '../../plugins/mcp-client/index.ts'
import models from '../../plugins/models/index.ts'
import openai from '../../plugins/openai/index.ts'
import anthropic from '../../plugins/anthropic/index.ts'
import type { ModelClient } from '../../plugins/models/api.ts'
import promptPlugin from '../../plugins/prompt/index.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Fiber,
  type Plugin,
  type ToolRuntime,
} from '../../src/index.ts'
import { FILES, MEMORY_FILE, seed, WORK } from './tasks.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const bin = (pkg: string) => join(ROOT, 'node_modules/@modelcontextprotocol', pkg, 'dist/index.js')

export interface EvalHarness {
  kernel: Kernel
  rt: ToolRuntime
  /** puts code-mode (with this offer) and this model in place of the previous ones */
  use(offer: 'direct' | 'code', model: ModelClient): Promise<void>
  run(task: string): Promise<RunResult>
  close(): Promise<void>
}

export async function evalHarness(options: { live?: boolean } = {}): Promise<EvalHarness> {
  seed()
  const kernel = new Kernel()
  const spawn = async (plugin: unknown, config: unknown, key: string) => {
    const p = toPlugin(plugin) as Plugin
    const checked = validateConfig(p, config)
    assert.ok('value' in checked, `${key}: ${JSON.stringify(checked)}`)
    const fiber = kernel.spawn(p, checked.value, { key })
    await kernel.whenSettled(fiber, 60_000)
    assert.equal(fiber.state, 'active', `${key}: ${fiber.error?.message}`)
    return fiber
  }
  await spawn(runtimePlugin, {}, 'yoke:runtime')
  const project = {
    name: 'project',
    provides: ['project'],
    apply: (ctx: any) => void ctx.provide('project', { dir: WORK, home: join(WORK, '.home') }),
  }
  await spawn(project, {}, 'yoke:project')
  await spawn(promptPlugin, {}, 'prompt')
  await spawn(mcpHub, {}, 'mcp')
  if (options.live) {
    // a real model for --record --live: the registry, and the provider's kind (no model of its own)
    await spawn(models, {}, 'models')
    const provider = process.env.EVAL_CODE_PROVIDER === 'anthropic' ? anthropic : openai
    await spawn(provider, { model: false }, 'provider')
  }
  const node = process.execPath
  await spawn(
    mcpClient,
    {
      serverName: 'fs',
      command: node,
      args: [bin('server-filesystem'), FILES],
      failOnStartupError: true,
    },
    'fs',
  )
  await spawn(
    mcpClient,
    {
      serverName: 'memory',
      command: node,
      args: [bin('server-memory')],
      env: { MEMORY_FILE_PATH: MEMORY_FILE },
      failOnStartupError: true,
    },
    'memory',
  )
  await spawn(
    mcpClient,
    {
      serverName: 'everything',
      command: node,
      args: [bin('server-everything'), 'stdio'],
      failOnStartupError: true,
    },
    'everything',
  )
  const rt = kernel.services.get('runtime')!.value as unknown as ToolRuntime
  for (
    let i = 0;
    i < 500 &&
    !['mcp__fs__read_text_file', 'mcp__memory__read_graph', 'mcp__everything__echo'].every((n) =>
      rt.list().some((t) => t.name === n),
    );
    i++
  )
    await new Promise((r) => setTimeout(r, 20))
  let placed: Fiber[] = []
  let code: { offer: string; fiber: Fiber } | undefined
  return {
    kernel,
    rt,
    async use(offer, model) {
      // code-mode stays while the offer does (its sandbox worker stays warm, as in a long-lived yoke)
      for (const fiber of placed.reverse()) await kernel.remove(fiber)
      if (code && code.offer !== offer) await kernel.remove(code.fiber)
      if (code?.offer !== offer) {
        code = { offer, fiber: await spawn(codeMode, { offer }, 'code') }
        // a long-lived yoke has its worker up by the first program: so does the eval
        await rt.call('run_code', { code: 'return 1' })
      }
      const modelPlugin = {
        name: 'eval-model',
        provides: ['model'],
        apply: (ctx: any) => void ctx.provide('model', model),
      }
      placed = [
        await spawn(modelPlugin, {}, 'model'),
        await spawn(agentLoop, { transcripts: false, spawn: false }, 'agent'),
      ]
    },
    async run(task) {
      const agent = kernel.services.get('agent')!.value as AgentApi
      return agent.run(task).result
    },
    close: () => kernel.dispose(),
  }
}
