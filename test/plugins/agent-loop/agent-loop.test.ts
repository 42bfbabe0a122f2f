// The agent loop against a real HTTP server speaking each provider's wire format (no SDK mocks):
// tool-calling turns, parallel safe calls, an exclusive call, denials, failures, unknown tools,
// budgets, streaming, hooks, background tasks, subagents on a second lane, cancellation.
import assert from 'node:assert/strict'
import { chmodSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import anthropic from '../../../plugins/anthropic/index.ts'
import models from '../../../plugins/models/index.ts'
import openai from '../../../plugins/openai/index.ts'
import shellHooks from '../../../plugins/shell-hooks/index.ts'
import type { AgentApi, ModelInfo, TurnInfo } from '../../../plugins/agent-loop/api.ts'
import type { ModelRequest, ModelResponse } from '../../../plugins/models/api.ts'
import type {
  Context,
  PreDecision,
  RuntimeApi,
  ToolCall,
  ToolDefinition,
} from '../../../src/index.ts'
import { agentHarness, withTimeout, type AgentHarness } from '../../helpers/agent.ts'
import {
  modelServer,
  type ModelServer,
  type RecordedRequest,
  type ScriptTurn,
} from '../../helpers/model-server.ts'

process.env.TEST_OPENAI_KEY = 'sk-test-openai'
process.env.TEST_ANTHROPIC_KEY = 'sk-test-anthropic'

const providers = {
  openai: (server: ModelServer) =>
    [
      openai,
      {
        model: 'gpt-test',
        apiKeyEnv: 'TEST_OPENAI_KEY',
        baseUrl: server.openaiBaseUrl,
        maxRetries: 0,
      },
    ] as [unknown, unknown],
  anthropic: (server: ModelServer) =>
    [
      anthropic,
      {
        model: 'claude-test',
        apiKeyEnv: 'TEST_ANTHROPIC_KEY',
        baseUrl: server.anthropicBaseUrl,
        maxRetries: 0,
      },
    ] as [unknown, unknown],
}

/** Tools with a log of when each call ran, to see what overlapped. */
function toolsPlugin(
  log: Array<{ name: string; start: number; end: number }>,
  extra: ToolDefinition[] = [],
) {
  const timed = (name: string, concurrency: 'safe' | 'exclusive', ms: number): ToolDefinition => ({
    name,
    description: `${name} (${concurrency})`,
    concurrency,
    inputSchema: { type: 'object', properties: { n: { type: 'number' } } },
    async execute(args) {
      const start = performance.now()
      await new Promise((resolve) => setTimeout(resolve, ms))
      log.push({ name, start, end: performance.now() })
      return `${name} got ${args.n}`
    },
  })
  return {
    name: 'test-tools',
    inject: ['runtime'],
    apply(ctx: Context & { runtime: RuntimeApi }) {
      ctx.runtime.register(timed('read_a', 'safe', 60))
      ctx.runtime.register(timed('read_b', 'safe', 60))
      ctx.runtime.register(timed('write_c', 'exclusive', 30))
      ctx.runtime.register({ name: 'rm_rf', description: 'dangerous', execute: () => 'gone' })
      ctx.runtime.register({
        name: 'broken',
        description: 'always throws',
        execute: () => {
          throw new Error('the disk is on fire')
        },
      })
      for (const def of extra) ctx.runtime.register(def)
      ctx.tap(
        ctx.runtime.hooks.preExecute,
        'test-policy',
        async (d: PreDecision, call: ToolCall): Promise<PreDecision> =>
          call.name === 'rm_rf' ? { kind: 'deny', reason: 'rm_rf is not allowed here' } : d,
      )
    },
  }
}

/** The tool results the model got back in a request, provider-neutral: [name or id, text]. */
function toolResults(req: RecordedRequest): string[] {
  if (req.provider === 'openai')
    return req.body.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content)
  return req.body.messages.flatMap((m: any) =>
    Array.isArray(m.content)
      ? m.content
          .filter((b: any) => b.type === 'tool_result')
          .map((b: any) =>
            typeof b.content === 'string' ? b.content : b.content.map((c: any) => c.text).join(''),
          )
      : [],
  )
}

