// Claude Code (and Codex) plugin folders through createYoke, in process, on a copy of
// test/fixtures/claude-plugins: manifests of each kind, namespaced skills, commands as prompts
// (and as MCP prompts through the gateway), an agent offered by spawn, a plugin .mcp.json found
// through ${CLAUDE_PLUGIN_ROOT} with its server really spawned, a hooks.json that blocks a call,
// broken files, and hot reload of a command and of a new plugin folder.
import assert from 'node:assert/strict'
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { expandCommand } from '../../../plugins/claude-plugins/api.ts'
import { splitWords } from '../../../plugins/claude-plugins/prompts.ts'
import '../../../plugins/mcp-server/api.ts'
import { createYoke, type LogRecord, type Yoke } from '../../../src/index.ts'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { FIXTURE } from '../../helpers/mcp.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'
import { ROOT, runYokeWithInput, suiteProjects, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const PLUGINS = join(ROOT, 'test', 'fixtures', 'claude-plugins')
const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

const TOKEN = 'test-token-0123456789abcdef'
const config = (modelUrl: string) => `preset: base
plugins:
  claude-plugins:
    use: claude-plugins
    config: { dirs: [plugins] }
  model:
    use: openai
    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${modelUrl}", maxRetries: 0 }
  agent:
    use: agent-loop
  serve:
    use: mcp-server
    config: { token: ${TOKEN}, http: { host: 127.0.0.1, port: 0 } }
`

describe('claude-plugins', () => {
  let p: Project
  let yoke: Yoke
  let model: ModelServer
  const logs: LogRecord[] = []
  // closed before the project goes (after hooks run in order): its watchers never see the removal
  after(async () => {
    await yoke?.close()
    await model?.close()
  })
  const project = suiteProjects()
  before(async () => {
    model = await modelServer([])
    p = project({ 'yoke.config.yaml': config(model.openaiBaseUrl) })
    cpSync(PLUGINS, p.path('plugins'), { recursive: true })
    // the plugin's server: the repository's MCP fixture, reached from the plugin's own folder
    p.write(
      'plugins/review-kit/server.mjs',
      `import ${JSON.stringify(pathToFileURL(FIXTURE).href)}\n`,
    )
    // as many published manifests do, it also lists files of its default commands/ and agents/
    const manifest = p.path('plugins/review-kit/.claude-plugin/plugin.json')
    writeFileSync(
      manifest,
      JSON.stringify({
        ...JSON.parse(readFileSync(manifest, 'utf8')),
        commands: ['./commands/review.md'],
        agents: ['./agents/code-reviewer.md'],
      }),
    )
    // the provider reads its key from the process's environment
    process.env.TEST_OPENAI_KEY = 'sk-test'
    yoke = createYoke({
      cwd: p.dir,
      home: p.home,
      onLog: (r) => void logs.push(r),
    })
    await yoke.ready
  })

  it('reads each kind of manifest, and a folder without one', () => {
    const list = yoke.get('claudePlugins')!.list()
    const byName = Object.fromEntries(list.map((f) => [f.name, f]))
    assert.deepEqual(Object.keys(byName).sort(), [
      'codex-kit',
      'discord',
      'plain-dev',
      'review-kit',
      'telegram',
    ])
    assert.equal(byName['review-kit']!.manifest, 'claude')
    assert.equal(byName['review-kit']!.version, '1.2.0')
    assert.equal(byName['codex-kit']!.manifest, 'codex')
    assert.equal(byName['plain-dev']!.manifest, 'none')
    // a field yoke does not use is said, not silently dropped
    assert.ok(byName['review-kit']!.notes.some((n) => n.includes('"outputStyles"')))
  })

  it('a manifest that lists files of its default folders reads each file once, and says nothing', () => {
    const kit = yoke
      .get('claudePlugins')!
      .list()
      .find((f) => f.name === 'review-kit')!
    assert.equal(
      new Set(kit.parts.commands).size,
      kit.parts.commands.length,
      kit.parts.commands.join(),
    )
    assert.equal(new Set(kit.parts.agents).size, kit.parts.agents.length, kit.parts.agents.join())
    const twice = logs.filter((r) => /is also/.test(r.message) && /review-kit/.test(r.message))
    assert.deepEqual(
      twice.map((r) => r.message),
      [],
    )
  })

  it('names skills by their plugin, so same-named skills of two plugins are both there', () => {
    const names = yoke
      .get('skills')!
      .list()
      .map((s) => s.name)
    for (const name of [
      'telegram:access',
      'discord:access',
      'telegram:configure',
      'discord:configure',
    ])
      assert.ok(names.includes(name), `${name} in ${names.join(', ')}`)
    assert.ok(names.includes('review-kit:style-guide'))
    assert.ok(names.includes('codex-kit:notes'))
  })

  it('offers commands as prompts, with the arguments put in', () => {
    const plugins = yoke.get('claudePlugins')!
    const names = plugins.commands().map((c) => c.name)
    assert.deepEqual(names.sort(), ['plain-dev:explain', 'review-kit:amend', 'review-kit:review'])
    const review = plugins.command('review')! // a bare name one plugin alone has
    assert.equal(review.name, 'review-kit:review')
    assert.equal(review.argumentHint, '<file> [focus]')
    assert.deepEqual(review.allowedTools, ['Bash(git diff:*)', 'Read'])
    const prompt = expandCommand(review, 'src/app.ts "error handling"')
    assert.match(prompt, /Review the file src\/app\.ts with a focus on error handling\./)
    assert.match(prompt, /Everything the user typed: src\/app\.ts "error handling"/)
    // no placeholder: the arguments follow the text; a shell line is not run
    const explain = expandCommand(plugins.command('plain-dev:explain')!, 'x')
    assert.match(explain, /in x does/)
    const amend = expandCommand(plugins.command('amend')!, 'be brief')
    assert.match(amend, /\[not run here: the shell command `git log -1 --format=%B`\]/)
    assert.match(amend, /ARGUMENTS: be brief$/)
  })

  it("offers the plugin's agent to spawn, which runs with its instructions and only its tools", async () => {
    const echo = 'mcp__plugin_review-kit_notes__echo'
    const agent = yoke.get('claudePlugins')!.agent('code-reviewer')!
    assert.equal(agent.name, 'review-kit:code-reviewer')
    assert.deepEqual(agent.tools, [echo, 'Read', 'Grep'])
    assert.equal(agent.model, 'sonnet')
    // frontmatter that is not YAML (unquoted `a: b` text, as Claude Code's own agents have) is read as Claude Code reads it
    const explainer = yoke.get('claudePlugins')!.agent('review-kit:explainer')!
    assert.match(
      explainer.description,
      /^Use this agent when[\s\S]*user: "What does parse\(\) do\?"/,
    )
    assert.equal(explainer.model, 'inherit')
    await until('the plugin server', () => yoke.tools().some((t) => t.name === echo), {
      ms: 20_000,
    })
    const n = model.requests.length
    model.push(
      {
        toolCalls: [
          { id: 'c1', name: 'spawn', args: { task: 'review src/app.ts', agent: agent.name } },
        ],
      },
      { text: 'Two problems: a race at line 3, an unclear name at line 9.' },
      { text: 'The reviewer found two problems.' },
    )
    const run = yoke.get('agent')!.run('review my change')
    const result = await run.result
    assert.equal(result.status, 'done', result.reason)
    const [main, child] = [model.requests[n]!.body, model.requests[n + 1]!.body]
    const spawn = main.tools.find((t: any) => t.function.name === 'spawn')
    assert.ok(spawn.function.parameters.properties.agent.enum.includes(agent.name))
    const task = child.messages.find((m: any) => m.role === 'user').content
    assert.match(task, /careful code reviewer[\s\S]*Your task:\nreview src\/app\.ts/)
    // Read and Grep name no yoke tool: the subagent has the one tool its definition names that exists
    assert.deepEqual(
      child.tools.map((t: any) => t.function.name),
      [echo],
    )
    assert.equal(result.text, 'The reviewer found two problems.')
  })

  it('serves the commands as MCP prompts through the gateway', async () => {
    const client = new Client({ name: 'test-client', version: '1' })
    const url = yoke.get('mcpServer')!.url!
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
      }),
    )
    try {
      const names = (await client.listPrompts()).prompts.map((pr) => pr.name)
      assert.ok(names.includes('review-kit:review'), names.join(', '))
      const prompt = await client.getPrompt({
        name: 'review-kit:review',
        arguments: { arguments: 'lib/db.ts locking' },
      })
      const body = (prompt.messages[0]!.content as { text: string }).text
      assert.match(body, /Review the file lib\/db\.ts with a focus on locking\./)
    } finally {
      await client.close()
    }
  })

  it("starts the plugin's MCP server through ${CLAUDE_PLUGIN_ROOT}, named as Claude Code names it", async () => {
    const echo = 'mcp__plugin_review-kit_notes__echo'
    await until('the plugin server', () => yoke.tools().some((t) => t.name === echo), {
      ms: 20_000,
    })
    const env = await yoke.call('mcp__plugin_review-kit_notes__env', { name: 'CLAUDE_PLUGIN_ROOT' })
    assert.equal(text(env), p.path('plugins/review-kit'))
    const data = await yoke.call('mcp__plugin_review-kit_notes__env', { name: 'NOTES_DIR' })
    assert.equal(text(data), join(p.dir, '.yoke', 'plugin-data', 'review-kit'))
  })

  it("runs the plugin's hooks.json with Claude Code's protocol: exit 2 blocks, stderr is the reason", async () => {
    const echo = 'mcp__plugin_review-kit_notes__echo'
    await until('the plugin server', () => yoke.tools().some((t) => t.name === echo), {
      ms: 20_000,
    })
    const ok = await yoke.call(echo, { text: 'fine' })
    assert.equal(ok.ok, true)
    assert.equal(text(ok), 'fine')
    const blocked = await yoke.call(echo, { text: 'this is forbidden' })
    assert.equal(blocked.ok, false)
    assert.match(text(blocked), /review-kit: that text is not allowed/)
  })

  it('follows an edited command and a new plugin folder without a restart', async () => {
    const plugins = yoke.get('claudePlugins')!
    p.write(
      'plugins/plain-dev/commands/explain.md',
      '---\ndescription: Explain it simply\n---\nExplain $ARGUMENTS simply.\n',
    )
    await until(
      'the edit',
      () => plugins.command('plain-dev:explain')?.description === 'Explain it simply',
      { ms: 10_000 },
    )
    p.write('plugins/late/.claude-plugin/plugin.json', '{ "name": "late", "version": "0.0.1" }')
    p.write('plugins/late/commands/hello.md', 'Say hello to $ARGUMENTS.\n')
    await until('the new plugin', () => plugins.command('late:hello') !== undefined, { ms: 10_000 })
    rmSync(p.path('plugins/late'), { recursive: true })
    await until('the removed plugin', () => plugins.command('late:hello') === undefined, {
      ms: 10_000,
    })
  })

  it('a broken manifest is reported with file:line and the other plugins keep working', async () => {
    const plugins = yoke.get('claudePlugins')!
    const file = p.path('plugins/telegram/.claude-plugin/plugin.json')
    const good = readFileSync(file, 'utf8')
    writeFileSync(file, '{\n  "name": "telegram",\n  "version": 0.1.0\n}\n')
    await until(
      'the problem report',
      () => logs.some((l) => /plugin\.json:3:\d+/.test(l.message)),
      {
        ms: 10_000,
      },
    )
    assert.ok(plugins.command('review-kit:review'))
    writeFileSync(file, good)
  })
})

