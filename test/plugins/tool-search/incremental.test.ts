// The searchable set kept between searches (searchable.ts): a ToolSearch told the runtime's changes
// and listings lists the global tools only when something may have changed them, and a change is
// still seen by the next search: a batch of names at once, a removed tool never found again, a
// visible filter that changed (its taps, or someone else's listing), hidden tools and another
// scope's offer. Then the same on a composed kernel (runtime, policy, tool-search) through real
// tool_search calls: registration after a search, removal, a policy's bare deny, a scope's mask.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { after, describe, it } from 'node:test'
import policyPlugin from '../../../plugins/policy/index.ts'
import { TOOL_SEARCH } from '../../../plugins/tool-search/api.ts'
import toolSearchPlugin from '../../../plugins/tool-search/index.ts'
import { ToolSearch, type ToolSearchConfig } from '../../../plugins/tool-search/tool-search.ts'
import {
  GLOBAL,
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Plugin,
  type RegisteredTool,
  type ToolResult,
  type ToolRuntime,
} from '../../../src/index.ts'
import { tempProject } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'
import { tool } from './tools.ts'

const config = (over: Partial<ToolSearchConfig> = {}): ToolSearchConfig => ({
  default: 'deferred',
  budgetTokens: 10_000,
  pinned: [],
  rules: [{ tool: 'secret_*', level: 'hidden' }],
  limit: 5,
  threshold: 0.35,
  ...over,
})

/** A runtime stand-in: its global tools, how often they were listed, its visible taps. */
function runtimeLike(initial: RegisteredTool[]) {
  const state = { tools: [...initial], lists: 0, taps: [{ name: 'policy' }] as unknown[] }
  const search = new ToolSearch(
    config(),
    () => {
      state.lists++
      return [...state.tools]
    },
    undefined,
    () => state.taps,
  )
  const found = async (query: string, options: { caller?: string; scope?: string } = {}) =>
    (await search.search(query, options)).candidates.map((c) => c.item.name)
  /** tools added and removed at once, announced as one change (a batch) */
  const change = (added: RegisteredTool[], removed: string[] = []) => {
    state.tools = [...state.tools.filter((t) => !removed.includes(t.name)), ...added]
    search.changed({ added: added.map((t) => t.name), removed, scope: GLOBAL })
  }
  return { state, search, found, change }
}

const base = [
  tool('create_issue', 'Open a new issue on a GitHub repository', 'mcp:github'),
  tool('read_file', 'Read a text file from the workspace'),
  tool('secret_rotate', 'Rotate the deployment secrets'),
  tool(TOOL_SEARCH, 'Find a tool you do not have yet'),
]

describe('tool-search keeps the searchable set between searches', () => {
  it('lists the global tools once while nothing changes', async () => {
    const { state, found } = runtimeLike(base)
    assert.deepEqual(await found('open an issue'), ['create_issue'])
    await found('read a file')
    await found('select:read_file')
    assert.equal(state.lists, 1, 'one listing for three searches')
  })

  it('a change after a batch (many names in one announcement) is seen by the next search', async () => {
    const { state, found, change } = runtimeLike(base)
    assert.deepEqual(await found('forecast'), [])
    const weather = Array.from({ length: 50 }, (_, i) =>
      tool(`weather_${i}`, `Get the weather forecast for city number ${i}`),
    )
    change(weather)
    const names = await found('select:weather_0,weather_49')
    assert.deepEqual(names.slice(0, 2), ['weather_0', 'weather_49'])
    assert.equal((await found('weather forecast')).length, 5)
    assert.equal(state.lists, 2, 'one more listing for the batch, whatever its size')
  })

  it('a removed tool is never found again, by words or by name; a replaced one is found as it is now', async () => {
    const { search, found, change } = runtimeLike(base)
    assert.deepEqual(await found('select:create_issue'), ['create_issue'])
    change([], ['create_issue'])
    assert.deepEqual(await found('select:create_issue'), [])
    const outcome = await search.search('open a new issue on a github repository')
    assert.ok(!outcome.candidates.some((c) => c.item.name === 'create_issue'))
    assert.equal(outcome.noMatch, true)
    const replaced = tool('read_file', 'Read a binary blob from storage')
    change([replaced], ['read_file'])
    const [hit] = (await search.search('binary blob')).candidates
    assert.equal(hit?.item, replaced, 'the new version, not the old one')
    const workspace = await search.search('text file workspace')
    assert.ok(!workspace.candidates.some((c) => c.item === base[1]), 'the old version is gone')
  })

  it('never finds a hidden tool or tool_search itself', async () => {
    const { found } = runtimeLike(base)
    assert.deepEqual(await found('rotate the deployment secrets'), [])
    assert.deepEqual(await found('select:secret_rotate,tool_search'), [])
  })

  it("another's listing of the global scope is taken as it is (a filter that changed its mind)", async () => {
    const { state, search, found } = runtimeLike(base)
    assert.deepEqual(await found('select:read_file'), ['read_file'])
    // a policy re-read its settings and now hides read_file: the agent loop's next listing shows it
    search.listed(
      state.tools.filter((t) => t.name !== 'read_file'),
      GLOBAL,
    )
    assert.deepEqual(await found('select:read_file'), [])
    // a listing of another scope says nothing about the global one
    search.listed([], 'session-1')
    assert.deepEqual(await found('select:create_issue'), ['create_issue'])
    assert.equal(state.lists, 1, 'the listing seen was enough')
  })

  it('lists again when the visible taps change (a policy reloaded)', async () => {
    const { state, found } = runtimeLike(base)
    await found('issue')
    state.taps = [...state.taps, { name: 'capabilities' }]
    state.tools = state.tools.filter((t) => t.name !== 'create_issue')
    assert.deepEqual(await found('select:create_issue'), [])
    assert.equal(state.lists, 2)
  })

  it("searches another scope's offer, then the global tools again, each as it is", async () => {
    const { search, found, change } = runtimeLike(base)
    const mine = tool('session_note', 'Write a note for this session only')
    await search.offered([mine, base[1]!], 'agent-1')
    assert.deepEqual(await found('select:session_note', { caller: 'agent-1', scope: 's1' }), [
      'session_note',
    ])
    assert.deepEqual(await found('select:create_issue', { caller: 'agent-1', scope: 's1' }), [])
    change([], ['read_file'])
    assert.deepEqual(await found('select:session_note'), [], 'not a global tool')
    assert.deepEqual(
      await found('select:read_file'),
      [],
      'removed while another scope was searched',
    )
    assert.deepEqual(await found('select:create_issue'), ['create_issue'])
  })

  it('without the runtime announcing changes (no visible taps given), it lists for every search', async () => {
    let lists = 0
    const tools = [...base]
    const search = new ToolSearch(config(), () => {
      lists++
      return tools // one array, changed in place
    })
    await search.search('issue')
    tools.push(tool('close_issue', 'Close an issue on a GitHub repository'))
    const outcome = await search.search('select:close_issue')
    assert.equal(outcome.candidates[0]?.item.name, 'close_issue')
    assert.equal(lists, 2)
  })
})