const toolNames = (req: RecordedRequest): string[] =>
  (req.body.tools ?? []).map((t: any) => t.name ?? t.function?.name).sort()

for (const provider of ['openai', 'anthropic'] as const) {
  describe(`agent-loop through the ${provider} provider`, () => {
    let server: ModelServer
    let h: AgentHarness
    const log: Array<{ name: string; start: number; end: number }> = []
    before(async () => {
      server = await modelServer([])
      h = await agentHarness({
        model: providers[provider](server),
        extra: [[toolsPlugin(log), {}, 'tools']],
      })
    })
    after(async () => {
      await h?.close()
      await server?.close()
    })

    it('runs several turns: parallel safe calls, an exclusive call alone, a denied, a failing and an unknown tool; text streams', async () => {
      server.push(
        {
          text: 'Reading both.',
          toolCalls: [
            { name: 'read_a', args: { n: 1 } },
            { name: 'read_b', args: { n: 2 } },
            { name: 'write_c', args: { n: 3 } },
          ],
        },
        {
          text: 'Now the risky ones.',
          toolCalls: [
            { name: 'rm_rf', args: {} },
            { name: 'broken', args: {} },
            { name: 'no_such_tool', args: {} },
          ],
        },
        { text: ['All ', 'done: ', 'a, b and c.'], usage: { inputTokens: 30, outputTokens: 6 } },
      )
      log.length = 0
      const before = server.requests.length
      const { result, events } = await h.run('do the work')
      assert.equal(result.status, 'done', result.reason)
      assert.equal(result.text, 'All done: a, b and c.')
      assert.equal(result.turns, 3)
      assert.equal(result.usage.requests, 3)
      // streaming: the last turn's deltas arrive in order, before the end
      const deltas = events
        .filter((e) => e.type === 'text' && e.turn === 3)
        .map((e: any) => e.delta)
      assert.deepEqual(deltas, ['All ', 'done: ', 'a, b and c.'])
      // the two safe calls overlapped; the exclusive one ran after both
      const [a, b, c] = ['read_a', 'read_b', 'write_c'].map((n) => log.find((l) => l.name === n)!)
      assert.ok(a!.start < b!.end && b!.start < a!.end, 'read_a and read_b overlap')
      assert.ok(c!.start >= Math.max(a!.end, b!.end) - 1, 'write_c starts after the safe calls end')
      // what the model got back, in its own wire format
      const second = server.requests[before + 1]!
      assert.deepEqual(toolResults(second), ['read_a got 1', 'read_b got 2', 'write_c got 3'])
      const third = toolResults(server.requests[before + 2]!).slice(-3)
      assert.match(third[0]!, /^Error \(DENIED\): .*rm_rf is not allowed here/)
      assert.match(third[1]!, /^Error \(EXEC_FAILED\): .*the disk is on fire/)
      assert.match(third[2]!, /^Error \(UNKNOWN_TOOL\): there is no tool "no_such_tool"/)
      const statuses = events
        .filter((e) => e.type === 'tool-result')
        .map((e: any) => e.result.status)
      assert.deepEqual(statuses, ['ok', 'ok', 'ok', 'DENIED', 'EXEC_FAILED', 'UNKNOWN_TOOL'])
      // the transcript has every step and ends with the result
      const lines = readFileSync(result.transcript!, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      assert.equal(lines[0].type, 'start')
      assert.equal(lines.at(-1).type, 'end')
      assert.equal(lines.at(-1).status, 'done')
      const call = lines.find((l) => l.type === 'tool-call' && l.name === 'read_a')
      assert.equal(call.tool.source, 'native')
      assert.match(call.tool.hash, /^[0-9a-f]{12}$/)
      assert.equal(lines.filter((l) => l.type === 'tool-result').length, 6)
    })

    it('ends with status budget when the turn budget is spent, saying so', async () => {
      const loop: ScriptTurn = { text: 'again', toolCalls: [{ name: 'read_a', args: { n: 0 } }] }
      server.push(loop, loop)
      const { result } = await h.run('loop forever', { budget: { maxTurns: 2 } })
      assert.equal(result.status, 'budget')
      assert.match(result.reason!, /turn budget is spent \(2 turns\)/)
      assert.equal(result.turns, 2)
    })

    it('ends failed with the provider error when the model fails, naming the provider and model', async () => {
      server.push({ status: 400, error: 'bad request from the test' })
      const { result } = await h.run('fail please')
      assert.equal(result.status, 'failed')
      assert.match(result.reason!, new RegExp(`${provider} model .*-test failed`))
      assert.match(result.reason!, /bad request from the test/)
    })
  })
}

describe('agent-loop hooks', () => {
  let server: ModelServer
  let h: AgentHarness
  before(async () => {
    server = await modelServer([])
    h = await agentHarness({
      model: providers.openai(server),
      extra: [[toolsPlugin([]), {}, 'tools']],
    })
  })
  after(async () => {
    await h?.close()
    await server?.close()
  })

  it('beforeModel rewrites the request; afterModel sees the usage; userPrompt rewrites the task', async () => {
    const agent: AgentApi = h.agent()
    const seen: ModelInfo[] = []
    agent.hooks.userPrompt.tapPromise('t', async (prompt: string) => `${prompt} (politely)`)
    agent.hooks.beforeModel.tapPromise('t', async (req: ModelRequest, info: TurnInfo) => ({
      ...req,
      system: `${req.system}\nTurn ${info.turn}.`,
      tools: req.tools.filter((t) => t.name !== 'rm_rf'),
    }))
    agent.hooks.afterModel.tapPromise('t', async (res: ModelResponse, info: ModelInfo) => {
      seen.push(info)
      return res
    })
    server.push(
      {
        text: 'one',
        toolCalls: [{ name: 'read_a', args: { n: 1 } }],
        usage: { inputTokens: 10, outputTokens: 2 },
      },
      { text: 'two', usage: { inputTokens: 20, outputTokens: 3 } },
    )
    const n = server.requests.length
    const { result } = await h.run('hello')
    assert.equal(result.status, 'done')
    const first = server.requests[n]!.body
    assert.equal(first.messages[0].role, 'system')
    assert.match(first.messages[0].content, /Turn 1\.$/)
    assert.equal(first.messages[1].content, 'hello (politely)')
    assert.ok(
      !toolNames(server.requests[n]!).includes('rm_rf'),
      'the rewritten tool list went to the model',
    )
    assert.deepEqual(
      seen.map((s) => [s.turn, s.usage.inputTokens, s.usage.outputTokens, s.usage.requests]),
      [
        [1, 10, 2, 1],
        [2, 30, 5, 2],
      ],
    )
    assert.ok(
      seen.every(
        (s) => typeof s.latencyMs === 'number' && s.provider === 'openai' && s.model === 'gpt-test',
      ),
    )
  })

  it('shell LLM hooks get their payload fields (octos before_llm_call / after_llm_call)', async () => {
    const out = join(h.root, 'llm-hooks.jsonl')
    const script = join(h.root, 'hook.sh')
    writeFileSync(script, `#!/bin/sh\ncat >> ${out}\necho >> ${out}\n`)
    chmodSync(script, 0o755)
    const hooks = await h.add(
      shellHooks,
      {
        hooks: [
          { event: 'before_llm_call', command: [script] },
          { event: 'after_llm_call', command: [script] },
          { event: 'on_turn_end', command: [script] },
        ],
      },
      'llm-hooks',
    )
    await h.kernel.settled()
    try {
      server.push({ text: 'done', usage: { inputTokens: 7, outputTokens: 3 } })
      const { result } = await h.run('hi')
      assert.equal(result.status, 'done')
      const payloads = readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
      const beforeCall = payloads.find((p) => p.event === 'before_llm_call')
      assert.deepEqual(beforeCall, {
        schema_version: 1,
        event: 'before_llm_call',
        model: 'gpt-test',
        message_count: 1,
        iteration: 1,
        session_id: result.runId,
      })
      const afterCall = payloads.find((p) => p.event === 'after_llm_call')
      assert.equal(afterCall.provider_name, 'openai')
      assert.equal(afterCall.stop_reason, 'end')
      assert.equal(afterCall.has_tool_calls, false)
      assert.equal(afterCall.input_tokens, 7)
      assert.equal(afterCall.output_tokens, 3)
      assert.equal(afterCall.cumulative_input_tokens, 7)
      assert.equal(typeof afterCall.latency_ms, 'number')
      assert.ok(payloads.some((p) => p.event === 'on_turn_end' && p.iteration === 1))
    } finally {
      await h.kernel.remove(hooks)
    }
  })
})

describe('agent-loop runs', () => {
  let server: ModelServer
  let h: AgentHarness
  const signals: string[] = []
  const slow: ToolDefinition = {
    name: 'slow_report',
    description: 'a report that takes a while (runs in the background)',
    spawnOnly: true,
    concurrency: 'safe',
    async execute(_args, ctx) {
      await new Promise((resolve) => setTimeout(resolve, 150))
      return `report ready (${ctx.call.scope})`
    },
  }
  const sleepy: ToolDefinition = {
    name: 'sleepy',
    description: 'waits until cancelled',
    concurrency: 'safe',
    execute: (_args, ctx) =>
      new Promise((_resolve, reject) => {
        ctx.signal.addEventListener(
          'abort',
          () => (signals.push('aborted'), reject(new Error('stopped'))),
          { once: true },
        )
      }),
  }
  before(async () => {
    server = await modelServer([])
    h = await agentHarness({
      model: providers.openai(server),
      extra: [[toolsPlugin([], [slow, sleepy]), {}, 'tools']],
      loop: [
        (await import('../../../plugins/agent-loop/index.ts')).default,
        {
          subProviders: [
            {
              key: 'helper',
              provider: 'anthropic',
              model: 'claude-helper',
              apiKeyEnv: 'TEST_ANTHROPIC_KEY',
              baseUrl: server.anthropicBaseUrl,
              maxRetries: 0,
              description: 'a careful helper for sub-tasks',
            },
            {
              key: 'goal_verifier',
              provider: 'anthropic',
              model: 'claude-judge',
              apiKeyEnv: 'TEST_ANTHROPIC_KEY',
              baseUrl: server.anthropicBaseUrl,
              maxRetries: 0,
              description: 'checks goals',
            },
          ],
        },
      ],
    })
  })
  after(async () => {
    await h?.close()
    await server?.close()
  })

  it("a spawn_only tool's result arrives in a later turn (the loop waits for it after a final answer)", async () => {
    server.push(
      { text: 'Starting the report.', toolCalls: [{ name: 'slow_report', args: {} }] },
      { text: 'It runs; I will wait.' },
      { text: 'The report is ready.' },
    )
    const n = server.requests.length
    const { result, events } = await h.run('make the report')
    assert.equal(result.status, 'done', result.reason)
    assert.equal(result.text, 'The report is ready.')
    assert.equal(result.turns, 3)
    assert.match(
      toolResults(server.requests[n + 1]!)[0]!,
      /runs in the background \(task task_\d+\)/,
    )
    const third = server.requests[n + 2]!.body.messages.at(-1)
    assert.equal(third.role, 'user')
    assert.match(
      third.content,
      /^\[background task task_\d+ \(slow_report\) finished: done\]\nreport ready \(global\)/,
    )
    assert.ok(events.some((e) => e.type === 'task-done'))
  })

  it('a subagent on a second lane answers; its spawn_only tools run synchronously; a goal is verified on goal_verifier', async () => {
    const byLane: Record<string, number> = {}
    const script = (req: RecordedRequest): ScriptTurn => {
      const model = req.body.model as string
      const turn = (byLane[model] = (byLane[model] ?? 0) + 1)
      if (model === 'gpt-test')
        return turn === 1
          ? {
              toolCalls: [
                {
                  name: 'spawn',
                  args: { task: 'write the report', lane: 'helper', goal: 'a report exists' },
                },
              ],
            }
          : { text: 'The helper wrote it.' }
      if (model === 'claude-helper')
        return turn === 1
          ? { text: 'On it.', toolCalls: [{ name: 'slow_report', args: {} }] }
          : { text: 'Report written.' }
      return { text: 'REACHED\nThe result says the report was written.' }
    }
    const local = await modelServer(script)
    const h2 = await agentHarness({
      model: providers.openai(local),
      extra: [
        // the helper lanes run on anthropic: the registry, and an instance that offers the kind
        [models, {}, 'models'],
        [anthropic, { model: false }, 'anthropic'],
        [toolsPlugin([], [slow]), {}, 'tools'],
      ],
      loop: [
        (await import('../../../plugins/agent-loop/index.ts')).default,
        {
          subProviders: [
            {
              key: 'helper',
              provider: 'anthropic',
              model: 'claude-helper',
              apiKeyEnv: 'TEST_ANTHROPIC_KEY',
              baseUrl: local.anthropicBaseUrl,
              maxRetries: 0,
              description: 'a careful helper',
            },
            {
              key: 'goal_verifier',
              provider: 'anthropic',
              model: 'claude-judge',
              apiKeyEnv: 'TEST_ANTHROPIC_KEY',
              baseUrl: local.anthropicBaseUrl,
              maxRetries: 0,
            },
          ],
        },
      ],
    })
    try {
      const { result } = await h2.run('get a report written', { caller: 'cli' })
      assert.equal(result.status, 'done', result.reason)
      assert.equal(result.text, 'The helper wrote it.')
      // the child's and the verifier's tokens count in the parent's usage (2 main + 2 helper + 1 verifier requests)
      assert.equal(result.usage.requests, 5)
      // the lanes are in the spawn tool's schema, with their descriptions
      const spawnTool = local.requests[0]!.body.tools.find(
        (t: any) => t.function.name === 'spawn',
      ).function
      assert.deepEqual(spawnTool.parameters.properties.lane.enum, ['main', 'helper'])
      assert.match(spawnTool.parameters.properties.lane.description, /helper: a careful helper/)
      // the helper ran on the anthropic wire; its spawn_only tool ran synchronously in the subagent scope
      const helperRequests = local.requests.filter((r) => r.body.model === 'claude-helper')
      assert.equal(helperRequests.length, 2)
      assert.ok(!toolNames(helperRequests[0]!).includes('spawn'), 'subagents do not get spawn')
      assert.match(toolResults(helperRequests[1]!)[0]!, /^report ready \(global\/spawn-\d+\)$/)
      // the verifier's verdict and the child's answer reached the main model
      const spawnResult = toolResults(
        local.requests.filter((r) => r.body.model === 'gpt-test')[1]!,
      )[0]!
      assert.match(spawnResult, /^Report written\./)
      assert.match(spawnResult, /\[goal reached according to anthropic claude-judge/)
    } finally {
      await h2.close()
      await local.close()
    }
  })

  it('a background task that ends while the final answer is being written still reaches the model', async () => {
    const quick: ToolDefinition = {
      name: 'quick_report',
      description: 'background, 30 ms',
      spawnOnly: true,
      execute: async () => (await new Promise((r) => setTimeout(r, 30)), 'quick report ready'),
    }
    const off = h.rt.register(quick)
    try {
      server.push(
        { toolCalls: [{ name: 'quick_report', args: {} }] },
        { text: 'Waiting for it.', delayMs: 200 },
        { text: 'Got the quick report.' },
      )
      const n = server.requests.length
      const { result, events } = await h.run('quick one')
      assert.equal(result.status, 'done', result.reason)
      assert.equal(result.text, 'Got the quick report.')
      assert.equal(result.turns, 3)
      assert.match(
        server.requests[n + 2]!.body.messages.at(-1).content,
        /finished: done\]\nquick report ready/,
      )
      assert.equal(events.filter((e) => e.type === 'task-done').length, 1)
    } finally {
      await off()
    }
  })

  it('a tool reloaded during a turn is not run in its new version before the next turn', async () => {
    const version = (v: number): ToolDefinition => ({
      name: 'ver',
      description: `version ${v}`,
      concurrency: 'safe',
      execute: () => `ran v${v}`,
    })
    let undo = h.rt.register(version(1))
    const reload: ToolDefinition = {
      name: 'reload_ver',
      description: 'reloads ver',
      concurrency: 'exclusive',
      execute: async () => (await undo(), (undo = h.rt.register(version(2))), 'reloaded'),
    }
    const offReload = h.rt.register(reload)
    try {
      server.push(
        {
          toolCalls: [
            { name: 'reload_ver', args: {} },
            { name: 'ver', args: {} },
          ],
        },
        { toolCalls: [{ name: 'ver', args: {} }] },
        { text: 'ok' },
      )
      const n = server.requests.length
      const { result } = await h.run('reload and call')
      assert.equal(result.status, 'done', result.reason)
      const [reloaded, stale] = toolResults(server.requests[n + 1]!).slice(-2)
      assert.equal(reloaded, 'reloaded')
      assert.match(stale!, /^Error \(UNLOADED\): ver was reloaded or removed during this turn/)
      assert.equal(toolResults(server.requests[n + 2]!).at(-1), 'ran v2')
    } finally {
      await offReload()
      await undo()
    }
  })

  it('subagents take the concurrency gate like any caller: their exclusive calls never overlap', async () => {
    const log: Array<{ name: string; start: number; end: number }> = []
    const script = (req: RecordedRequest): ScriptTurn => {
      const msgs = req.body.messages.filter((m: any) => m.role !== 'system')
      const isChild = /^child/.test(msgs[0].content)
      const turn = msgs.filter((m: any) => m.role === 'assistant').length
      if (!isChild)
        return turn === 0
          ? {
              toolCalls: [
                { name: 'spawn', args: { task: 'child A' } },
                { name: 'spawn', args: { task: 'child B' } },
              ],
            }
          : { text: 'both done' }
      return turn === 0
        ? { toolCalls: [{ name: 'write_c', args: { n: 1 } }] }
        : { text: `${msgs[0].content} done` }
    }
    const local = await modelServer(script)
    const h2 = await agentHarness({
      model: providers.openai(local),
      extra: [[toolsPlugin(log), {}, 'tools']],
    })
    try {
      const { result } = await h2.run('two children')
      assert.equal(result.status, 'done', result.reason)
      const writes = log.filter((l) => l.name === 'write_c')
      assert.equal(writes.length, 2)
      const [x, y] = writes.sort((a, b) => a.start - b.start)
      assert.ok(
        y!.start >= x!.end - 1,
        `exclusive calls overlapped: ${x!.start}-${x!.end} and ${y!.start}-${y!.end}`,
      )
    } finally {
      await h2.close()
      await local.close()
    }
  })

  it('a run that cannot start (a --record path that cannot be written) ends failed with the reason', async () => {
    const { result, events } = await h.run('record me', {
      record: join(h.root, 'no/such/dir/cassette.jsonl'),
    })
    assert.equal(result.status, 'failed')
    assert.match(result.reason!, /the run could not start: ENOENT/)
    assert.deepEqual(
      events.map((e) => e.type),
      ['end'],
    )
  })

  it('cancelling mid-tool-call aborts the tool, ends the run cancelled, and completes the transcript', async () => {
    server.push({ text: 'Sleeping.', toolCalls: [{ name: 'sleepy', args: {} }] })
    signals.length = 0
    const agent = h.agent()
    const run = agent.run('sleep', {
      onEvent: (e) => {
        if (e.type === 'tool-call') setTimeout(() => run.cancel('the user pressed Ctrl-C'), 50)
      },
    })
    const result = await withTimeout(run.result, 10_000, 'the cancelled run')
    assert.equal(result.status, 'cancelled')
    assert.equal(result.reason, 'the user pressed Ctrl-C')
    assert.deepEqual(signals, ['aborted'])
    const lines = readFileSync(result.transcript!, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const toolResult = lines.find((l) => l.type === 'tool-result')
    assert.equal(toolResult.status, 'ABORTED')
    assert.deepEqual(lines.at(-1).type, 'end')
    assert.equal(lines.at(-1).status, 'cancelled')
  })
})
