// The console's Runs API against a real composition: the project's runs listed (with what can be
// replayed, and why not), one run's steps, a replay that matches its recording and one that no
// longer does (REPLAY_MISMATCH's turn and difference), forks at a step with the current plugins
// and where they depart, a cancel, broken transcript lines named file:line, and what is said when
// the agent loop is missing. A model that answers from the conversation stands in for a paid one.
import assert from 'node:assert/strict'
import { appendFileSync, readFileSync, statSync } from 'node:fs'
import { after, describe, it } from 'node:test'
import { Composition } from '../../../src/index.ts'
import type { AgentApi } from '../../../plugins/agent-loop/api.ts'
import type { ConsoleUrl, RunDetail, RunJob, RunsSection } from '../../../plugins/console/api.ts'
import { tempProject, type Project } from '../../helpers/project.ts'
import { RUNS_CONFIG, RUNS_DESK, SCRIPTED_MODEL } from './browser/fixtures.ts'
import { bearer, http, postJson, sse, type Sse } from './helpers.ts'

const started: Array<{ p: Project; c: Composition }> = []
after(async () => {
  for (const { p, c } of started) {
    await c.close().catch(() => {})
    p.cleanup()
  }
})

async function launch(config: string) {
  const p = tempProject({
    'plugins/desk.mjs': RUNS_DESK,
    'plugins/scripted.mjs': SCRIPTED_MODEL,
    'yoke.config.yaml': config,
  })
  const c = new Composition({
    cwd: p.dir,
    home: p.home,
    runMode: 'serve',
    command: 'dev',
    trust: true,
  })
  started.push({ p, c })
  const event = await c.start()
  assert.ok(event.ok, event.errors.map((e) => e.message).join('\n'))
  const url = (await c.kernel.ask('console/url', {})) as ConsoleUrl
  const token = new URL(url.url!).searchParams.get('token')!
  return { p, c, token, port: url.port! }
}

