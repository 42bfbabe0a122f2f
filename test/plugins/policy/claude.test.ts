// Claude Code's permission rules in the policy plugin: what carries over and why the rest does not
// (fromClaudeRule), the live `claudeSettings` option on real files (watched; a broken edit is
// reported at file:line and the rules last read are kept), and `yoke policy import` (the built
// CLI: printed, --json, --write into a project config that keeps the preset's rules).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import policy from '../../../plugins/policy/index.ts'
import { fromClaudeRule, parseClaudeSettings } from '../../../plugins/policy/claude.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type LogRecord,
  type Plugin,
  type ToolDefinition,
  type ToolRuntime,
} from '../../../src/index.ts'
import { runYoke, suiteProjects } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

describe('Claude Code permission rules as policy rules', () => {
  it('tool names and MCP rules carry over; argument specifiers are reported with why', () => {
    const rule = (text: string) => {
      const t = fromClaudeRule(text)
      assert.ok('rule' in t, `${text}: ${'reason' in t ? t.reason : ''}`)
      return t.rule
    }
    const reason = (text: string) => {
      const t = fromClaudeRule(text)
      assert.ok('reason' in t, `${text} should not carry over, got ${JSON.stringify(t)}`)
      return t.reason
    }
    assert.equal(rule('mcp__github'), 'mcp__github__*')
    assert.equal(rule('mcp__github__*'), 'mcp__github__*')
    assert.equal(rule('mcp__github__get_issue'), 'mcp__github__get_issue')
    assert.equal(rule('mcp__github__get_*'), 'mcp__github__get_*')
    assert.equal(rule('my_tool'), 'my_tool')
    assert.equal(rule('Bash(*)'), 'Bash', 'Tool(*) is the bare tool')
    assert.equal(rule(' Bash() '), 'Bash')
    const bash = fromClaudeRule('Bash')
    assert.ok(
      'note' in bash &&
        /a Claude Code tool: it matches only a yoke tool named exactly Bash/.test(bash.note!),
    )
    assert.match(
      reason('Bash(git commit:*)'),
      /looks at the command line \(git commit:\*\).*wider.*narrower/,
    )
    assert.match(reason('Bash(npm run test:*)'), /command line/)
    assert.match(reason('Read(./secrets/**)'), /the file path \(\.\/secrets\/\*\*\)/)
    assert.match(reason('WebFetch(domain:example.com)'), /the URL's domain \(domain:example\.com\)/)
    assert.match(reason('mcp__github__create_issue(repo:x)'), /the call's arguments \(repo:x\)/)
    assert.match(reason('Bash(ls'), /without the closing/)
    assert.match(reason('Not a tool'), /is not a tool name/)
    assert.match(reason('mcp__*'), /wildcard in the server name/)
    assert.match(reason('Ba*'), /no wildcard in a tool name/)
  })

  it('a settings file: each rule with its position; bad entries are warnings, bad JSON an error at its line', () => {
    const text = [
      '{',
      '  "model": "x",',
      '  "permissions": {',
      '    "deny": ["mcp__github__delete_repo", "Bash(rm -rf:*)"],',
      '    "allow": [7, "Read"],',
      '    "ask": "mcp__github"',
      '  }',
      '}',
    ].join('\n')
    const read = parseClaudeSettings(text, 'settings.json')
    assert.equal(read.error, undefined)
    const summary = read.rules.map(
      (r) => `${r.list} ${r.claude} ${r.at.line}:${r.at.col} ${r.rule ?? 'none'}`,
    )
    assert.deepEqual(summary, [
      'deny mcp__github__delete_repo 4:14 mcp__github__delete_repo',
      'deny Bash(rm -rf:*) 4:42 none',
      'allow Read 5:18 Read',
    ])
    assert.deepEqual(
      read.warnings.map((w) => `${w.line}:${w.col} ${w.message}`),
      [
        '5:15 permissions.allow[0] is not a rule (a non-empty string); it is skipped',
        '6:12 permissions.ask is not a list; it is skipped',
      ],
    )
    const broken = parseClaudeSettings(
      '{\n  "permissions": {\n    "deny": ["x",]\n  }\n}\n',
      'b.json',
    )
    assert.equal(broken.error?.line, 3, JSON.stringify(broken.error))
    assert.match(broken.error!.message, /not valid JSON/)
    assert.equal(
      parseClaudeSettings('[1]', 'c.json').error?.message,
      'a settings file is a JSON object',
    )
  })
})

describe('policy: claudeSettings, live', () => {
  const project = suiteProjects()
  const settings = (permissions: Record<string, unknown>) =>
    JSON.stringify({ permissions }, null, 2)

  it('applies the rules of the files, follows edits, and keeps the last good rules of a broken file', async () => {
    const p = project({
      '.claude/settings.json': settings({
        deny: ['mcp__github__delete_repo', 'Bash(git push:*)'],
        ask: ['mcp__github__create_pull_request'],
        allow: ['mcp__memory'],
      }),
    })
    const kernel = new Kernel()
    const logs: LogRecord[] = []
    kernel.hooks.log.tap('test', (r) => void logs.push(r))
    kernel.spawn(toPlugin(runtimePlugin) as Plugin, {}, { key: 'yoke:runtime' })
    kernel.spawn(
      toPlugin({
        name: 'project',
        provides: ['project'],
        apply: (ctx: any) => void ctx.provide('project', { dir: p.dir, home: p.home }),
      }) as Plugin,
      {},
      { key: 'yoke:project' },
    )
    const plugin = toPlugin(policy) as Plugin
    const checked = validateConfig(plugin, {
      claudeSettings: ['.claude/settings.json', '.claude/settings.local.json'],
      deny: ['from_yoke_config'],
    })
    assert.ok('value' in checked, JSON.stringify(checked))
    kernel.spawn(plugin, checked.value, { key: 'policy' })
    await kernel.settled()
    const rt = kernel.services.get('runtime')!.value as ToolRuntime
    const tool = (name: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
      name,
      execute: () => 'ran',
      ...extra,
    })
    for (const t of [
      tool('mcp__github__delete_repo', { source: 'mcp:github' }),
      tool('mcp__github__create_pull_request', { source: 'mcp:github' }),
      tool('mcp__github__get_issue', { source: 'mcp:github' }),
      tool('mcp__memory__store', { source: 'mcp:memory', risk: 'high' }),
      tool('from_yoke_config'),
    ])
      rt.register(t, 'test')
    const asked: string[] = []
    rt.approvals.register({
      name: 'record',
      ask: async ({ call }) => (asked.push(call.name), 'allow-once'),
    })
    const status = async (name: string) => (await rt.call(name)).status
    const visible = () => rt.list().map((t) => t.name)
    try {
      assert.equal(await status('mcp__github__delete_repo'), 'DENIED')
      assert.ok(!visible().includes('mcp__github__delete_repo'), 'a bare deny hides the tool')
      assert.equal(await status('from_yoke_config'), 'DENIED', 'the config rules apply beside them')
      assert.equal(await status('mcp__github__create_pull_request'), 'ok')
      assert.equal(await status('mcp__memory__store'), 'ok', 'allowed: the high risk does not ask')
      assert.equal(await status('mcp__github__get_issue'), 'ok')
      assert.deepEqual(asked, ['mcp__github__create_pull_request'])
      const unmapped = logs.find((l) =>
        /Bash\(git push:\*\) has no yoke equivalent/.test(l.message),
      )
      assert.ok(unmapped, logs.map((l) => l.message).join('\n'))
      assert.equal(unmapped.level, 'warn')
      assert.ok(
        unmapped.message.startsWith(`${p.path('.claude/settings.json')}:5:`),
        unmapped.message,
      )

      // the watcher arms a moment after apply: each poll writes the edit again until it is seen
      const editUntil = (
        what: string,
        rel: string,
        text: string,
        seen: () => boolean | Promise<boolean>,
      ) => until(what, async () => (p.write(rel, text), seen()), { every: 150 })

      // the local file appears: its rules join
      await editUntil(
        'the new local settings to deny mcp__memory',
        '.claude/settings.local.json',
        settings({ deny: ['mcp__memory'] }),
        async () => (await status('mcp__memory__store')) === 'DENIED',
      )
      assert.ok(!visible().includes('mcp__memory__store'))

      // a broken edit: reported at its line, the rules last read stay
      const invalid = () =>
        logs.find(
          (l) => (l.error as { code?: string } | undefined)?.code === 'CLAUDE_SETTINGS_INVALID',
        )
      await editUntil(
        'the broken file to be reported',
        '.claude/settings.json',
        '{\n  "permissions": {\n    "deny": [,]\n  }\n}\n',
        () => invalid() !== undefined,
      )
      const error = invalid()!.error as { location?: string; message: string }
      assert.equal(error.location, `${p.path('.claude/settings.json')}:3:14`)
      assert.match(error.message, /settings\.json: not valid JSON/)
      assert.equal(
        await status('mcp__github__delete_repo'),
        'DENIED',
        'the last good rules are kept',
      )

      // fixed: the new rules replace the old
      await editUntil(
        'the fixed file to apply',
        '.claude/settings.json',
        settings({ deny: ['mcp__github__get_issue'] }),
        async () => (await status('mcp__github__get_issue')) === 'DENIED',
      )
      assert.equal(await status('mcp__github__delete_repo'), 'ok')
    } finally {
      await kernel.dispose()
    }
  })
})

describe('yoke policy import', () => {
  const project = suiteProjects()
  const SETTINGS = JSON.stringify(
    {
      permissions: {
        allow: ['mcp__github__get_*', 'Bash(npm run test:*)'],
        deny: ['mcp__github__delete_repo', 'Read(./secrets/**)'],
      },
    },
    null,
    2,
  )

  it('--json: the rules, the config and the unmapped ones with why', async () => {
    const p = project({ '.claude/settings.json': SETTINGS })
    const r = await runYoke(['policy', 'import', '--json'], { cwd: p.dir })
    assert.equal(r.code, 0, r.stderr)
    const out = JSON.parse(r.stdout)
    assert.deepEqual(out.config, {
      deny: ['mcp__github__delete_repo'],
      ask: [],
      allow: ['mcp__github__get_*'],
    })
    assert.deepEqual(
      out.unmapped.map(
        (u: { list: string; claude: string; at: { line: number } }) =>
          `${u.list} ${u.claude} ${u.at.line}`,
      ),
      ['deny Read(./secrets/**) 9', 'allow Bash(npm run test:*) 5'],
    )
    assert.match(out.unmapped[1].reason, /command line/)
    const human = await runYoke(['policy', 'import', '.claude/settings.json'], { cwd: p.dir })
    assert.equal(human.code, 0, human.stderr)
    assert.match(human.stdout, /Bash\(npm run test:\*\) {2}✗ not carried over/)
    assert.match(
      human.stdout,
      /plugins:\n {2}policy:\n {4}config:\n {6}deny:\n {8}- "mcp__github__delete_repo"/,
    )
  })

  it("--write adds the rules to the project config's policy instance, keeping the preset's rules", async () => {
    const p = project({
      '.claude/settings.json': SETTINGS,
      'yoke.config.yaml': '# my project\npreset: default\nplugins: {}\n',
    })
    const r = await runYoke(['policy', 'import', '--write'], { cwd: p.dir })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /yoke\.config\.yaml: added 1 deny, 1 allow to instance "policy"/)
    const { readFileSync } = await import('node:fs')
    const text = readFileSync(p.path('yoke.config.yaml'), 'utf8')
    assert.match(text, /^# my project/)
    const written = parse(text).plugins.policy.config
    assert.deepEqual(written.deny, ['mcp__github__delete_repo'])
    assert.deepEqual(written.allow, ['mcp__github__get_*'])
    assert.equal(written.ask, undefined, 'a list with nothing new is left alone')
    const again = await runYoke(['policy', 'import', '--write'], { cwd: p.dir })
    assert.match(again.stdout, /nothing new for instance "policy"/)
    // the default preset asks for medium-risk MCP tools; an imported ask keeps that rule
    p.write('.claude/settings.json', JSON.stringify({ permissions: { ask: ['mcp__x'] } }))
    await runYoke(['policy', 'import', '--write'], { cwd: p.dir })
    assert.deepEqual(
      parse(readFileSync(p.path('yoke.config.yaml'), 'utf8')).plugins.policy.config.ask,
      [{ tool: '*', source: 'mcp:*', risk: ['medium'] }, 'mcp__x__*'],
    )
  })

  it('a broken file: exit 1 with its position; nothing here: a usage error that says what to name', async () => {
    const p = project({ '.claude/settings.json': '{\n  "permissions": \n}\n' })
    const r = await runYoke(['policy', 'import'], { cwd: p.dir })
    assert.equal(r.code, 1)
    assert.match(r.stdout, new RegExp(`settings\\.json:3:1: not valid JSON`))
    const empty = project({})
    const none = await runYoke(['policy', 'import'], { cwd: empty.dir })
    assert.equal(none.code, 2)
    assert.match(none.stderr, /no Claude Code settings here.*name the file/)
  })
})
