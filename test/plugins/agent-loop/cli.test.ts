// `yoke run`, `yoke runs`, record/replay and a replacement loop, end to end: the CLI as a real
// process, the model a real HTTP server in this test speaking the OpenAI wire format.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, mkdirSync, readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Composition } from '../../../src/index.ts'
import {
  modelServer,
  type ModelServer,
  type RecordedRequest,
  type ScriptTurn,
} from '../../helpers/model-server.ts'
import {
  runYoke,
  runYokeWithInput,
  tempProject,
  YOKE,
  type Project,
} from '../../helpers/project.ts'

const MINIMAL_LOOP = fileURLToPath(
  new URL('../../fixtures/agent/minimal-loop.mjs', import.meta.url),
)
const ENV = { TEST_OPENAI_KEY: 'sk-test' }

const TOOLS = `export default {
  name: 'shout-tools',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'shout', description: 'upper-cases text', concurrency: 'safe', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, execute: (a) => a.text.toUpperCase() })
  },
}
`

const config = (loop: string, model: string, extra = '') => `preset: base
plugins:
  model:
${model}
  agent:
    use: ${loop}
${extra}
  tools:
    use: ./tools.mjs
  llm-hooks:
    use: shell-hooks
    config:
      hooks:
        - { event: before_llm_call, command: [./hook.sh] }
`
const openaiModel = (url: string) =>
  `    use: openai\n    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${url}", maxRetries: 0 }`
const SHOUT: ScriptTurn[] = [
  { text: 'Shouting.', toolCalls: [{ id: 'call_1', name: 'shout', args: { text: 'hi' } }] },
  { text: 'The answer is HI.', usage: { inputTokens: 12, outputTokens: 5 } },
]

