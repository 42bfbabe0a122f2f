// tool-search's model-written phrases (`phrases: model`, the doc2query idea): the composed model
// (the openai provider against the test model server, a real HTTP exchange) is asked once per tool
// for the requests people make for it; a need worded as people word it is then found by words the
// tool never used, the phrases are kept by the tool's hash and read back by the next process
// without asking again, and a model that answers garbage, or none composed, is said once while
// search goes on without them.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createYoke, type LogRecord, type RegisteredTool, type Yoke } from '../../../src/index.ts'
import type { ModelClient, ModelRequest, ModelResponse } from '../../../plugins/models/api.ts'
import { ToolFinder } from '../../../plugins/tool-search/finder.ts'
import { ModelPhrases, readPhrases } from '../../../plugins/tool-search/phrases.ts'
import { until } from '../../helpers/until.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'
import { runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { everyday, LISTED } from './tools.ts'

const TOOLS = everyday('get_forecast', 'send_email', 'create_issue')
/** what the scripted model says people ask for each tool */
const ASKED: Record<string, string[]> = {
  get_forecast: ['will it rain this weekend', 'do I need an umbrella tomorrow'],
  send_email: ['drop Anna a note', 'write to my landlord'],
  create_issue: ['report a bug', 'file a ticket for the crash'],
}

/** The model's answer to a phrases request: each tool line's (`{"id": "tN", "name": …}`) phrases, as JSON. */
function answer(body: { messages: Array<{ role: string; content: string }> }): string {
  const user = body.messages.find((m) => m.role === 'user')!.content
  const out: Record<string, string[]> = {}
  for (const line of user.split('\n')) {
    const { id, name } = JSON.parse(line) as { id: string; name: string }
    out[id] = ASKED[name] ?? [`use ${name.replace(/_/g, ' ')}`]
  }
  // a remark after the answer, braces and all, is not part of it
  return `Here you go:\n${JSON.stringify(out)}\nHope that helps {:}`
}

const config = (url: string | undefined, extra = '') => `preset: base
plugins:
  listed: { use: ${JSON.stringify(LISTED)}, config: { tools: ${JSON.stringify(TOOLS)} } }
  tool-search:
    use: tool-search
    config: { default: deferred, semantic: off, phrases: model }
${url ? `  model:\n    use: openai\n    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${url}", maxRetries: 0 }\n` : ''}${extra}`

describe('tool-search: phrases written by the model', () => {
  let server: ModelServer
  let garbage = false
  const projects: Project[] = []
  const yokes: Yoke[] = []
  before(async () => {
    process.env.TEST_OPENAI_KEY = 'sk-test'
    server = await modelServer((request) =>
      garbage ? { text: 'I cannot help with that.' } : { text: answer(request.body) },
    )
  })
  after(async () => {
    for (const y of yokes) await y.close()
    for (const p of projects) p.cleanup()
    await server?.close()
  })
  const compose = async (p: Project) => {
    const logs: LogRecord[] = []
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: (r) => logs.push(r) })
    yokes.push(yoke)
    assert.deepEqual((await yoke.ready).failed, [])
    return { yoke, logs }
  }

  it('a need in everyday words is found once the model has written the tools their phrases; the next process reads them back', async () => {
    const p = tempProject({ 'yoke.config.yaml': config(server.openaiBaseUrl) })
    projects.push(p)
    const { yoke } = await compose(p)
    const api = yoke.get('toolSearch')!
    const before = server.requests.length
    // the first search asks for the phrases (in the background) and is answered without them
    const first = await api.search('do I need an umbrella tomorrow')
    assert.equal(first.noMatch, true)
    await api.phrasesSettled()
    const asked = server.requests.slice(before)
    assert.ok(asked.length >= 1, 'the model was asked')
    const system = String(asked[0]!.body.messages[0].content)
    assert.match(system, /requests \(3 to 12 words\) a user might type/)
    assert.match(
      String(asked[0]!.body.messages[1].content),
      /\{"id":"t\d+","name":"get_forecast","description":"Get the weather forecast for a location\.","parameters":\[\]\}/,
    )
    const status = api.phrases()!
    assert.equal(status.waiting, 0)
    assert.ok(status.written >= TOOLS.length, JSON.stringify(status))
    const found = await api.search('do I need an umbrella tomorrow')
    assert.equal(found.noMatch, false)
    assert.equal(found.candidates[0]?.item.name, 'get_forecast')
    assert.match(found.candidates[0]!.why, /asked/)
    assert.equal(
      (await api.search('report a bug in the app')).candidates[0]?.item.name,
      'create_issue',
    )
    // kept by the tool's hash, with the model that wrote them
    const kept = readFileSync(join(p.home, 'cache', 'tool-search', 'phrases.jsonl'), 'utf8')
    assert.match(kept, /"by":"openai\/gpt-test","phrases":\["will it rain this weekend"/)

    // another process on the same home: read back, not asked again
    const count = server.requests.length
    const { yoke: again } = await compose(p)
    const search = again.get('toolSearch')!
    const reread = await search.search('do I need an umbrella tomorrow')
    assert.equal(reread.candidates[0]?.item.name, 'get_forecast')
    await search.phrasesSettled()
    assert.equal(server.requests.length, count, 'nothing asked again')
  })

  it('an answer that is not phrases is said once, search goes on without them, and those tools are not asked again', async () => {
    const p = tempProject({ 'yoke.config.yaml': config(server.openaiBaseUrl) })
    projects.push(p)
    garbage = true
    try {
      const { yoke, logs } = await compose(p)
      const api = yoke.get('toolSearch')!
      await api.search('create a new issue')
      await api.phrasesSettled()
      const warned = logs.filter((r) => /did not write phrases/.test(r.message))
      assert.equal(warned.length, 1, logs.map((r) => r.message).join('\n'))
      assert.equal(warned[0]!.level, 'warn')
      assert.match(
        warned[0]!.message,
        /openai\/gpt-test did not write phrases \(its answer is not JSON/,
      )
      const count = server.requests.length
      const outcome = await api.search('create a new issue')
      await api.phrasesSettled()
      assert.equal(outcome.candidates[0]?.item.name, 'create_issue')
      assert.equal(server.requests.length, count, 'not asked again')
      assert.ok(api.phrases()!.failed >= TOOLS.length)
    } finally {
      garbage = false
    }
  })

  it('with no model composed it says so once, in the log and in `yoke doctor`; a torn cache line is skipped', async () => {
    const p = tempProject({ 'yoke.config.yaml': config(undefined) })
    projects.push(p)
    // a cache a killed process left: one good line, one torn
    p.write(
      '.home/cache/tool-search/phrases.jsonl',
      `${JSON.stringify({ key: 'k'.repeat(32), phrases: ['x'] })}\n{"key": "tor`,
    )
    const { yoke, logs } = await compose(p)
    const api = yoke.get('toolSearch')!
    await api.search('weather')
    await api.search('email')
    await api.phrasesSettled()
    const said = logs.filter((r) => /no model is composed/.test(r.message))
    assert.equal(said.length, 1, logs.map((r) => r.message).join('\n'))
    assert.equal(api.phrases()!.written, 1)
    assert.ok(api.phrases()!.waiting >= TOOLS.length)
    const doctor = await runYoke(['doctor', '--json'], { cwd: p.dir, env: { YOKE_HOME: p.home } })
    const report = JSON.parse(doctor.stdout) as {
      checks: Array<{ level: string; message: string; hint?: string }>
    }
    const line = report.checks.find((c) => c.level !== 'ok' && /phrases/.test(c.message))
    assert.ok(line, doctor.stdout)
    assert.equal(line.level, 'warn')
    assert.match(line.message, /no model is composed/)
    assert.match(line.hint!, /compose a model provider/)
    // the dev screen's section, which doctor shows too
    assert.ok(
      report.checks.some((c) =>
        /^tool search: phrases {2}model is set, but no model is composed/.test(c.message),
      ),
      doctor.stdout,
    )
  })
})

describe("tool-search: reading a model's phrases", () => {
  it("takes each id's strings, trimmed and capped; refuses what is not an answer", () => {
    const read = readPhrases(
      'Sure! {"t1": ["  will it   rain ", 7, "' +
        'x'.repeat(200) +
        '", "a", "b", "c", "d"], "t2": "no", "t9": ["stray"]}',
      2,
      3,
    )
    assert.deepEqual([...read], [['t1', ['will it rain', 'a', 'b']]])
    assert.throws(() => readPhrases('no json here', 1, 5), /its answer is not JSON: "no json here"/)
    assert.throws(() => readPhrases('{"t1": [1, 2]}', 1, 5), /phrases for none of the tools/)
    assert.throws(() => readPhrases('[1] {oops}', 1, 5), /its answer is not JSON \(/)
  })
})

describe('tool-search: phrases, the edges', () => {
  const tool = (name: string, source: string, description: string) =>
    ({ name, source, description, inputSchema: { type: 'object' } }) as unknown as RegisteredTool
  const FORECAST = tool('get_forecast', 'mcp:weather', 'Get the weather forecast for a location.')
  const ISSUE = tool('create_issue', 'mcp:github', 'Create a new issue in a repository.')
  /** A model client (the interface a provider makes) that answers when released, and records each request's tools. */
  function heldModel() {
    const requests: string[][] = []
    let release!: () => void
    let held = new Promise<void>((resolve) => (release = resolve))
    const client = {
      provider: 'test',
      model: 'held',
      async complete(request: ModelRequest, options?: { signal?: AbortSignal }) {
        const lines = String(request.messages[0]!.content).split('\n')
        requests.push(lines.map((l) => (JSON.parse(l) as { name: string }).name))
        await new Promise<void>((resolve, reject) => {
          void held.then(resolve)
          options?.signal?.addEventListener('abort', () => reject(options.signal!.reason))
        })
        const out = Object.fromEntries(
          lines.map((l) => {
            const { id, name } = JSON.parse(l) as { id: string; name: string }
            return [id, ASKED[name] ?? ['something else']]
          }),
        )
        return {
          text: JSON.stringify(out),
          toolCalls: [],
          stopReason: 'end',
          usage: { inputTokens: 1, outputTokens: 1 },
          model: 'held',
        } as ModelResponse
      },
    } as ModelClient
    return {
      client,
      requests,
      release: () => release(),
      hold: () => (held = new Promise<void>((resolve) => (release = resolve))),
    }
  }
  const scratch = () => {
    const p = tempProject({})
    after(() => p.cleanup())
    return p
  }

  it("phrases written while their tool was out of the index (another scope's search) are taken when it is back", async () => {
    const model = heldModel()
    const phrases: ModelPhrases = new ModelPhrases({
      model: () => model.client,
      onWritten: (names) => finder.rewrite(names),
      onProblem: (message) => assert.fail(message),
    })
    const finder = new ToolFinder({}, undefined, phrases)
    finder.follow([FORECAST, ISSUE])
    // another scope's list while the request is out: get_forecast leaves the index
    finder.follow([ISSUE])
    model.release()
    await phrases.settled()
    const back = await finder.search('do I need an umbrella tomorrow', [FORECAST, ISSUE], 3)
    assert.equal(back.noMatch, false)
    assert.equal(back.candidates[0]?.item.name, 'get_forecast')
  })

  it('one source per request; a stop aborts the request in flight and writes nothing; a one-shot reads and never asks', async () => {
    const p = scratch()
    const file = join(p.home, 'phrases.jsonl')
    const model = heldModel()
    const problems: string[] = []
    const phrases = new ModelPhrases({
      model: () => model.client,
      file,
      onWritten: () => {},
      onProblem: (message) => problems.push(message),
    })
    const finder = new ToolFinder({}, undefined, phrases)
    finder.follow([FORECAST, ISSUE])
    await until('the first request', () => model.requests.length === 1)
    assert.deepEqual(model.requests[0], ['get_forecast'])
    phrases.stop()
    await phrases.settled()
    assert.equal(model.requests.length, 1, 'nothing asked after the stop')
    assert.ok(!existsSync(file), 'nothing written after the stop')
    assert.equal(problems.length, 0, problems.join('\n'))

    // a second instance: both sources, one request each
    model.hold()
    const next = new ModelPhrases({
      model: () => model.client,
      file,
      onWritten: () => {},
      onProblem: (m) => problems.push(m),
    })
    new ToolFinder({}, undefined, next).follow([FORECAST, ISSUE])
    model.release()
    await next.settled()
    assert.deepEqual(model.requests.slice(1), [['get_forecast'], ['create_issue']])
    assert.equal(next.status.written, 2)

    // a one-shot command's: reads both from the file, asks nothing
    const once = new ModelPhrases({
      model: () => model.client,
      file,
      readOnly: true,
      onWritten: () => {},
      onProblem: (m) => problems.push(m),
    })
    const oneShot = new ToolFinder({}, undefined, once)
    const found = await oneShot.search('report a bug', [FORECAST, ISSUE], 3)
    await once.settled()
    assert.equal(found.candidates[0]?.item.name, 'create_issue')
    assert.equal(model.requests.length, 3)
    assert.equal(problems.length, 0, problems.join('\n'))
  })

  it('a torn last line is closed before the next record: both records read back', async () => {
    const p = scratch()
    const file = join(p.home, 'phrases.jsonl')
    p.write('.home/phrases.jsonl', '{"key": "torn", "phr')
    const model = heldModel()
    model.release()
    const phrases = new ModelPhrases({
      model: () => model.client,
      file,
      onWritten: () => {},
      onProblem: assert.fail,
    })
    new ToolFinder({}, undefined, phrases).follow([FORECAST])
    await phrases.settled()
    const lines = readFileSync(file, 'utf8').split('\n')
    assert.equal(lines[0], '{"key": "torn", "phr')
    assert.match(lines[1]!, /"phrases":\["will it rain this weekend"/)
    const reread = new ModelPhrases({
      model: () => undefined,
      file,
      onWritten: () => {},
      onProblem: assert.fail,
    })
    assert.equal(reread.status.written, 1)
  })
})
