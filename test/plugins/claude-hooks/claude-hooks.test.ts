// Claude Code hooks (claude-hooks) on a real agent loop against a model server speaking OpenAI's
// wire format: a hooks.json whose PreToolUse blocks with exit 2 and one that rewrites updatedInput,
// PostToolUse context, SessionStart context, Stop continuations (bounded), ask through the approval
// service, matchers on re2js, the environment, http handlers, broken and edited files.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { compileMatcher } from '../../../plugins/claude-hooks/api.ts'
import { hookProgram } from '../../conformance/hooks.ts'
import type { AgentHarness } from '../../helpers/agent.ts'
import {
  claudeHooksSuite,
  command,
  commandTools,
  group,
  printJson,
  printSpecific,
  type Ran,
} from '../../helpers/claude-hooks.ts'
import type { ModelServer } from '../../helpers/model-server.ts'
import { until } from '../../helpers/until.ts'

describe('claude-hooks on an agent loop', () => {
  const ran: Ran = []
  const suite = claudeHooksSuite({
    keyEnv: 'TEST_CLAUDE_HOOKS_KEY',
    prefix: 'hooks',
    tools: (runtime) =>
      commandTools(
        runtime,
        ran,
        ['shell_run', 'mcp__files__read', 'notes_add'],
        (name, said) => `${name} ran ${said}`,
      ),
  })
  const { install, program } = suite
  let server: ModelServer
  let h: AgentHarness
  before(() => ({ server, h } = suite))
  const toolMessages = (i: number) =>
    server.requests[i]!.body.messages.filter((m: any) => m.role === 'tool').map(
      (m: any) => m.content,
    )

  it('PreToolUse exit 2 blocks the call, and the model reads the stderr as the reason', async () => {
    const hook = program(`printf '%s' 'shell_run is off limits here' >&2; exit 2`)
    await install({ PreToolUse: [group('shell_run', command(hook.file))] })
    server.push(
      { toolCalls: [{ id: 'c1', name: 'shell_run', args: { command: 'rm -rf /' } }] },
      { text: 'understood' },
    )
    const before = server.requests.length
    ran.length = 0
    const { result } = await h.run('clean up')
    assert.equal(result.status, 'done', result.reason)
    assert.deepEqual(ran, [], 'the body never ran')
    const [tool] = toolMessages(before + 1)
    assert.match(tool, /DENIED/)
    assert.match(tool, /shell_run is off limits here/)
    const [payload] = hook.payloads()
    assert.equal(payload!.hook_event_name, 'PreToolUse')
    assert.equal(payload!.tool_name, 'shell_run')
    assert.deepEqual(payload!.tool_input, { command: 'rm -rf /' })
    assert.equal(payload!.session_id, result.runId)
    assert.equal(payload!.cwd, h.root)
    // the transcript in Claude Code's shape, beside yoke's
    assert.equal(payload!.transcript_path, result.transcript!.replace(/\.jsonl$/, '.claude.jsonl'))
  })

  it('a systemMessage is shown to the user as a warning (hookify denies with its words there)', async () => {
    // hookify's answer to a rule that blocks: a deny with no reason, its message for the user
    const hook = program(
      printJson({
        hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny' },
        systemMessage: '**[block-dangerous-rm]** Dangerous rm command detected!',
      }),
    )
    await install({ PreToolUse: [group('shell_run', command(hook.file))] })
    ran.length = 0
    const result = await h.rt.call('shell_run', { command: 'rm -rf build' })
    assert.equal(result.status, 'DENIED')
    assert.deepEqual(ran, [])
    await until('the warning', () =>
      h.logs.some(
        (l) =>
          l.level === 'warn' && /: \*\*\[block-dangerous-rm\]\*\* Dangerous rm/.test(l.message),
      ),
    )
  })

  it('PreToolUse updatedInput rewrites the arguments; a rewrite that breaks the schema is refused', async () => {
    const good = program(
      printSpecific('PreToolUse', {
        permissionDecision: 'allow',
        updatedInput: { command: 'ls --safe' },
      }),
    )
    const bad = program(printSpecific('PreToolUse', { updatedInput: { nope: 1 } }))
    await install({
      PreToolUse: [group('shell_run', command(good.file)), group('notes_add', command(bad.file))],
    })
    ran.length = 0
    assert.equal((await h.rt.call('shell_run', { command: 'ls' })).status, 'ok')
    assert.equal((await h.rt.call('notes_add', { command: 'keep' })).status, 'ok')
    assert.deepEqual(ran, [
      { tool: 'shell_run', args: { command: 'ls --safe' } },
      { tool: 'notes_add', args: { command: 'keep' } },
    ])
    await until('the refused rewrite to be reported', () =>
      h.logs.some(
        (l) => l.level === 'warn' && /does not match notes_add's input schema/.test(l.message),
      ),
    )
  })

  it('PostToolUse additionalContext joins the result the model reads; tool_response is the output', async () => {
    const hook = program(
      printSpecific('PostToolUse', {
        additionalContext: 'Reminder: files under /etc are read-only.',
      }),
    )
    await install({ PostToolUse: [group('mcp__files__.*', command(hook.file))] })
    server.push(
      { toolCalls: [{ id: 'c2', name: 'mcp__files__read', args: { command: 'cat' } }] },
      { text: 'ok' },
    )
    const before = server.requests.length
    const { result } = await h.run('read it')
    assert.equal(result.status, 'done', result.reason)
    const [tool] = toolMessages(before + 1)
    assert.match(tool, /mcp__files__read ran cat/)
    assert.match(tool, /files under \/etc are read-only/)
    assert.equal(hook.payloads()[0]!.tool_response, 'mcp__files__read ran cat')
  })

  it('SessionStart stdout goes into the context before the task; SessionEnd runs at the end', async () => {
    const start = program(`echo "Project rules: answer in French."`)
    const end = program('exit 0')
    await install({
      SessionStart: [group('startup', command(start.file))],
      SessionEnd: [group(undefined, command(end.file))],
    })
    server.push({ text: 'bonjour' })
    const before = server.requests.length
    const { result } = await h.run('say hi')
    assert.equal(result.status, 'done', result.reason)
    const first = server.requests[before]!.body.messages.find((m: any) => m.role === 'user')
    assert.match(first.content, /^Project rules: answer in French\.\n\nsay hi$/)
    assert.equal(start.payloads()[0]!.source, 'startup')
    assert.equal(end.payloads()[0]!.session_id, result.runId)
    assert.equal(end.payloads()[0]!.hook_event_name, 'SessionEnd')
    assert.ok(existsSync(String(end.payloads()[0]!.transcript_path)))
  })

  it('Stop decision block sends the model on with the reason, at most maxStopContinuations times', async () => {
    const stop = program(printJson({ decision: 'block', reason: 'Run the tests before you stop.' }))
    await install({ Stop: [group(undefined, command(stop.file))] })
    server.push({ text: 'done 1' }, { text: 'done 2' }, { text: 'done 3' }, { text: 'done 4' })
    const before = server.requests.length
    const { result } = await h.run('fix the bug')
    assert.equal(result.status, 'done', result.reason)
    assert.equal(server.requests.length - before, 4, 'three continuations, then the run ends')
    const last = server.requests.at(-1)!.body.messages.at(-1)
    assert.deepEqual([last.role, last.content], ['user', 'Run the tests before you stop.'])
    assert.deepEqual(
      stop.payloads().map((p) => p.stop_hook_active),
      [false, true, true, true],
    )
    assert.equal(stop.payloads()[0]!.last_assistant_message, 'done 1')
    assert.equal(result.text, 'done 4')
  })

  it('SubagentStop runs for a spawned run, Stop for the main one', async () => {
    const sub = program('exit 0')
    const main = program('exit 0')
    await install({
      SubagentStop: [group('*', command(sub.file))],
      Stop: [group(undefined, command(main.file))],
    })
    server.push(
      { toolCalls: [{ id: 's1', name: 'spawn', args: { task: 'look it up' } }] },
      { text: 'sub done' },
      { text: 'main done' },
    )
    const { result } = await h.run('delegate it')
    assert.equal(result.status, 'done', result.reason)
    assert.equal(sub.payloads().length, 1)
    assert.equal(sub.payloads()[0]!.hook_event_name, 'SubagentStop')
    assert.equal(sub.payloads()[0]!.last_assistant_message, 'sub done')
    assert.equal(sub.payloads()[0]!.agent_type, 'main')
    assert.notEqual(sub.payloads()[0]!.session_id, result.runId)
    assert.deepEqual(
      main.payloads().map((p) => [p.hook_event_name, p.session_id, p.last_assistant_message]),
      [['Stop', result.runId, 'main done']],
    )
  })

  it('permissionDecision ask asks the approval service; its answer decides', async () => {
    const hook = program(
      printSpecific('PreToolUse', {
        permissionDecision: 'ask',
        permissionDecisionReason: 'notes are shared',
      }),
    )
    await install({ PreToolUse: [group('notes_add', command(hook.file))] })
    const asked: string[] = []
    let answer: 'allow-once' | 'deny' = 'deny'
    const off = h.rt.approvals.register({
      name: 'test-bridge',
      ask: async (req) => (asked.push(req.reason), answer),
    })
    try {
      const refused = await h.rt.call('notes_add', { command: 'x' })
      assert.equal(refused.status, 'DENIED')
      answer = 'allow-once'
      assert.equal((await h.rt.call('notes_add', { command: 'y' })).status, 'ok')
      assert.deepEqual(asked, ['notes are shared', 'notes are shared'])
    } finally {
      off()
    }
  })

  it('handlers get CLAUDE_PROJECT_DIR and CLAUDE_PLUGIN_ROOT, and ${CLAUDE_PLUGIN_ROOT} in a command', async () => {
    const pluginRoot = join(h.root, 'my-plugin')
    const hook = hookProgram(
      pluginRoot,
      'env.sh',
      'printf \'%s|%s|%s\' "$CLAUDE_PROJECT_DIR" "$CLAUDE_PLUGIN_ROOT" "${OPENAI_API_KEY:-unset}" >&2; exit 2',
    )
    process.env.OPENAI_API_KEY = 'sk-must-not-leak'
    try {
      await install(
        { PreToolUse: [group('notes_add', command('"${CLAUDE_PLUGIN_ROOT}/env.sh"'))] },
        { pluginRoot },
      )
      const r = await h.rt.call('notes_add', { command: 'x' })
      assert.equal(hook.payloads().length, 1)
      assert.match(r.error!.message, new RegExp(`${h.root}\\|${pluginRoot}\\|unset`))
    } finally {
      delete process.env.OPENAI_API_KEY
    }
  })

  it('an http handler is POSTed the input; its JSON answer decides', async () => {
    const bodies: any[] = []
    const web = createServer((req, res) => {
      let body = ''
      req
        .on('data', (c) => (body += c))
        .on('end', () => {
          bodies.push(JSON.parse(body))
          res.setHeader('content-type', 'application/json')
          res.end(
            JSON.stringify({
              hookSpecificOutput: {
                hookEventName: 'PreToolUse',
                permissionDecision: 'deny',
                permissionDecisionReason: 'the web says no',
              },
            }),
          )
        })
    })
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(web.address() as AddressInfo).port}/hook`
    try {
      await install({ PreToolUse: [{ matcher: 'notes_add', hooks: [{ type: 'http', url }] }] })
      const r = await h.rt.call('notes_add', { command: 'x' })
      assert.equal(r.status, 'DENIED')
      assert.match(r.error!.message, /the web says no/)
      assert.equal(bodies[0].tool_name, 'notes_add')
    } finally {
      await new Promise((resolve) => web.close(resolve))
    }
  })

  it('a broken file is reported at its line and keeps its last good hooks; an edit takes effect', async () => {
    const deny = program(`echo 'first version' >&2; exit 2`)
    const { file } = await install({ PreToolUse: [group('notes_add', command(deny.file))] })
    assert.equal((await h.rt.call('notes_add', { command: 'a' })).status, 'DENIED')
    writeFileSync(file, '{\n  "hooks": {\n    "PreToolUse": [,]\n  }\n}\n')
    await until('the broken file to be reported at its line', () =>
      h.logs.some((l) => l.level === 'error' && l.message.includes(`${file}:3:`)),
    )
    assert.equal((await h.rt.call('notes_add', { command: 'b' })).status, 'DENIED', 'kept')
    writeFileSync(file, JSON.stringify({ hooks: {} }))
    await until(
      'the edit to take effect',
      async () => (await h.rt.call('notes_add', { command: 'c' })).status === 'ok',
    )
  })

  it('handler types an event does not take, unknown and waiting events are reported, never silent', async () => {
    const mark = h.logs.length
    await install({
      SessionStart: [{ hooks: [{ type: 'prompt', prompt: 'is it safe?' }] }],
      PreToolUse: [{ matcher: 'x', hooks: [{ type: 'lambda', prompt: 'is it safe?' }] }],
      PreCompact: [group(undefined, command('true'))],
      Stop: [group(undefined, command('true', { if: 'Bash(git *)' }))],
      PreToolUze: [group(undefined, command('true'))],
      PostToolUse: [group('(?=lookahead)', command('true'))],
    })
    const messages = h.logs.slice(mark).map((l) => `${l.level} ${l.message}`)
    const has = (re: RegExp) =>
      assert.ok(
        messages.some((m) => re.test(m)),
        `${re} in ${messages.join('\n')}`,
      )
    has(
      /^warn .*hooks-\d+\.json:\d+:\d+: SessionStart\[0\]\.hooks\[0\]: SessionStart takes command and mcp_tool handlers only/,
    )
    has(
      /^warn .*hooks-\d+\.json:\d+:\d+: PreToolUse\[0\]\.hooks\[0\]: handlers of type "lambda" are not Claude Code's/,
    )
    has(/^warn .*PreCompact has no counterpart in yoke \(the agent loop does not compact/)
    has(/^error .*"PreToolUze" is not a Claude Code hook event/)
    has(
      /^warn .*Stop\[0\]\.hooks\[0\]: "if" is evaluated on tool events only; on Stop a handler with "if" never runs/,
    )
    has(/^error .*the matcher "\(\?=lookahead\)" is not a regular expression yoke runs/)
  })
})

describe('matchers as Claude Code reads them', () => {
  const test = (matcher: string | undefined, name: string) => {
    const m = compileMatcher(matcher)
    assert.equal(typeof m, 'function', String(m))
    return (m as (s: string) => boolean)(name)
  }
  it('everything, exact lists, and unanchored regexes', () => {
    assert.ok(test(undefined, 'anything') && test('', 'x') && test('*', 'y'))
    assert.ok(test('Edit|Write', 'Write') && !test('Edit|Write', 'WriteFile'))
    assert.ok(test('notes_add, shell_run', 'shell_run'))
    assert.ok(test('mcp-server-x', 'mcp-server-x') && !test('mcp-server-x', 'mcp-server-xy'))
    assert.ok(test('mcp__github__.*', 'mcp__github__create_issue'))
    assert.ok(test('Notebook', 'Notebook') && test('mcp__.*__read', 'mcp__files__read_all'))
    assert.ok(!test('^mcp__fs__', 'mcp__github__x'))
  })
  it('a pattern RE2 cannot run in linear time is refused with a reason', () => {
    assert.match(String(compileMatcher('(a)\\1')), /not a regular expression yoke runs/)
  })
})