describe('yoke run, runs, record and replay', () => {
  let server: ModelServer
  let p: Project
  before(async () => {
    server = await modelServer([])
    p = tempProject({
      'tools.mjs': TOOLS,
      'hook.sh': '#!/bin/sh\ncat >> llm-calls.jsonl\necho >> llm-calls.jsonl\n',
    })
    chmodSync(p.path('hook.sh'), 0o755)
    p.write('yoke.config.yaml', config('agent-loop', openaiModel(server.openaiBaseUrl)))
    p.write(
      'replay.yaml',
      config('agent-loop', '    use: replay\n    config: { cassette: ./cassette.jsonl }'),
    )
    p.write(
      'changed.yaml',
      config(
        'agent-loop',
        '    use: replay\n    config: { cassette: ./cassette.jsonl }',
        '    config: { instructions: "Be brief." }',
      ),
    )
  })
  after(async () => {
    await server?.close()
    p?.cleanup()
  })

  it('yoke run streams the answer and each tool call, records a cassette, and exits 0', async () => {
    server.push(...SHOUT)
    const r = await runYoke(['run', 'shout hi please', '--record', 'cassette.jsonl'], {
      cwd: p.dir,
      env: ENV,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'The answer is HI.\n', 'piped, stdout carries only the final answer')
    assert.match(r.stderr, /^Shouting\.\n→ shout \{"text":"hi"\}/m)
    assert.match(r.stderr, /✓ shout/)
    assert.match(r.stderr, /done\n2 turn\(s\) · 22 in \/ 10 out tokens/)
    assert.match(r.stderr, /transcript \.yoke\/runs\/\d{8}-\d{6}-\w+\.jsonl/)
    const exchanges = readFileSync(p.path('cassette.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.deepEqual(
      exchanges.map((e) => [e.lane, e.turn]),
      [
        ['main', 1],
        ['main', 2],
      ],
    )
    // the shell hook saw both model calls
    const calls = readFileSync(p.path('llm-calls.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
    assert.deepEqual(
      calls.map((c) => [c.event, c.iteration, c.message_count]),
      [
        ['before_llm_call', 1, 1],
        ['before_llm_call', 2, 3],
      ],
    )
  })

  it('yoke runs list and show read the transcript', async () => {
    const list = await runYoke(['runs', 'list', '--json'], { cwd: p.dir, env: ENV })
    assert.equal(list.code, 0, list.stderr)
    const { runs } = JSON.parse(list.stdout)
    assert.equal(runs.length, 1)
    assert.equal(runs[0].status, 'done')
    assert.equal(runs[0].task, 'shout hi please')
    assert.equal(runs[0].tools, 1)
    const show = await runYoke(['runs', 'show', runs[0].id], { cwd: p.dir, env: ENV })
    assert.equal(show.code, 0, show.stderr)
    assert.match(show.stdout, /→ shout \{"text":"hi"\} \[native [0-9a-f]{12}\]/)
    assert.match(show.stdout, /assistant The answer is HI\./)
    const missing = await runYoke(['runs', 'show', 'nope'], { cwd: p.dir, env: ENV })
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /RUN_NOT_FOUND no run nope/)
  })

  it('replays the cassette offline with the same result; a changed prompt fails naming the turn and the difference', async () => {
    const live = JSON.parse((await runYoke(['runs', 'list', '--json'], { cwd: p.dir })).stdout)
      .runs[0]
    const replayed = await runYoke(
      ['run', 'shout hi please', '--config', 'replay.yaml', '--json'],
      { cwd: p.dir, env: {} },
    )
    assert.equal(replayed.code, 0, replayed.stderr)
    const result = JSON.parse(replayed.stdout)
    assert.equal(result.status, 'done')
    assert.equal(result.text, 'The answer is HI.')
    assert.deepEqual(result.usage, { inputTokens: 22, outputTokens: 10, requests: 2 })
    const liveMessages = JSON.parse(
      (await runYoke(['runs', 'show', live.id, '--json'], { cwd: p.dir })).stdout,
    )
      .records.filter((r: any) => r.type === 'message')
      .map((r: any) => r.message)
    assert.deepEqual(
      result.messages,
      liveMessages,
      'the replayed conversation is the recorded one, tool result included',
    )
    const changed = await runYoke(['run', 'shout hi please', '--config', 'changed.yaml'], {
      cwd: p.dir,
      env: {},
    })
    assert.equal(changed.code, 1)
    assert.match(
      changed.stderr,
      /failed: REPLAY_MISMATCH replay of .*cassette\.jsonl differs at turn 1 \(lane main\): request\.system: recorded "", now "Be brief\."/,
    )
  })

  it('a replacement loop (a plain .mjs plugin providing agent) works with the same tools and shell hooks', async () => {
    const q = tempProject({
      'tools.mjs': TOOLS,
      'hook.sh': '#!/bin/sh\ncat >> llm-calls.jsonl\necho >> llm-calls.jsonl\n',
      'yoke.config.yaml': config(MINIMAL_LOOP, openaiModel(server.openaiBaseUrl)),
    })
    chmodSync(q.path('hook.sh'), 0o755)
    try {
      server.push(...SHOUT)
      const r = await runYoke(['run', 'shout hi please'], { cwd: q.dir, env: ENV })
      assert.equal(r.code, 0, r.stderr)
      assert.equal(r.stdout, 'The answer is HI.\n')
      assert.match(r.stderr, /✓ shout/)
      const calls = readFileSync(q.path('llm-calls.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
      assert.equal(calls.length, 2, 'the shell hook tapped the replacement loop')
      const last = server.requests.at(-1) as RecordedRequest
      assert.equal(last.body.messages.at(-1).content, 'HI', 'the tool ran through the runtime')
    } finally {
      q.cleanup()
    }
  })

  it('Ctrl-C during a tool call cancels the run: the tool is aborted, exit 130, the transcript ends cancelled', async () => {
    const q = tempProject({
      'tools.mjs':
        "export default { name: 'slow', inject: ['runtime'], apply(ctx) { ctx.runtime.register({ name: 'wait_forever', description: 'waits until cancelled', execute: (_a, call) => new Promise((_r, reject) => call.signal.addEventListener('abort', () => reject(new Error('stopped')))) }) } }\n",
      'yoke.config.yaml': `preset: minimal\nplugins:\n  model:\n${openaiModel(server.openaiBaseUrl)}\n  agent:\n    use: agent-loop\n  tools:\n    use: ./tools.mjs\n`,
    })
    try {
      server.push({ text: 'Waiting.', toolCalls: [{ name: 'wait_forever', args: {} }] })
      const child = spawn(process.execPath, [YOKE, 'run', 'wait please'], {
        cwd: q.dir,
        env: { ...process.env, ...ENV, NO_COLOR: '1', YOKE_HOME: q.home },
      })
      let stderr = ''
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no tool call within 30 s: ${stderr}`)),
          30_000,
        )
        child.stderr.on('data', (d) => {
          stderr += d
          if (stderr.includes('→ wait_forever')) {
            clearTimeout(timer)
            resolve()
          }
        })
      })
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      assert.equal(await exited, 130, stderr)
      clearTimeout(timer)
      assert.match(stderr, /cancelling…/)
      assert.match(stderr, /✗ wait_forever ABORTED/)
      assert.match(stderr, /cancelled: cancelled with Ctrl-C/)
      const [file] = /\.yoke\/runs\/\S+\.jsonl/.exec(stderr) ?? []
      const lines = readFileSync(q.path(file!), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
      assert.equal(lines.at(-1).type, 'end')
      assert.equal(lines.at(-1).status, 'cancelled')
    } finally {
      q.cleanup()
    }
  })

  it('without a usable model, yoke run says which instance waits and for what (exit 1)', async () => {
    const r = await runYoke(['run', 'hello'], { cwd: p.dir, env: { TEST_OPENAI_KEY: '' } })
    assert.equal(r.code, 1)
    assert.match(
      r.stderr,
      /AGENT_UNAVAILABLE no agent to run: .*instance "model" is pending: .*TEST_OPENAI_KEY is not set/,
    )
    const usage = await runYoke(['run'], { cwd: p.dir, env: ENV })
    assert.equal(usage.code, 2)
  })

  it('yoke chat keeps the history between prompts and answers /tools and /exit', async () => {
    server.push({ text: 'Hello there.' }, { text: 'You said hello before.' })
    const n = server.requests.length
    const r = await runYokeWithInput(
      ['chat'],
      { cwd: p.dir, env: ENV },
      'hello\n/tools\nwhat did I say?\n/exit\n',
    )
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'Hello there.\nYou said hello before.\n')
    assert.match(r.stderr, /shout\s+native/)
    const second = server.requests[n + 1]!.body.messages.filter(
      (m: any) => m.role !== 'system',
    ).map((m: any) => m.content)
    assert.deepEqual(second, ['hello', 'Hello there.', 'what did I say?'])
  })
})

describe('yoke chat on a terminal', () => {
  // `script` (util-linux) gives yoke a real pseudo-terminal, so readline sees keys, Ctrl-C included
  for (const term of ['xterm', 'dumb'])
    it(`Ctrl-C drops a half-typed line and leaves at an empty prompt with exit 130 (TERM=${term})`, async () => {
      const p = tempProject({})
      const server = await modelServer([{ text: 'Got it.' }])
      p.write(
        'yoke.config.yaml',
        `preset: base\nplugins:\n  model:\n${openaiModel(server.openaiBaseUrl)}\n  agent:\n    use: agent-loop\n`,
      )
      const child = spawn(
        'script',
        ['-qfec', `"${process.execPath}" "${YOKE}" chat`, '/dev/null'],
        {
          cwd: p.dir,
          env: { ...process.env, ...ENV, NO_COLOR: '1', YOKE_HOME: p.home, TERM: term },
        },
      )
      let screen = ''
      child.stdout.on('data', (d) => (screen += d))
      const until = async (what: string, test: () => boolean) => {
        for (let waited = 0; !test(); waited += 50) {
          if (waited > 20_000) throw new Error(`no ${what} on the terminal:\n${screen}`)
          await new Promise((r) => setTimeout(r, 50))
        }
      }
      const prompts = () => screen.split('you> ').length - 1
      try {
        await until('first prompt', () => prompts() >= 1)
        child.stdin.write('half a thought')
        await until('echo of the typing', () => screen.includes('half a thought'))
        child.stdin.write('\x03') // Ctrl-C with text: the line goes, the chat stays
        await until('a fresh prompt', () => screen.includes('^C'))
        child.stdin.write('hello\r')
        await until('the answer', () => screen.includes('Got it.'))
        const asked = server.requests.at(-1)!.body.messages.filter((m: any) => m.role === 'user')
        assert.deepEqual(
          asked.map((m: any) => m.content),
          ['hello'],
          `the dropped text never reached the model:\n${screen}`,
        )
        await until(
          'the prompt after the answer',
          () => screen.lastIndexOf('you> ') > screen.indexOf('Got it.'),
        )
        child.stdin.write('\x03') // Ctrl-C at an empty prompt: leave
        let timer: NodeJS.Timeout | undefined
        const [code] = await Promise.race([
          once(child, 'exit'),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`chat did not leave:\n${screen}`)), 20_000)
          }),
        ]).finally(() => clearTimeout(timer)) // a pending bound keeps the file's process alive
        assert.equal(code, 130, screen)
      } finally {
        child.kill('SIGKILL')
        await server.close()
        p.cleanup()
      }
    })
})

describe('a hot reload during a run', () => {
  it('a tool added while a turn runs is offered from the next turn, not earlier', async () => {
    const p = tempProject({
      'late.mjs':
        "export default { name: 'late', inject: ['runtime'], apply(ctx) { ctx.runtime.register({ name: 'late_tool', description: 'arrived late', execute: () => 'late and ok' }) } }\n",
    })
    const base = (url: string) =>
      `preset: base\nplugins:\n  model:\n${openaiModel(url)}\n  agent:\n    use: agent-loop\n`
    const server = await modelServer([
      {
        toolCalls: [
          { name: 'install', args: {} },
          { name: 'late_tool', args: {} },
        ],
      },
      { toolCalls: [{ name: 'late_tool', args: {} }] },
      { text: 'finished' },
    ])
    p.write('yoke.config.yaml', base(server.openaiBaseUrl))
    process.env.TEST_OPENAI_KEY = 'sk-test'
    const composition = new Composition({ cwd: p.dir, home: p.home })
    try {
      assert.ok((await composition.start()).ok)
      const rt = composition.runtime!
      const off = rt.register({
        name: 'install',
        description: 'adds a plugin to the config and reloads',
        async execute() {
          p.write('yoke.config.yaml', `${base(server.openaiBaseUrl)}  late:\n    use: ./late.mjs\n`)
          const event = await composition.reload(['test'])
          return event.added.join(',')
        },
      })
      const agent = composition.kernel.services.get('agent')!.value as any
      const result = await agent.run('install and use it').result
      off()
      assert.equal(result.status, 'done', result.reason)
      const offered = server.requests.map((r) =>
        (r.body.tools ?? []).map((t: any) => t.function.name),
      )
      assert.ok(!offered[0].includes('late_tool'), 'not offered in the turn it was added')
      assert.ok(offered[1].includes('late_tool'), 'offered from the next turn')
      const first = server.requests[1]!.body.messages.filter((m: any) => m.role === 'tool').map(
        (m: any) => m.content,
      )
      assert.deepEqual(first[0], 'late')
      assert.match(
        first[1],
        /UNKNOWN_TOOL.*not.*offered this turn|among the tools offered this turn/,
      )
      assert.equal(server.requests[2]!.body.messages.at(-1).content, 'late and ok')
    } finally {
      await composition.close()
      await server.close()
      p.cleanup()
    }
  })
})

describe('examples/agent-replay', () => {
  it('runs offline with no key: the recorded cassette replays through the live loop and tools', async () => {
    const r = await runYoke(
      [
        'run',
        '--config',
        'examples/agent-replay/yoke.yaml',
        '--set',
        'plugins.agent.config.transcripts=false',
        'Remember that the demo is on Friday, then tell me what my notes say.',
      ],
      { env: { OPENAI_API_KEY: '' } },
    )
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'Your notes say:\n1. The demo is on Friday.\n')
    assert.match(r.stderr, /✓ note_add[\s\S]*✓ note_list[\s\S]*done\n3 turn\(s\)/)
  })
})

describe('yoke runs with odd transcripts', () => {
  it('lists around a file it cannot read, and shows control characters escaped, never raw', async () => {
    const p = tempProject({ 'yoke.config.yaml': 'preset: minimal\n' })
    try {
      const at = Date.now()
      p.write(
        '.yoke/runs/20261129-000000-aaaa.jsonl',
        [
          {
            type: 'start',
            at,
            runId: '20261129-000000-aaaa',
            task: 'evil \u001b]0;pwned\u0007 task',
            provider: 'openai',
            model: 'm\u001b[31m',
            lane: 'main',
            scope: 'global',
          },
          {
            type: 'message',
            at,
            turn: 1,
            message: { role: 'assistant', content: 'all \u001b[2J tests passed' },
          },
          {
            type: 'end',
            at,
            status: 'done',
            turns: 1,
            durationMs: 1,
            usage: { inputTokens: 1, outputTokens: 1, requests: 1 },
          },
        ]
          .map((r) => JSON.stringify(r))
          .join('\n') + '\n',
      )
      mkdirSync(p.path('.yoke/runs/20261129-000001-bbbb.jsonl')) // a directory with a transcript's name
      const list = await runYoke(['runs', 'list'], { cwd: p.dir })
      assert.equal(list.code, 0, list.stderr)
      assert.match(list.stdout, /20261129-000001-bbbb {2}unreadable \(not a regular file\)/)
      assert.match(list.stdout, /20261129-000000-aaaa {2}done/)
      assert.ok(!list.stdout.includes('\u001b'), 'no escape sequence reaches the terminal')
      const show = await runYoke(['runs', 'show', '20261129-000000-aaaa'], { cwd: p.dir })
      assert.equal(show.code, 0, show.stderr)
      assert.ok(!show.stdout.includes('\u001b'), 'no escape sequence reaches the terminal')
      assert.match(show.stdout, /assistant all \\x1b\[2J tests passed/)
    } finally {
      p.cleanup()
    }
  })
})
