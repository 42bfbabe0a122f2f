// Native tools (registered by code) through the pipeline conformance suite.
import { setTimeout as sleep } from 'node:timers/promises'
import { ToolRuntime } from '../../src/index.ts'
import type { ToolDefinition } from '../../src/runtime/types.ts'
import { toDisposer } from '../../src/index.ts'
import { runPipelineConformance, type Behaviour } from '../conformance/pipeline.ts'

const BODIES: Record<Behaviour, ToolDefinition['execute']> = {
  echo: (args) => JSON.stringify(args),
  fail: () => {
    throw new Error('it broke')
  },
  sleep: async (args, ctx) => {
    await sleep(Number(args.ms), undefined, { signal: ctx.signal })
    return 'slept'
  },
  progress: async (_args, ctx) => {
    for (let i = 1; i <= 3; i++) ctx.progress({ progress: i, total: 3 })
    return 'done'
  },
  big: (args) => 'x'.repeat(Number(args.bytes)),
}

runPipelineConformance('native', async () => {
  const runtime = new ToolRuntime({ maxOutputBytes: 100_000 })
  return {
    runtime,
    async register(name, behaviour, options = {}) {
      return toDisposer(runtime.register({ name, ...options, execute: BODIES[behaviour] }, 'test'))
    },
    async close() {},
  }
})
