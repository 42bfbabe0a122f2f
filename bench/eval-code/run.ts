/**
 * `npm run eval:code`: the same multi-step tasks over three real MCP servers, with direct tool
 * calls and with code mode, played offline from the cassettes in cassettes/ (the replay provider;
 * the tools run for real). Per task and mode: model turns, tokens sent and received (counted with
 * a real tokenizer, o200k, on what each request and response carries), and the run's wall time;
 * then the cost of a sandbox start and of a nested call against a direct pipeline call.
 *
 *   npm run eval:code                  replay the cassettes (offline, no key)
 *   npm run eval:code -- --record      record them again with the scripted models (tasks.ts)
 *   npm run eval:code -- --record --live   record them with a real model (README: the variables)
 */
import { mkdirSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import type { ModelClient, ModelRequest, ModelResponse } from '../../plugins/models/api.ts'
import { CassetteWriter, createReplayModel, readCassette } from '../../plugins/replay/api.ts'
import { figure, figures, meets, median, row } from '../stats.ts'
import { evalHarness, type EvalHarness } from './harness.ts'
import { sandboxCosts } from './sandbox.ts'
import { codeScript, resetIds, seed, TASKS, type Script, type Task } from './tasks.ts'

const HERE = fileURLToPath(new URL('.', import.meta.url))
const CASSETTES = join(HERE, 'cassettes')
const MODES = ['direct', 'code'] as const
type Mode = (typeof MODES)[number]
const cassetteOf = (task: Task, mode: Mode) => join(CASSETTES, `${task.name}.${mode}.jsonl`)

/** A scripted model: each response from the task's script, given the conversation so far. */
function scripted(script: Script): ModelClient {
  return {
    provider: 'scripted',
    model: 'scripted',
    async complete(request) {
      const step = script(request.messages, request)
      const usage = { inputTokens: tokensSent(request), outputTokens: 0 }
      const response: ModelResponse =
        'text' in step
          ? { text: step.text, toolCalls: [], stopReason: 'end', usage, model: 'scripted' }
          : { text: '', toolCalls: step.calls, stopReason: 'tool_use', usage, model: 'scripted' }
      response.usage.outputTokens = tokensReceived(response)
      return response
    },
  }
}

/** What a request carries as tokens: the system prompt, the messages (and their calls), the tools. */
function tokensSent(request: ModelRequest): number {
  let n = countTokens(request.system)
  for (const m of request.messages) {
    n += countTokens(m.content) + 4
    if (m.role === 'assistant' && m.toolCalls) n += countTokens(JSON.stringify(m.toolCalls))
  }
  for (const t of request.tools) n += countTokens(JSON.stringify(t))
  return n
}

const tokensReceived = (r: ModelResponse) =>
  countTokens(r.text) + (r.toolCalls.length ? countTokens(JSON.stringify(r.toolCalls)) : 0)

async function liveModel(h: EvalHarness): Promise<ModelClient> {
  const provider = process.env.EVAL_CODE_PROVIDER ?? 'openai'
  const model = process.env.EVAL_CODE_MODEL
  if (!model) throw new Error('--live needs EVAL_CODE_MODEL (and EVAL_CODE_PROVIDER, its key)')
  const models = h.kernel.services.get('models')?.value as
    { create(spec: Record<string, unknown>): ModelClient } | undefined
  if (!models) throw new Error('--live: the models registry is not composed')
  return models.create({
    provider,
    model,
    ...(process.env.EVAL_CODE_BASE_URL && { baseUrl: process.env.EVAL_CODE_BASE_URL }),
  })
}

interface Measured {
  turns: number
  sent: number
  received: number
  ms: number[]
  answer: string
  status: string
}

async function record(h: EvalHarness, live: boolean) {
  mkdirSync(CASSETTES, { recursive: true })
  for (const task of TASKS)
    for (const mode of MODES) {
      seed()
      resetIds()
      const writer = new CassetteWriter(cassetteOf(task, mode))
      const inner = live
        ? await liveModel(h)
        : scripted(mode === 'code' ? codeScript(task) : task.direct)
      await h.use(mode, writer.wrap(inner, 'main'))
      const result = await h.run(task.prompt)
      writer.close()
      console.log(
        `recorded ${task.name} (${mode}): ${result.status}, ${result.turns} turns: ${result.text}`,
      )
    }
}

/** Replays one task in one mode `rounds` times; the counts come from the cassette's exchanges. */
async function replay(h: EvalHarness, task: Task, mode: Mode): Promise<Measured> {
  const file = cassetteOf(task, mode)
  const exchanges = readCassette(file)
  seed()
  resetIds()
  await h.use(mode, createReplayModel({ cassette: file }))
  const started = performance.now()
  const result = await h.run(task.prompt)
  const ms = performance.now() - started
  return {
    turns: exchanges.length,
    sent: exchanges.reduce((n, e) => n + tokensSent(e.request), 0),
    received: exchanges.reduce((n, e) => n + tokensReceived(e.response), 0),
    ms: [ms],
    answer: result.status === 'done' ? result.text : `${result.status}: ${result.reason}`,
    status: result.status,
  }
}

export async function evalCode(args: string[] = []): Promise<void> {
  const h = await evalHarness({ live: args.includes('--live') })
  try {
    if (args.includes('--record')) await record(h, args.includes('--live'))
    const rounds = Number(process.env.EVAL_CODE_ROUNDS ?? 3)
    const results = new Map<string, Measured>()
    // interleaved: each round replays every task in both modes, so load hits both alike
    for (let r = 0; r < rounds; r++)
      for (const mode of MODES)
        for (const task of TASKS) {
          const m = await replay(h, task, mode)
          const key = `${task.name}.${mode}`
          const prev = results.get(key)
          if (prev && prev.answer !== m.answer)
            throw new Error(`${key}: the replay answered differently`)
          results.set(key, prev ? { ...prev, ms: [...prev.ms, ...m.ms] } : m)
        }
    report(results)
    await sandboxCosts(h)
  } finally {
    await h.close()
  }
}

function report(results: Map<string, Measured>) {
  console.log(
    `\neval:code — ${TASKS.length} tasks over server-filesystem, server-memory, server-everything; load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  )
  console.log(
    row(['task', 'mode', 'turns', 'tokens sent', 'received', 'wall ms (median)', 'answer']),
  )
  const sum = {
    direct: { turns: 0, sent: 0, received: 0, ms: 0 },
    code: { turns: 0, sent: 0, received: 0, ms: 0 },
  }
  for (const task of TASKS)
    for (const mode of MODES) {
      const m = results.get(`${task.name}.${mode}`)!
      const ms = median(m.ms)
      sum[mode].turns += m.turns
      sum[mode].sent += m.sent
      sum[mode].received += m.received
      sum[mode].ms += ms
      console.log(
        row([task.name, mode, m.turns, m.sent, m.received, ms.toFixed(0), m.answer.slice(0, 60)]),
      )
    }
  for (const mode of MODES)
    console.log(
      row([
        'all',
        mode,
        sum[mode].turns,
        sum[mode].sent,
        sum[mode].received,
        sum[mode].ms.toFixed(0),
        '',
      ]),
    )
  const ratio = (k: 'turns' | 'sent' | 'received' | 'ms') => sum.code[k] / sum.direct[k]
  console.log(
    `code mode / direct: turns ${ratio('turns').toFixed(2)}, tokens sent ${ratio('sent').toFixed(2)}, received ${ratio('received').toFixed(2)}, wall ${ratio('ms').toFixed(2)}`,
  )
  figure({
    name: 'code mode: model turns vs direct (5 tasks)',
    value: ratio('turns'),
    goal: 0.6,
    better: 'lower',
    baseline: 'direct tool calls',
  })
  figure({
    name: 'code mode: tokens sent vs direct (5 tasks)',
    value: ratio('sent'),
    goal: 1,
    better: 'lower',
    baseline: 'direct tool calls',
  })
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await evalCode(process.argv.slice(2))
  console.log('\nfigures')
  for (const f of figures)
    console.log(
      `  ${meets(f) ? 'meets' : 'SHORT'}  ${f.name}: ${f.value.toFixed(3)}${f.unit ? ` ${f.unit}` : ''} (goal ${f.better === 'lower' ? '≤' : '≥'} ${f.goal}${f.spread ? `, spread ${f.spread}` : ''})`,
    )
}