describe('tool_search on a composed kernel follows the runtime', () => {
  const kernels: Kernel[] = []
  after(async () => {
    for (const k of kernels) await k.dispose()
  })

  async function compose(policy: Record<string, unknown> = {}) {
    const kernel = new Kernel()
    kernels.push(kernel)
    kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
    for (const [key, definition, settings] of [
      ['policy', policyPlugin, policy],
      ['tool-search', toolSearchPlugin, { semantic: 'off', default: 'deferred' }],
    ] as const) {
      const plugin = toPlugin(definition as Parameters<typeof toPlugin>[0]) as Plugin
      const valid = validateConfig(plugin, settings)
      assert.ok('value' in valid, `${key}'s config`)
      kernel.spawn(plugin, valid.value, { key })
    }
    await kernel.settled()
    const rt = kernel.services.get('runtime')!.value as unknown as ToolRuntime
    const register = (name: string, description: string) =>
      rt.register({ name, description, execute: () => 'ok' }, 'test')
    const found = async (query: string, options: { caller?: string; scope?: string } = {}) => {
      const result: ToolResult = await rt.call('tool_search', { query }, options)
      assert.equal(result.ok, true, JSON.stringify(result.error))
      const { tools } = result.structured as { tools: Array<{ name: string }> }
      return tools.map((t) => t.name)
    }
    // the toolSearch service an agent loop asks what to offer
    const service = kernel.services.get('toolSearch')!.value as unknown as ToolSearch
    return { rt, register, found, service }
  }

  it('a tool registered after a search is found by the next; one removed is not', async () => {
    const { register, found } = await compose()
    const removeFirst = register('convert_currency', 'Convert an amount between currencies')
    assert.deepEqual(await found('convert currency'), ['convert_currency'])
    const removeSecond = register('lookup_weather', 'Look up the weather forecast for a city')
    assert.deepEqual(await found('weather forecast'), ['lookup_weather'])
    await removeFirst()
    assert.deepEqual(await found('convert currency'), [])
    assert.deepEqual(await found('select:convert_currency'), [])
    await removeSecond()
    assert.deepEqual(await found('lookup_weather'), [])
  })

  it("never finds what a policy's bare deny hides from listings", async () => {
    const { register, found } = await compose({ deny: ['drop_*'] })
    register('drop_table', 'Drop a database table')
    register('read_table', 'Read rows from a database table')
    assert.deepEqual(await found('database table'), ['read_table'])
    assert.ok(!(await found('select:drop_table')).includes('drop_table'))
  })

  it("searches a scope's tools as its loop offered them (a masked global tool is not among them)", async () => {
    const { rt, register, found, service } = await compose()
    register('deploy_site', 'Deploy the website to production')
    register('preview_site', 'Build a preview of the website')
    rt.registry.createScope('agent-1')
    rt.registry.restrict('agent-1', { deny: ['deploy_*'] })
    await service.offered(rt.list('agent-1'), 'agent-1')
    assert.deepEqual(await found('website', { caller: 'agent-1', scope: 'agent-1' }), [
      'preview_site',
    ])
    assert.deepEqual(await found('website').then((n) => n.sort()), ['deploy_site', 'preview_site'])
  })

  it("a policy file's edit that denies a tool hides it from the next search (no tool changes)", async () => {
    const project = tempProject({ 'settings.json': JSON.stringify({ permissions: {} }) })
    try {
      const { register, found } = await compose({ claudeSettings: [project.path('settings.json')] })
      register('drop_table', 'Drop a database table')
      register('read_table', 'Read rows from a database table')
      assert.deepEqual((await found('database table')).sort(), ['drop_table', 'read_table'])
      // only searches from here on: a listing by anyone else would refresh the kept set anyway
      const deny = JSON.stringify({ permissions: { deny: ['drop_table'] } })
      await until(
        'the search to stop finding the tool the edited file denies',
        async () => (
          writeFileSync(project.path('settings.json'), deny),
          !(await found('database table')).includes('drop_table')
        ),
        { every: 150 },
      )
      assert.deepEqual(await found('database table'), ['read_table'])
    } finally {
      project.cleanup()
    }
  })
})
