// tool-search on real compositions (createYoke on temporary projects, real MCP servers over stdio,
// a real exec package, a real HTTP model server): exposure levels from rules, `auto` at the token
// budget, the exact-name guarantee, no match as an answer, the index following hot reloads and
// list_changed, a deferred tool found and then called through the pipeline (policy still asks),
// and `yoke tools search` / `yoke tools list` (bin runs dist: `npm run build` first).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base'
import type { AgentApi, AgentEvent, StepResult } from '../../../plugins/agent-loop/api.ts'
import { schemaText } from '../../../plugins/tool-search/exposure.ts'
import type { ToolSearchApi } from '../../../plugins/tool-search/index.ts'
import {
  createYoke,
  type ApprovalRequest,
  type RegisteredTool,
  type ToolResult,
  type Yoke,
} from '../../../src/index.ts'
import { nodeExe, writePackage } from '../../helpers/exec.ts'
import { FIXTURE } from '../../helpers/mcp.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'
import { ROOT, runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

/** a local plugin that registers the tools its config lists */
const LISTED = join(ROOT, 'test/fixtures/tool-search/tools.mjs')
/** an MCP server whose `next_catalog` tool swaps lookup_weather for convert_currency (list_changed) */
const CHANGING = join(ROOT, 'test/fixtures/tool-search/changing-server.mjs')

interface ListedTool {
  name: string
  description: string
  risk?: string
  params?: Record<string, string>
}
type Plugins = Record<string, { use: string; config?: unknown }>

const listed = (tools: ListedTool[]) => ({ use: LISTED, config: { tools } })
const mcpServer = (serverName: string, script = FIXTURE) => ({
  use: 'mcp-client',
  config: { serverName, command: process.execPath, args: [script] },
})
/** JSON is YAML: the config written as the project's yoke.config.yaml */
const configText = (plugins: Plugins) => JSON.stringify({ plugins }, null, 2)

const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
const names = (tools: readonly { name: string }[]) => tools.map((t) => t.name)
const found = (outcome: Awaited<ReturnType<ToolSearchApi['search']>>) =>
  outcome.candidates.map((c) => c.item.name)

describe('tool-search', () => {
  const projects: Project[] = []
  const yokes: Yoke[] = []
  after(async () => {
    for (const y of yokes) await y.close()
    for (const p of projects) p.cleanup()
  })
  /** a temporary project with this config, composed (base preset) and ready */
  async function compose(
    plugins: Plugins,
    options: Parameters<typeof createYoke>[0] = {},
    prepare?: (p: Project) => void,
  ) {
    const p = tempProject({ 'yoke.config.yaml': configText(plugins) })
    projects.push(p)
    prepare?.(p)
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {}, ...options })
    yokes.push(yoke)
    const event = await yoke.ready
    assert.deepEqual(event.failed, [], 'every instance applied')
    const search = () => {
      const api = yoke.get('toolSearch')
      assert.ok(api, 'the toolSearch service is provided')
      return api
    }
    const tool = (name: string): RegisteredTool => {
      const found = yoke.tools().find((t) => t.name === name)
      assert.ok(found, `${name} in ${names(yoke.tools()).join(', ')}`)
      return found
    }
    const offered = async (caller: string) => names(await search().offered(yoke.tools(), caller))
    return { p, yoke, search, tool, offered }
  }

  describe('exposure levels from rules', () => {
    const plugins: Plugins = {
      listed: listed([
        { name: 'read_notes', description: 'reads the notes of the day' },
        { name: 'lazy_report', description: 'builds the quarterly sales report' },
        { name: 'pinned_status', description: 'the status of the build' },
        { name: 'secret_reset', description: 'resets the vault', risk: 'high' },
      ]),
      packages: { use: 'exec-tools', config: { dirs: ['./packages'], watch: false } },
      fixture: mcpServer('fixture'),
      'tool-search': {
        use: 'tool-search',
        config: {
          semantic: 'off',
          default: 'direct',
          pinned: ['pinned_*'],
          rules: [
            // first match wins, and a pin outranks every rule
            { tool: 'pinned_*', level: 'hidden' },
            { tool: 'secret_*', level: 'hidden' },
            { source: 'mcp:fixture', level: 'hidden' },
            { source: 'exec:*', level: 'deferred' },
            { tool: 'lazy_*', level: 'deferred' },
          ],
        },
      },
    }
    const withPackage = (p: Project) =>
      void writePackage(p.path('packages'), 'textkit', {
        manifest: {
          name: 'textkit',
          version: '1.0.0',
          tools: [
            {
              name: 'word_count',
              description: 'counts the words of a text',
              input_schema: { type: 'object', properties: { text: { type: 'string' } } },
            },
          ],
        },
        exe: nodeExe(
          `process.stdout.write(JSON.stringify({ output: String(args.text).split(/\\s+/).length }))`,
        ),
      })

    it('direct, pinned, deferred (tool glob and exec source) and hidden (MCP source) as offered; hidden callable by name, deferred refused with the way to find it', async () => {
      const { search, tool, offered } = await compose(plugins, {}, withPackage)
      const offer = await offered('c1')
      for (const name of ['read_notes', 'pinned_status', 'tool_search'])
        assert.ok(offer.includes(name), `${name} offered: ${offer.join(', ')}`)
      for (const name of ['lazy_report', 'word_count', 'secret_reset', 'mcp__fixture__echo'])
        assert.ok(!offer.includes(name), `${name} not offered: ${offer.join(', ')}`)
      assert.deepEqual([...offer].sort(), offer, 'sorted by name')

      const api = search()
      const level = (name: string) => api.exposure(tool(name))
      assert.equal(level('read_notes'), 'direct')
      assert.equal(level('pinned_status'), 'direct', 'the pin wins over the hidden rule')
      assert.equal(level('lazy_report'), 'deferred')
      assert.equal(level('word_count'), 'deferred', 'exec:* source rule')
      assert.equal(tool('word_count').source, 'exec:textkit')
      assert.equal(level('secret_reset'), 'hidden')
      assert.equal(level('mcp__fixture__echo'), 'hidden', 'mcp:fixture source rule')

      // hidden: callable by name; deferred: refused until found
      assert.equal(api.refusal(tool('secret_reset'), 'c1'), undefined)
      assert.equal(api.refusal(tool('mcp__fixture__echo'), 'c1'), undefined)
      for (const name of ['lazy_report', 'word_count'])
        assert.match(api.refusal(tool(name), 'c1') ?? '', /not loaded: find it with tool_search/)

      // hidden tools are never found, not even by their exact name; deferred ones are
      assert.ok(!found(await api.search('secret_reset')).includes('secret_reset'))
      assert.ok(
        !found(await api.search('mcp__fixture__echo')).some((n) => n.startsWith('mcp__fixture')),
      )
      assert.equal(found(await api.search('count the words of my essay'))[0], 'word_count')
    })

    it('exposure() answers a declared deferred level before any offered() call', async () => {
      // what `yoke serve` or a status line would ask first; it must not claim "direct"
      const { search, tool } = await compose(plugins, {}, withPackage)
      assert.equal(search().exposure(tool('lazy_report')), 'deferred')
      assert.equal(search().exposure(tool('word_count')), 'deferred')
    })
  })

  describe('auto at the token budget', () => {
    const tools: ListedTool[] = [
      { name: 'keep_notes', description: 'keeps notes for later' },
      { name: 'render_chart', description: 'renders a chart', params: { data: 'rows to plot' } },
      { name: 'send_invoice', description: 'sends an invoice', params: { to: 'the customer' } },
    ]
    const plugins = (budgetTokens: number): Plugins => ({
      listed: listed(tools),
      'tool-search': {
        use: 'tool-search',
        config: { semantic: 'off', budgetTokens, pinned: ['keep_*'] },
      },
    })

    it('all direct while the schemas fit (counted with o200k), deferred one token below, pinned still direct', async () => {
      const { p, yoke, search, offered } = await compose(plugins(1_000_000))
      const schemas = yoke.tools().filter((t) => t.name !== 'tool_search')
      const tokens = schemas.reduce((sum, t) => sum + countTokens(schemaText(t)), 0)
      assert.ok(tokens > 100, `${tokens} tokens`)
      const everything = names(schemas)

      const budget = async (budgetTokens: number) => {
        p.write('yoke.config.yaml', configText(plugins(budgetTokens)))
        assert.deepEqual((await yoke.reload()).restarted, ['tool-search'])
        return offered('c')
      }
      const fits = await budget(tokens)
      assert.deepEqual(fits, [...everything].sort(), 'at the budget: all direct, no tool_search')
      assert.equal(
        search().exposure(yoke.tools().find((t) => t.name === 'render_chart')!),
        'direct',
      )
      const columns = async () =>
        (await yoke.composition.kernel.ask('tool-search/tool-columns', {})) as {
          exposure: Record<string, string>
        }
      const { exposure } = await columns()
      assert.equal(exposure.tool_search, 'not offered')

      const over = await budget(tokens - 1)
      assert.deepEqual(over, ['keep_notes', 'tool_search'], 'one token over: only the pin')
      const levels = (await columns()).exposure
      assert.equal(levels.render_chart, 'deferred')
      assert.equal(levels.keep_notes, 'direct')
      assert.equal(levels.tool_search, 'direct')
    })
  })

  describe('ranking: exact names, select, no match', () => {
    // many tools about creating issues; the one named create_issue says nothing of the sort
    const similar: ListedTool[] = ['comment', 'label', 'template', 'milestone', 'link', 'draft']
      .flatMap((what) => [
        {
          name: `create_issue_${what}`,
          description: `create an issue ${what}: creates the ${what} of a new issue in the issue tracker`,
          params: { issue: 'the issue to create it on' },
        },
        {
          name: `issue_${what}_create`,
          description: `creates an issue ${what} for an issue`,
        },
      ])
      .concat([
        { name: 'create_issue', description: 'opens a ticket' },
        { name: 'echo_text', description: 'echo: echoes the text back, echo echo' },
        { name: 'fetch', description: 'downloads a URL' },
        {
          name: 'prefetch_cache',
          description: 'prefetch: fetch pages ahead, fetch into the cache',
        },
        { name: 'translate_text', description: 'translates a text into another language' },
      ])
    let composed: Awaited<ReturnType<typeof compose>> | undefined
    const once = async () =>
      (composed ??= await compose({
        listed: listed(similar),
        github: mcpServer('github'),
        gitlab: mcpServer('gitlab'),
        'tool-search': { use: 'tool-search', config: { semantic: 'off', default: 'deferred' } },
      }))

    it('a tool whose exact name is in the query comes first, among many similar ones', async () => {
      const { search } = await once()
      const api = search()
      // without the exact name, BM25 prefers the tools that talk about creating issues
      assert.notEqual(found(await api.search('create issue'))[0], 'create_issue')
      const outcome = await api.search('please use create_issue for this bug')
      assert.equal(found(outcome)[0], 'create_issue')
      assert.equal(outcome.candidates[0]!.why, 'exact name')
      assert.equal(outcome.noMatch, false)
      assert.equal(found(await api.search('create_issue'))[0], 'create_issue')
    })

    it('an MCP tool by `server/tool` or its full name: that server’s tool first, not the other’s', async () => {
      const { search } = await once()
      const api = search()
      for (const [query, first] of [
        ['gitlab/echo the text', 'mcp__gitlab__echo'],
        ['call github/echo', 'mcp__github__echo'],
        ['github.echo', 'mcp__github__echo'],
        ['mcp__gitlab__echo', 'mcp__gitlab__echo'],
      ] as const) {
        const outcome = await api.search(query)
        assert.equal(found(outcome)[0], first, `${query}: ${found(outcome).join(', ')}`)
        const exact = outcome.candidates
          .filter((c) => c.why === 'exact name')
          .map((c) => c.item.name)
        assert.deepEqual(exact, [first], `${query}: only ${first} is named exactly`)
      }
      // the bare name names both servers' echo, before echo_text that says "echo" four times
      const bare = found(await api.search('echo'))
      assert.deepEqual(bare.slice(0, 2).sort(), ['mcp__github__echo', 'mcp__gitlab__echo'])
    })

    it('the exact name counts wherever it stands in the query, also after a word that contains it; a plain word in a sentence is a word', async () => {
      const { search } = await once()
      const outcome = await search().search('prefetch is not what I want: call `fetch`')
      assert.equal(found(outcome)[0], 'fetch', found(outcome).join(', '))
      const sentence = await search().search('fetch the page and summarise it')
      assert.notEqual(sentence.candidates[0]?.why, 'exact name', 'a plain word is not a name')
      assert.equal(found(await search().search('fetch'))[0], 'fetch', 'the whole query is')
    })

    it('select:a,b names tools outright', async () => {
      const { search } = await once()
      const outcome = await search().search('select:translate_text, mcp__gitlab__echo')
      assert.deepEqual(found(outcome).slice(0, 2).sort(), ['mcp__gitlab__echo', 'translate_text'])
      assert.ok(outcome.candidates.slice(0, 2).every((c) => c.why === 'exact name'))
      assert.equal(outcome.noMatch, false)
    })

    it('a typo in a name still finds the tool', async () => {
      const { search } = await once()
      for (const typo of ['transalte', 'crate_isue_coment']) {
        const outcome = await search().search(typo)
        assert.equal(outcome.noMatch, false, typo)
        assert.equal(
          found(outcome)[0],
          typo === 'transalte' ? 'translate_text' : 'create_issue_comment',
        )
      }
    })

    it('no match is an answer: noMatch, and tool_search says "No tool matches" and loads nothing', async () => {
      const { yoke, search, offered } = await once()
      assert.equal((await search().search('book a flight to Lisbon')).noMatch, true)
      assert.equal((await search().search('please do it')).noMatch, true, 'stop words only')
      const before = await offered('nomatch')
      const result = await yoke.call(
        'tool_search',
        { query: 'book a flight to Lisbon' },
        { caller: 'nomatch' },
      )
      assert.equal(result.status, 'ok', text(result))
      assert.match(text(result), /^No tool matches "book a flight to Lisbon"\. /)
      assert.match(text(result), /do not guess a tool name/)
      // the structured answer reaches the caller (the runtime's key is `structured`)
      assert.equal((result.structured as { noMatch?: boolean } | undefined)?.noMatch, true)
      assert.deepEqual(await offered('nomatch'), before, 'nothing loaded')
      // a query that does match loads what it found, for that caller
      const hit = await yoke.call('tool_search', { query: 'translate_text' }, { caller: 'nomatch' })
      assert.match(
        text(hit),
        /^Found \d+ \(by words only: semantic search is off; callable from your next step\):\n- translate_text /,
      )
      assert.ok((await offered('nomatch')).includes('translate_text'))
    })
  })

  describe('the index follows the tools', () => {
    const plugins = (tools: ListedTool[]): Plugins => ({
      listed: listed(tools),
      changing: mcpServer('changing', CHANGING),
      'tool-search': { use: 'tool-search', config: { semantic: 'off', default: 'deferred' } },
    })
    const base: ListedTool[] = [{ name: 'read_notes', description: 'reads the notes of the day' }]
    const summarize = { name: 'summarize_pdf', description: 'summarizes a PDF document' }

    it('a tool added and removed by a config edit (hot reload)', async () => {
      const { p, yoke, search } = await compose(plugins(base))
      assert.equal((await search().search('summarize a pdf document')).noMatch, true)
      p.write('yoke.config.yaml', configText(plugins([...base, summarize])))
      assert.deepEqual((await yoke.reload()).restarted, ['listed'])
      const added = await search().search('summarize a pdf document')
      assert.equal(found(added)[0], 'summarize_pdf')
      assert.equal(added.noMatch, false)
      p.write('yoke.config.yaml', configText(plugins(base)))
      await yoke.reload()
      const removed = await search().search('summarize a pdf document')
      assert.ok(!found(removed).includes('summarize_pdf'), found(removed).join(', '))
      assert.equal(removed.noMatch, true)
    })

    it("an MCP server's list_changed: the new tool found, the dropped one gone", async () => {
      const { yoke, search } = await compose(plugins(base))
      assert.equal(
        found(await search().search('weather forecast'))[0],
        'mcp__changing__lookup_weather',
      )
      await swapCatalog(yoke)
      assert.equal(
        found(await search().search('convert currency'))[0],
        'mcp__changing__convert_currency',
      )
      assert.ok(
        !found(await search().search('weather forecast')).includes('mcp__changing__lookup_weather'),
      )
    })

    it('an MCP tool whose public name had to change is still named exactly by `server/tool`', async () => {
      // mcp-client cuts and hashes a name with a dot (the raw name is kept in the annotations)
      const { yoke, search } = await compose(plugins(base))
      const dotted = yoke.tools().find((t) => t.annotations?.mcpTool === 'files.read_text')
      assert.ok(dotted, names(yoke.tools()).join(', '))
      assert.notEqual(dotted.name, 'mcp__changing__files.read_text', 'the public name differs')
      for (const query of ['changing/files.read_text', 'use files.read_text on a.txt']) {
        const outcome = await search().search(query)
        assert.equal(found(outcome)[0], dotted.name, `${query}: ${found(outcome).join(', ')}`)
        assert.equal(outcome.candidates[0]!.why, 'exact name', query)
      }
    })

    it('tool_search by a caller that was offered tools before the list changed sees the change', async () => {
      // the agent loop calls offered() once per turn; a list_changed (or reload) may land between
      // that and the model's tool_search in the same turn
      const { yoke, offered } = await compose(plugins(base))
      await offered('agent:run-1')
      await swapCatalog(yoke)
      const weather = await yoke.call(
        'tool_search',
        { query: 'weather forecast' },
        { caller: 'agent:run-1' },
      )
      assert.doesNotMatch(text(weather), /lookup_weather/, 'a tool that is gone is not offered')
      const currency = await yoke.call(
        'tool_search',
        { query: 'convert currency' },
        { caller: 'agent:run-1' },
      )
      assert.match(text(currency), /mcp__changing__convert_currency/)
    })

    async function swapCatalog(yoke: Yoke) {
      const swapped = await yoke.call('mcp__changing__next_catalog', {})
      assert.equal(text(swapped), 'catalog 2')
      await until('the new tool list', () => {
        const now = names(yoke.tools())
        return (
          now.includes('mcp__changing__convert_currency') &&
          !now.includes('mcp__changing__lookup_weather')
        )
      })
    }
  })

  describe('a deferred tool found, then called through the pipeline', () => {
    const plugins: Plugins = {
      listed: listed([
        { name: 'read_notes', description: 'reads the notes of the day' },
        { name: 'wipe_disk', description: 'erases every file on the disk', risk: 'high' },
      ]),
      fixture: mcpServer('fixture'),
      'tool-search': {
        use: 'tool-search',
        config: {
          semantic: 'off',
          default: 'direct',
          rules: [
            { tool: 'wipe_*', level: 'deferred' },
            { source: 'mcp:fixture', level: 'hidden' },
          ],
        },
      },
    }

    it('loaded by the tool_search tool for its caller only; the call still asks (denied → DENIED)', async () => {
      const asked: ApprovalRequest[] = []
      const { yoke, search, tool, offered } = await compose(plugins, {
        approval: (request) => (asked.push(request), 'deny'),
      })
      assert.ok(!(await offered('app-1')).includes('wipe_disk'))
      const result = await yoke.call(
        'tool_search',
        { query: 'erase the disk' },
        { caller: 'app-1' },
      )
      assert.equal(result.status, 'ok', text(result))
      assert.match(text(result), /- wipe_disk \(native, high risk;/)
      assert.ok((await offered('app-1')).includes('wipe_disk'), 'offered to app-1 now')
      assert.equal(search().refusal(tool('wipe_disk'), 'app-1'), undefined)
      assert.ok(!(await offered('app-2')).includes('wipe_disk'), 'not to another caller')
      assert.match(search().refusal(tool('wipe_disk'), 'app-2') ?? '', /tool_search/)

      const wiped = await yoke.call('wipe_disk', {}, { caller: 'app-1' })
      assert.equal(wiped.status, 'DENIED', text(wiped))
      assert.deepEqual(
        asked.map((r) => [r.call.name, r.call.caller]),
        [['wipe_disk', 'app-1']],
      )
    })

    describe('by the agent loop against a real model server', () => {
      let server: ModelServer
      after(() => server?.close())

      it('a hidden tool called by name runs; a deferred one is refused until found, then offered and asked for', async () => {
        process.env.TEST_TOOL_SEARCH_KEY = 'sk-test'
        server = await modelServer([
          {
            toolCalls: [
              { id: 'h', name: 'mcp__fixture__echo', args: { text: 'hidden but callable' } },
              { id: 'w0', name: 'wipe_disk', args: {} },
            ],
          },
          { toolCalls: [{ id: 's', name: 'tool_search', args: { query: 'erase every file' } }] },
          { toolCalls: [{ id: 'w1', name: 'wipe_disk', args: {} }] },
          { text: 'I was not allowed to.' },
        ])
        const asked: ApprovalRequest[] = []
        const { yoke, search } = await compose(
          {
            ...plugins,
            model: {
              use: 'openai',
              config: {
                model: 'gpt-test',
                apiKeyEnv: 'TEST_TOOL_SEARCH_KEY',
                baseUrl: server.openaiBaseUrl,
                maxRetries: 0,
              },
            },
            agent: { use: 'agent-loop', config: { transcripts: false } },
          },
          { approval: (request) => (asked.push(request), 'deny') },
        )
        const agent = yoke.get('agent') as AgentApi | undefined
        assert.ok(agent, 'the agent service')
        const events: AgentEvent[] = []
        const result = await agent.run('wipe the disk', { onEvent: (e) => events.push(e) }).result
        assert.equal(result.status, 'done', result.reason)
        assert.equal(result.text, 'I was not allowed to.')

        const sent = server.requests.map((r) =>
          (r.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
        )
        assert.equal(sent.length, 4)
        for (const tools of sent) {
          assert.ok(!tools.includes('mcp__fixture__echo'), 'the hidden tool is never offered')
          assert.ok(tools.includes('read_notes') && tools.includes('tool_search'))
        }
        assert.ok(!sent[0]!.includes('wipe_disk') && !sent[1]!.includes('wipe_disk'))
        assert.ok(sent[2]!.includes('wipe_disk'), 'offered from the turn after the search')

        const results = events
          .filter(
            (e): e is { type: 'tool-result'; turn: number; result: StepResult } =>
              e.type === 'tool-result',
          )
          .map((e) => e.result)
        const by = (id: string) => results.find((r) => r.id === id)!
        assert.equal(by('h').status, 'ok', by('h').text)
        assert.equal(by('h').text, 'hidden but callable')
        assert.equal(by('w0').status, 'UNKNOWN_TOOL')
        assert.match(by('w0').text, /wipe_disk is not loaded: find it with tool_search first/)
        assert.equal(by('s').status, 'ok')
        assert.equal(by('w1').status, 'DENIED', by('w1').text)
        assert.deepEqual(
          asked.map((r) => [r.call.name, r.call.caller]),
          [['wipe_disk', `agent:${result.runId}`]],
          'policy asked once, for the loaded call',
        )
        // the run ended: what it loaded is forgotten
        assert.ok(
          !names(await search().offered(yoke.tools(), `agent:${result.runId}`)).includes(
            'wipe_disk',
          ),
        )
      })
    })
  })

  describe('yoke tools search / tools list', () => {
    const project = () => {
      const p = tempProject({
        'yoke.config.yaml': configText({
          listed: listed([
            { name: 'create_issue', description: 'opens a ticket' },
            { name: 'create_issue_comment', description: 'comments on an issue' },
            { name: 'secret_reset', description: 'resets the vault' },
            { name: 'read_notes', description: 'reads the notes of the day' },
          ]),
          'tool-search': {
            use: 'tool-search',
            config: {
              semantic: 'off',
              default: 'direct',
              rules: [
                { tool: 'create_*', level: 'deferred' },
                { tool: 'secret_*', level: 'hidden' },
              ],
            },
          },
        }),
      })
      projects.push(p)
      return p
    }

    it('search: text, --json, exit 1 on no match; list --json: each tool’s exposure', async () => {
      const p = project()
      const run = (...args: string[]) => runYoke(args, { cwd: p.dir, home: p.home })
      const [plain, json, none, list] = await Promise.all([
        run('tools', 'search', 'create_issue'),
        run('tools', 'search', 'comment on an issue', '--json', '--limit', '1'),
        run('tools', 'search', 'book a flight to Lisbon'),
        run('tools', 'list', '--json'),
      ])

      assert.equal(plain.code, 0, plain.stderr)
      assert.match(
        plain.stdout,
        /^create_issue {2}native · sha256:[0-9a-f]{12} · low · exact · exact name\n {2}opens a ticket\n/,
      )

      assert.equal(json.code, 0, json.stderr)
      const answer = JSON.parse(json.stdout)
      assert.equal(answer.ok, true)
      assert.equal(answer.noMatch, false)
      assert.equal(answer.candidates.length, 1, '--limit 1')
      assert.equal(answer.candidates[0].name, 'create_issue_comment')
      assert.equal(answer.candidates[0].exact, false)
      assert.equal(typeof answer.candidates[0].score, 'number')

      assert.equal(none.code, 1, none.stdout + none.stderr)
      assert.equal(none.stdout, 'no tool matches "book a flight to Lisbon"\n')

      assert.equal(list.code, 0, list.stderr)
      const exposure = Object.fromEntries(
        (JSON.parse(list.stdout).tools as Array<{ name: string; exposure: string }>).map((t) => [
          t.name,
          t.exposure,
        ]),
      )
      assert.equal(exposure.create_issue, 'deferred')
      assert.equal(exposure.create_issue_comment, 'deferred')
      assert.equal(exposure.secret_reset, 'hidden')
      assert.equal(exposure.read_notes, 'direct')
      assert.equal(exposure.tool_search, 'direct', 'offered: something is deferred')
    })
  })
})