describe('the Runs view: list, replay, fork', () => {
  let p: Project
  let c: Composition
  let token: string
  let port: number
  let events: Sse
  let recorded: string
  after(() => events?.close())

  const runs = async () =>
    (
      (await http(port, '/api/snapshot', { headers: bearer(token) })).json() as {
        runs: RunsSection
      }
    ).runs
  const act = (id: string, verb: string, body: unknown = {}) =>
    http(port, `/api/runs/${id}/${verb}`, { method: 'POST', headers: postJson(token), body })
  /** Starts a job and waits for its end on the event stream. */
  const job = async (id: string, verb: string, body: unknown = {}): Promise<RunJob> => {
    const from = events.events.length
    const reply = await act(id, verb, body)
    assert.equal(reply.status, 200, reply.text)
    const begun = reply.json() as RunJob
    assert.equal(begun.state, 'running')
    return events.next('run-job', (j) => j.id === begun.id && j.state !== 'running', from, 20_000)
  }

  it('lists the runs, newest first, and says which cannot be replayed and why', async () => {
    ;({ p, c, token, port } = await launch(RUNS_CONFIG()))
    events = await sse(port, token)
    const agent = c.get('agent') as AgentApi
    const first = await agent.run('echo hey', { record: p.path('run.cassette.jsonl') }).result
    assert.equal(first.status, 'done', first.reason)
    assert.equal(first.text, 'the desk said: hey')
    recorded = first.runId
    const plain = await agent.run('echo there').result
    // a run made anywhere reaches the page by itself (the folder is watched while a page is open)
    await events.next('runs', (s: RunsSection) => s.runs.some((r) => r.id === plain.runId))
    const section = await runs()
    assert.deepEqual(
      section.runs.map((r) => r.id),
      [plain.runId, recorded],
    )
    const [two, one] = section.runs
    assert.equal(one!.status, 'done')
    assert.equal(one!.turns, 2)
    assert.equal(one!.task, 'echo hey')
    assert.equal(one!.cassette, p.path('run.cassette.jsonl'))
    assert.equal(one!.noReplay, undefined)
    assert.match(two!.noReplay!, /no recording to replay: run it with `yoke run --record FILE/)
    assert.equal((statSync(p.path(`.yoke/runs/${recorded}.jsonl`)).mode & 0o777).toString(8), '600')
  })

  it("shows one run's steps: the task, the tool call and its result, the answer", async () => {
    const reply = await http(port, `/api/runs/${recorded}`, { headers: bearer(token) })
    assert.equal(reply.status, 200, reply.text)
    const detail = reply.json() as RunDetail
    assert.deepEqual(
      detail.steps.map((s) => [s.turn, s.kind, s.name ?? s.text]),
      [
        [0, 'user', 'echo hey'],
        [1, 'tool-call', 'echo'],
        [1, 'tool-result', 'echo'],
        [2, 'text', 'the desk said: hey'],
        [2, 'note', 'done'],
      ],
    )
    assert.deepEqual(detail.problems, [])
  })

  it('replays a recorded run against the current tools: it matches', async () => {
    const done = await job(recorded, 'replay')
    assert.equal(done.state, 'matched', JSON.stringify(done))
    assert.equal(done.status, 'done')
    assert.equal(done.departure, undefined)
    const row = (await runs()).runs.find((r) => r.id === done.id)!
    assert.deepEqual(row.origin, { kind: 'replay', runId: recorded, by: 'console' })
  })

  it('after the tools changed, the replay names the turn and the first difference', async () => {
    p.write('yoke.config.yaml', RUNS_CONFIG('> '))
    const reloaded = await c.reload([p.path('yoke.config.yaml')])
    assert.ok(reloaded.ok)
    const done = await job(recorded, 'replay')
    assert.equal(done.state, 'departed')
    assert.equal(done.status, 'failed')
    assert.equal(done.mismatch?.turn, 2)
    assert.match(done.mismatch!.difference, /recorded "hey", now "> hey"/)
    assert.match(done.reason!, /^REPLAY_MISMATCH/)
  })

  it('forks at a step with the current plugins and says where the new run departs', async () => {
    const at1 = await job(recorded, 'fork', { turn: 1 })
    assert.equal(at1.state, 'departed', JSON.stringify(at1))
    assert.equal(at1.departure?.what, 'tool result echo')
    assert.equal(at1.departure?.oldTurn, 1)
    assert.equal(at1.departure?.newTurn, 1)
    assert.match(at1.departure!.difference, /recorded "hey", now "> hey"/)
    assert.equal(at1.compared?.old[at1.departure!.index]?.text, 'hey')
    assert.equal(at1.compared?.new[at1.departure!.index]?.text, '> hey')

    // from turn 2 on the old tool result is in the conversation: the fork does what the run did
    const at2 = await job(recorded, 'fork', { turn: 2 })
    assert.equal(at2.state, 'matched', JSON.stringify(at2))
    // the fork's transcript holds the conversation it went on from (and can be forked again)
    const detail = (
      await http(port, `/api/runs/${at2.id}`, { headers: bearer(token) })
    ).json() as RunDetail
    assert.deepEqual(
      detail.steps.filter((s) => s.turn === 0).map((s) => [s.kind, s.name ?? s.text]),
      [
        ['user', 'echo hey'],
        ['tool-call', 'echo'],
        ['tool-result', 'echo'],
      ],
    )
    assert.deepEqual(detail.run.origin, { kind: 'fork', runId: recorded, turn: 2, by: 'console' })
    const bad = await act(recorded, 'fork', { turn: 9 })
    assert.equal(bad.status, 400)
    assert.match(bad.json().error.message, /1 to 2/)
  })

  it('cancels a fork that runs', async () => {
    // the recorded run's wait ends by itself, so the run ends on its turn budget at once (not at
    // the runtime's 5-minute call timeout); the fork's wait below holds until the cancel
    const desk = globalThis as { deskWaitsEnd?: boolean }
    desk.deskWaitsEnd = true
    const waited = await (c.get('agent') as AgentApi)
      .run('wait', { budget: { maxTurns: 1 } })
      .result.finally(() => delete desk.deskWaitsEnd)
    assert.equal(waited.status, 'budget')
    const from = events.events.length
    const begun = (await act(waited.runId, 'fork', { turn: 1 })).json() as RunJob
    const cancel = await act(begun.id, 'cancel')
    assert.equal(cancel.status, 200, cancel.text)
    const ended = await events.next(
      'run-job',
      (j) => j.id === begun.id && j.state !== 'running',
      from,
    )
    assert.equal(ended.state, 'cancelled')
    assert.match(ended.reason, /cancelled from the console/)
  })

  it('names a broken transcript line by file:line, refuses ids that are not runs', async () => {
    const file = p.path(`.yoke/runs/${recorded}.jsonl`)
    const lines = readFileSync(file, 'utf8').split('\n').length
    appendFileSync(file, 'not json\n')
    const detail = (
      await http(port, `/api/runs/${recorded}`, { headers: bearer(token) })
    ).json() as RunDetail
    assert.deepEqual(detail.problems, [
      `${file}:${lines}: not a transcript line (not JSON, or no type)`,
    ])
    for (const id of ['..%2F..%2Fyoke.config', '.hidden'])
      assert.equal((await http(port, `/api/runs/${id}`, { headers: bearer(token) })).status, 400)
    assert.equal((await http(port, '/api/runs/nope', { headers: bearer(token) })).status, 404)
    assert.equal((await act('nope', 'replay')).status, 404)
  })
})

describe('the Runs view without an agent loop', () => {
  it('says replay and fork need one, and how to add it', async () => {
    const config = RUNS_CONFIG().replace(/ {2}agent:\n {4}use: agent-loop\n/, '')
    const { token, port, p } = await launch(config)
    p.write('.yoke/runs/20261205-000000-abcd0123.jsonl', '{"type":"start","task":"t"}\n')
    const snap = (await http(port, '/api/snapshot', { headers: bearer(token) })).json()
    const section = snap.runs as RunsSection
    assert.match(section.blocked!.replay!, /no agent loop .*agent: \{ use: agent-loop \}/)
    assert.equal(section.runs[0]!.status, 'unfinished')
    const reply = await http(port, '/api/runs/20261205-000000-abcd0123/fork', {
      method: 'POST',
      headers: postJson(token),
      body: { turn: 1 },
    })
    assert.equal(reply.status, 409)
    assert.match(reply.json().error.message, /no agent loop/)
  })
})
