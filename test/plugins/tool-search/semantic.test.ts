// tool-search's semantic arm with the real model (the Universal Sentence Encoder from npm, loaded
// once for the file): a paraphrase the words miss is found by meaning, a need nothing serves is
// still no match, a model that is missing or fails leaves search lexical, vectors are cached by
// text (in memory and on disk), and a composition answers tool_search by words and meaning once
// its arm has settled. The one-shot CLI path never loads the model for `yoke tools list`.
import assert from 'node:assert/strict'
import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { RegisteredTool, ToolResult } from '../../../src/index.ts'
import { createYoke, type Yoke } from '../../../src/index.ts'
import {
  loadUniversalSentenceEncoder,
  VectorCache,
  type Embedder,
} from '../../../plugins/tool-search/embedder.ts'
import { ToolFinder } from '../../../plugins/tool-search/finder.ts'
import { SemanticArm } from '../../../plugins/tool-search/semantic.ts'
import { runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { EVERYDAY, LISTED } from './tools.ts'

const TOOLS = EVERYDAY
/** what the finder reads of a registered tool */
const asTools = (tools: typeof TOOLS) =>
  tools.map((t) => ({
    ...t,
    source: 'native',
    inputSchema: { type: 'object' },
  })) as unknown as RegisteredTool[]
const names = (outcome: { candidates: Array<{ item: { name: string } }> }) =>
  outcome.candidates.map((c) => c.item.name)

/** The real model, counting what it embeds. */
function counted(model: Embedder) {
  const calls = { texts: 0 }
  const embedder: Embedder = {
    id: model.id,
    dimensions: model.dimensions,
    embed(texts) {
      calls.texts += texts.length
      return model.embed(texts)
    },
  }
  return { embedder, calls }
}

describe('tool-search: the semantic arm', () => {
  let model: Embedder
  before(async () => {
    model = await loadUniversalSentenceEncoder()
  })

  async function finders(cache?: VectorCache) {
    const { embedder, calls } = counted(model)
    const arm = new SemanticArm({ load: async () => embedder, ...(cache && { cache }) })
    const hybrid = new ToolFinder({}, arm)
    const lexical = new ToolFinder({})
    arm.start()
    hybrid.follow(asTools(TOOLS))
    await arm.settled()
    return { arm, hybrid, lexical, calls }
  }

  it('finds by meaning what the words miss, and says so in why', async () => {
    const { arm, hybrid, lexical } = await finders()
    assert.equal(arm.state, 'ready')
    assert.equal(arm.embedded, TOOLS.length)
    const query = 'is it going to be sunny this weekend'
    const words = await lexical.search(query, asTools(TOOLS), 3)
    assert.ok(!names(words).includes('get_forecast'), `lexical: ${names(words).join(', ')}`)
    assert.equal(words.arms, 'lexical')
    const both = await hybrid.search(query, asTools(TOOLS), 3)
    assert.equal(both.arms, 'hybrid')
    assert.equal(names(both)[0], 'get_forecast')
    assert.match(both.candidates[0]!.why, /meaning 0\.\d\d/)
    // the brief's own example: no word in common with move_file, close in meaning
    const rename = await hybrid.search('rename draft.md', asTools(TOOLS), 3)
    assert.equal(names(rename)[0], 'move_file')
  })

  it('no match with both arms: a need nothing serves, though it shares words with real tools', async () => {
    const { hybrid } = await finders()
    for (const query of ['order a large pizza for delivery', 'book a flight to Lisbon']) {
      const outcome = await hybrid.search(query, asTools(TOOLS), 3)
      assert.equal(outcome.arms, 'hybrid')
      assert.equal(outcome.noMatch, true, `${query}: ${names(outcome).join(', ')}`)
    }
  })

  it('an exact name is first and the query is not embedded for it', async () => {
    const { hybrid, calls } = await finders()
    const before = calls.texts
    const outcome = await hybrid.search('send_email', asTools(TOOLS), 3)
    assert.equal(names(outcome)[0], 'send_email')
    assert.equal(outcome.candidates[0]!.why, 'exact name')
    assert.equal(calls.texts, before, 'no query embedded')
  })

  it('follows the tools: a changed text is embedded again, an unchanged one never', async () => {
    const { arm, hybrid, calls } = await finders()
    const embeddedFirst = calls.texts
    const changed = TOOLS.map((t) =>
      t.name === 'list_events' ? { ...t, description: 'Book a meeting room for a team.' } : t,
    )
    hybrid.follow(asTools(changed))
    await arm.settled()
    assert.equal(calls.texts - embeddedFirst, 1, 'only the changed tool')
    hybrid.follow(asTools(changed.filter((t) => t.name !== 'send_email')))
    assert.equal(arm.embedded, TOOLS.length - 1)
  })

  it('keeps vectors on disk by text: a second process embeds nothing again', async () => {
    const p = tempProject()
    try {
      const file = join(p.dir, 'cache', 'vectors')
      await finders(new VectorCache(file))
      assert.ok(statSync(file).size > 0)
      const again = await finders(new VectorCache(file))
      assert.equal(again.calls.texts, 0)
      assert.equal(again.arm.embedded, TOOLS.length)
      // a torn last record (a killed process) costs that record only
      writeFileSync(file, Buffer.concat([Buffer.from([1, 2, 3])]), { flag: 'a' })
      const torn = await finders(new VectorCache(file))
      assert.equal(torn.calls.texts, 0)
    } finally {
      p.cleanup()
    }
  })
})

describe('tool-search: without the model', () => {
  it('a model that does not load leaves search lexical, and says why', async () => {
    const states: string[] = []
    const arm = new SemanticArm({
      load: () => Promise.reject(new Error("Cannot find package '@energetic-ai/embeddings'")),
      onState: (s) => states.push(s),
    })
    const finder = new ToolFinder({}, arm)
    arm.start()
    const outcome = await finder.search('read the contents of a file', asTools(TOOLS), 3)
    await arm.settled()
    assert.deepEqual(states, ['loading', 'failed'])
    assert.equal(names(outcome)[0], 'read_file')
    const later = await finder.search('read the contents of a file', asTools(TOOLS), 3)
    assert.equal(later.arms, 'lexical')
    assert.equal(later.semantic, 'failed')
  })

  it('a model that fails while embedding leaves search lexical', async () => {
    const arm = new SemanticArm({
      load: async () => ({
        id: 'broken',
        dimensions: 4,
        embed: () => Promise.reject(new Error('out of memory')),
      }),
    })
    const finder = new ToolFinder({}, arm)
    arm.start()
    finder.follow(asTools(TOOLS))
    await arm.settled()
    assert.equal(arm.state, 'failed')
    const outcome = await finder.search('create a new issue', asTools(TOOLS), 3)
    assert.equal(outcome.arms, 'lexical')
    assert.equal(names(outcome)[0], 'create_issue')
  })
})

describe('tool-search: a composition with the semantic arm', () => {
  const yokes: Yoke[] = []
  const projects: Project[] = []
  after(async () => {
    for (const y of yokes) await y.close()
    for (const p of projects) p.cleanup()
  })
  const config = (semantic: string) =>
    JSON.stringify({
      plugins: {
        listed: { use: LISTED, config: { tools: TOOLS } },
        'tool-search': { use: 'tool-search', config: { default: 'deferred', semantic } },
      },
    })

  it('tool_search answers by words only until the arm settles, then by words and meaning', async () => {
    const p = tempProject({ 'yoke.config.yaml': config('auto') })
    projects.push(p)
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {} })
    yokes.push(yoke)
    assert.deepEqual((await yoke.ready).failed, [])
    const api = yoke.get('toolSearch')!
    await api.semanticSettled()
    // every searchable tool has its vector (the base preset adds a few of its own)
    const status = api.semantic()
    assert.equal(status.state, 'ready')
    assert.ok(status.tools >= TOOLS.length, `${status.tools} tools`)
    assert.equal(status.embedded, status.tools)
    const result: ToolResult = await yoke.call('tool_search', {
      query: 'is it going to be sunny this weekend',
    })
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
    const structured = result.structured as { arms: string; tools: Array<Record<string, unknown>> }
    assert.equal(structured.arms, 'hybrid')
    if (/^No tool matches/.test(text)) assert.equal(structured.tools[0]?.name, 'get_forecast')
    else assert.match(text, /^Found \d+ \(by words and meaning;[^\n]*\n- get_forecast /)
    // each candidate carries its id, a version (a content hash: native tools declare none), score and why
    const first = structured.tools[0]!
    assert.equal(first.id, 'get_forecast')
    assert.match(String(first.version), /^sha256:[0-9a-f]{12}$/)
    assert.equal(typeof first.score, 'number')
    assert.match(String(first.why), /meaning/)
    // the vectors were kept under $YOKE_HOME/cache
    assert.ok(existsSync(join(p.home, 'cache', 'tool-search', 'use-lite-512.vectors')))
  })

  it('semantic: off never starts the arm', async () => {
    const p = tempProject({ 'yoke.config.yaml': config('off') })
    projects.push(p)
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {} })
    yokes.push(yoke)
    await yoke.ready
    const api = yoke.get('toolSearch')!
    await api.semanticSettled()
    assert.equal(api.semantic().state, 'off')
    assert.equal((await api.search('is it going to be sunny this weekend')).arms, 'lexical')
  })

  it('`yoke tools list` does not load the model; `yoke tools search` waits for it (bin runs dist)', async () => {
    const p = tempProject({ 'yoke.config.yaml': config('auto') })
    projects.push(p)
    // a preload that says, at exit, whether any module of the model's packages was loaded
    const marker = join(p.dir, 'loaded-model')
    p.write(
      'detect.cjs',
      `process.on('exit', () => { if (Object.keys(require.cache).some((k) => k.includes('@energetic-ai'))) require('fs').writeFileSync(${JSON.stringify(marker)}, 'yes') })\n`,
    )
    const env = { NODE_OPTIONS: `--require ${join(p.dir, 'detect.cjs')}` }
    const list = await runYoke(['tools', 'list'], { cwd: p.dir, env })
    assert.equal(list.code, 0, list.stderr)
    assert.ok(!existsSync(marker), 'tools list loaded the model')
    const found = await runYoke(
      ['tools', 'search', 'is it going to be sunny this weekend', '--json'],
      {
        cwd: p.dir,
        env,
      },
    )
    const answer = JSON.parse(found.stdout) as { arms: string; candidates: Array<{ name: string }> }
    assert.equal(answer.arms, 'hybrid', `${found.stdout}\n${found.stderr}`)
    assert.equal(answer.candidates[0]?.name, 'get_forecast')
    assert.ok(existsSync(marker), 'the detector works: tools search loaded the model')
  })
})
