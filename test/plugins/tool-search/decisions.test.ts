// tool-search's decisions on a ToolSearch object alone (no kernel, no model): what a caller is
// offered (direct, what it loaded, tool_search while anything is deferred), which unoffered tools it
// may call by name, what a caller's forget drops, what the search control answers, and the exposure
// column of `yoke tools list`. The compositions in tool-search.test.ts show the same end to end.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TOOL_SEARCH } from '../../../plugins/tool-search/api.ts'
import { ToolSearch, type ToolSearchConfig } from '../../../plugins/tool-search/tool-search.ts'
import type { RegisteredTool } from '../../../src/index.ts'
import { tool } from './tools.ts'

const tools = [
  tool('read_file', 'Read a text file from the workspace'),
  tool('create_issue', 'Open a new issue on a GitHub repository', 'mcp:github'),
  tool('close_issue', 'Close an issue on a GitHub repository', 'mcp:github'),
  tool('secret_admin', 'Rotate the deployment secrets'),
  tool(TOOL_SEARCH, 'Find a tool you do not have yet'),
]

const config = (over: Partial<ToolSearchConfig> = {}): ToolSearchConfig => ({
  default: 'auto',
  budgetTokens: 10_000,
  pinned: ['read_file'],
  rules: [
    { tool: '*', source: 'mcp:github', level: 'deferred' },
    { tool: 'secret_*', level: 'hidden' },
  ],
  limit: 5,
  threshold: 0.35,
  ...over,
})

const names = (list: readonly RegisteredTool[]) => list.map((t) => t.name)

describe('ToolSearch: the decisions, without a composition', () => {
  it('offers direct tools and tool_search while something is deferred; a loaded tool from then on, to its caller only', async () => {
    const search = new ToolSearch(config(), () => tools)
    assert.deepEqual(names(await search.offered(tools, 'run-1')), ['read_file', TOOL_SEARCH])
    search.load('run-1', ['create_issue'])
    assert.deepEqual(names(await search.offered(tools, 'run-1')), [
      'create_issue',
      'read_file',
      TOOL_SEARCH,
    ])
    assert.deepEqual(names(await search.offered(tools, 'run-2')), ['read_file', TOOL_SEARCH])
    search.forget('run-1')
    assert.deepEqual(names(await search.offered(tools, 'run-1')), ['read_file', TOOL_SEARCH])
  })

  it('without anything deferred, tool_search is not offered', async () => {
    const search = new ToolSearch(config({ rules: [] }), () => tools)
    const offered = names(await search.offered(tools, 'run'))
    assert.ok(!offered.includes(TOOL_SEARCH), offered.join(', '))
    assert.ok(offered.includes('create_issue'), 'auto within the budget is direct')
  })

  it('auto beyond the token budget is deferred', async () => {
    const search = new ToolSearch(config({ rules: [], pinned: [], budgetTokens: 5 }), () => tools)
    assert.deepEqual(names(await search.offered(tools, 'run')), [TOOL_SEARCH])
    assert.equal(search.exposure(tools[0]!), 'deferred')
  })

  it('refuses an unoffered call with the reason; a hidden or loaded tool may be called by name', async () => {
    const search = new ToolSearch(config(), () => tools)
    await search.offered(tools, 'run')
    const [, create, , secret] = tools
    assert.match(search.refusal(create!, 'run')!, /not loaded: find it with tool_search first/)
    assert.equal(search.refusal(secret!, 'run'), undefined, 'hidden: callable, never offered')
    search.load('run', ['create_issue'])
    assert.equal(search.refusal(create!, 'run'), undefined)
    assert.match(search.refusal(create!, 'other')!, /not loaded/)
  })

  it("answers the search control on words (semantic off), never with a hidden tool; the plugin's limit by default", async () => {
    const search = new ToolSearch(config({ limit: 1 }), () => tools)
    const found = await search.find({ query: 'open an issue on github' }, false)
    assert.equal(found.noMatch, false)
    assert.equal(found.arms, 'lexical')
    assert.equal(found.semantic, 'off')
    assert.deepEqual(
      found.candidates.map((c) => c.name),
      ['create_issue'],
    )
    const more = await search.find({ query: 'issue', limit: 3 }, false)
    assert.equal(more.candidates.length, 2)
    const secret = await search.find({ query: 'rotate deployment secrets' }, false)
    assert.ok(!secret.candidates.some((c) => c.name === 'secret_admin'))
  })

  it('contributes the exposure column of `yoke tools list`: every tool, and whether tool_search is offered', async () => {
    const search = new ToolSearch(config(), () => tools)
    assert.deepEqual(await search.columns(), {
      exposure: {
        read_file: 'direct',
        create_issue: 'deferred',
        close_issue: 'deferred',
        secret_admin: 'hidden',
        [TOOL_SEARCH]: 'direct',
      },
    })
    const none = new ToolSearch(config({ rules: [] }), () => tools)
    assert.equal((await none.columns()).exposure?.[TOOL_SEARCH], 'not offered')
  })
})
