/**
 * The agent loop's overhead per turn, without the model: the OpenAI provider against the
 * in-test model server at zero latency, 50 registered tools, 100 turns with one tool call each.
 * The time spent inside the model client (SDK, HTTP, server) is measured around each request and
 * subtracted, and the same 100 requests sent straight through the provider client (no loop) give
 * the baseline for the ratio. Transcripts are written, as in a real run.
 */
import { createOpenAIModel } from '../plugins/openai/index.ts'
import type { ModelClient, ModelRequest } from '../plugins/models/api.ts'
import type { ToolDefinition } from '../src/index.ts'
import { agentHarness } from '../test/helpers/agent.ts'
import { modelServer, type RecordedRequest, type ScriptTurn } from '../test/helpers/model-server.ts'
import { row } from './stats.ts'

const TOOLS = 50
const TURNS = 100
const ROUNDS = 3

const script = (req: RecordedRequest): ScriptTurn => {
  const turn = req.body.messages.filter((m: { role: string }) => m.role === 'assistant').length
  return turn < TURNS
    ? { toolCalls: [{ id: `c${turn}`, name: `tool_${turn % TOOLS}`, args: { n: turn } }] }
    : { text: 'done' }
}

function toolsPlugin() {
  const defs: ToolDefinition[] = Array.from({ length: TOOLS }, (_, i) => ({
    name: `tool_${i}`,
    description: `benchmark tool ${i}: returns its argument`,
    concurrency: 'safe',
    inputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    execute: (args) => `ok ${args.n}`,
  }))
  return {
    name: 'bench-tools',
    inject: ['runtime'],
    apply: (ctx: any) => defs.forEach((d) => ctx.runtime.register(d)),
  }
}

/** A model client that adds up the time spent inside `complete`. */
function timed(inner: ModelClient, total: { ms: number }): ModelClient {
  return {
    provider: inner.provider,
    model: inner.model,
    async complete(request, options) {
      const t0 = performance.now()
      try {
        return await inner.complete(request, options)
      } finally {
        total.ms += performance.now() - t0
      }
    },
  }
}

export async function agentBench(): Promise<void> {
  console.log(
    `\nagent loop: ${TOOLS} tools, ${TURNS} turns with one tool call each, zero-latency OpenAI-wire server (ms per turn)`,
  )
  const server = await modelServer(script)
  const client = createOpenAIModel({
    model: 'gpt-bench',
    apiKey: 'sk-bench',
    baseUrl: server.openaiBaseUrl,
    maxRetries: 0,
  })
  const inModel = { ms: 0 }
  const timedModel = {
    name: 'timed-openai',
    provides: ['model'],
    apply: (ctx: any) => void ctx.provide('model', timed(client, inModel)),
  }
  const h = await agentHarness({ model: [timedModel, {}], extra: [[toolsPlugin(), {}, 'tools']] })
  const perTurn: number[] = []
  const overhead: number[] = []
  const direct: number[] = []
  try {
    // warm up: one short run, so the SDK, ajv and the JIT are ready
    await h.agent().run('warm up', { budget: { maxTurns: TURNS + 5 } }).result
    for (let round = 0; round < ROUNDS; round++) {
      inModel.ms = 0
      const t0 = performance.now()
      const result = await h.agent().run('benchmark', { budget: { maxTurns: TURNS + 5 } }).result
      const total = performance.now() - t0
      if (result.status !== 'done' || result.turns !== TURNS + 1)
        throw new Error(
          `the benchmark run ended ${result.status} after ${result.turns} turns: ${result.reason}`,
        )
      perTurn.push(total / result.turns)
      overhead.push((total - inModel.ms) / result.turns)
      // the baseline: the same requests (the recorded conversation, turn by turn) straight to the client
      const tools = h.rt.list().map((t) => ({
        name: t.name,
        description: t.description ?? '',
        inputSchema: t.inputSchema,
      }))
      const messages = result.messages
      const d0 = performance.now()
      for (let turn = 0; turn <= TURNS; turn++) {
        const upTo = messages.findIndex(
          (m, i) =>
            i > 0 &&
            m.role === 'assistant' &&
            messages.slice(0, i).filter((x) => x.role === 'assistant').length === turn,
        )
        const request: ModelRequest = {
          system: '',
          messages: messages.slice(0, upTo === -1 ? messages.length : upTo),
          tools,
        }
        await client.complete(request)
      }
      direct.push((performance.now() - d0) / (TURNS + 1))
    }
  } finally {
    await h.close()
    await server.close()
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!
  console.log(row(['', 'loop', 'model only', 'loop − model', 'ratio', 'goal']))
  console.log(
    row([
      'per turn (median)',
      median(perTurn),
      median(direct),
      median(overhead),
      `${(median(perTurn) / median(direct)).toFixed(2)}×`,
      '≤ 2 ms',
    ]),
  )
  console.log(
    `  rounds: loop ${perTurn.map((v) => v.toFixed(2)).join(' / ')} ms, overhead ${overhead.map((v) => v.toFixed(2)).join(' / ')} ms, direct ${direct.map((v) => v.toFixed(2)).join(' / ')} ms`,
  )
}

if (import.meta.url === `file://${process.argv[1]}`) await agentBench().then(() => process.exit(0))