describe('claude-plugins parts', () => {
  it('splits arguments as a shell does', () => {
    assert.deepEqual(splitWords(`a "b c" 'd e' f\\ g`), ['a', 'b c', 'd e', 'f g'])
    assert.deepEqual(splitWords('  '), [])
  })
})

describe("claude-plugins: a Claude Code install's plugins", () => {
  const project = suiteProjects()
  it('loads what installed_plugins.json lists and enabledPlugins leaves on, user-wide and for this project', async () => {
    const p = project()
    const cache = (name: string) => {
      p.write(
        `claude/plugins/cache/market/${name}/1.0.0/.claude-plugin/plugin.json`,
        `{ "name": "${name}" }`,
      )
      p.write(`claude/plugins/cache/market/${name}/1.0.0/commands/hi.md`, `Say hi from ${name}.`)
      return p.path(`claude/plugins/cache/market/${name}/1.0.0`)
    }
    const install = (name: string, extra = {}) => [
      { scope: 'user', installPath: cache(name), version: '1.0.0', ...extra },
    ]
    p.write(
      'claude/plugins/installed_plugins.json',
      JSON.stringify({
        version: 2,
        plugins: {
          'mine@market': install('mine'),
          'off@market': install('off'),
          'here@market': install('here', { scope: 'project', projectPath: p.dir }),
          'elsewhere@market': install('elsewhere', { scope: 'project', projectPath: '/nowhere' }),
        },
      }),
    )
    p.write('claude/settings.json', JSON.stringify({ enabledPlugins: { 'off@market': true } }))
    p.write('.claude/settings.json', JSON.stringify({ enabledPlugins: { 'off@market': false } }))
    p.write(
      'yoke.config.yaml',
      `preset: base\nplugins:\n  claude-plugins:\n    use: claude-plugins\n    config: { claudeCode: true, claudeHome: claude }\n`,
    )
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {} })
    try {
      await yoke.ready
      const list = yoke.get('claudePlugins')!.list()
      assert.deepEqual(list.map((f) => f.name).sort(), ['here', 'mine'])
      assert.equal(list.find((f) => f.name === 'mine')!.source, 'Claude Code (mine@market)')
    } finally {
      await yoke.close()
    }
  })
})

describe('claude-plugins in yoke chat', () => {
  const project = suiteProjects()
  it('runs /name ARGS as the command text and lists /commands', async () => {
    const model = await modelServer([{ text: 'Reviewed.' }])
    try {
      const p = project({
        'yoke.config.yaml': `preset: base
plugins:
  claude-plugins:
    config: { dirs: [plugins] }
  model:
    use: openai
    config: { model: gpt-test, apiKeyEnv: TEST_OPENAI_KEY, baseUrl: "${model.openaiBaseUrl}", maxRetries: 0 }
  agent:
    use: agent-loop
`,
      })
      cpSync(join(PLUGINS, 'plain-dev'), p.path('plugins/plain-dev'), { recursive: true })
      cpSync(join(PLUGINS, 'review-kit', 'commands'), p.path('plugins/review-kit/commands'), {
        recursive: true,
      })
      const r = await runYokeWithInput(
        ['chat'],
        { cwd: p.dir, env: { TEST_OPENAI_KEY: 'sk-test' } },
        '/commands\n/review src/app.ts naming\n/nope\n/exit\n',
      )
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stderr, /\/review-kit:review <file> \[focus\]/)
      assert.match(r.stderr, /unknown command \/nope/)
      assert.equal(model.requests.length, 1)
      const user = model.requests[0]!.body.messages.find((m: any) => m.role === 'user').content
      assert.match(user, /^Review the file src\/app\.ts with a focus on naming\./)
      assert.equal(r.stdout, 'Reviewed.\n')
    } finally {
      await model.close()
    }
  })
})
