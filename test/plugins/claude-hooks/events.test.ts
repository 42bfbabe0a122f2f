// The hook-adapter conformance suite, event by event: each of Claude Code's 34 hook events (SDK
// 0.3.333's HOOK_EVENTS) either runs as Claude Code documents it, on a real agent loop against a
// model server speaking OpenAI's wire format, with real child processes for command handlers and
// that model for prompt and agent handlers, or is reported once as having no counterpart in yoke,
// with why, and never runs. Each handler type runs at least once: command, http (claude-hooks.test),
// prompt, agent and mcp_tool.
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { FIRED_EVENTS } from '../../../plugins/claude-hooks/api.ts'
import { GLOBAL, type RuntimeApi } from '../../../src/index.ts'
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

/** Claude Code's 34 hook events (claude-agent-sdk 0.3.333, HOOK_EVENTS). */
const ALL_EVENTS = [
  'PreToolUse',
  'PostToolUse',
  'PostToolUseFailure',
  'PostToolBatch',
  'Notification',
  'UserPromptSubmit',
  'UserPromptExpansion',
  'SessionStart',
  'SessionEnd',
  'Stop',
  'StopFailure',
  'SubagentStart',
  'SubagentStop',
  'PreCompact',
  'PostCompact',
  'PermissionRequest',
  'PermissionDenied',
  'Setup',
  'TeammateIdle',
  'TaskCreated',
  'TaskCompleted',
  'Elicitation',
  'ElicitationResult',
  'ConfigChange',
  'WorktreeCreate',
  'WorktreeRemove',
  'InstructionsLoaded',
  'CwdChanged',
  'DirectoryAdded',
  'FileChanged',
  'MessageDisplay',
  'PreSkillShellCommand',
  'PreModelSwitch',
  'PostModelSwitch',
]

describe('Claude Code hook events, one by one (claude-hooks)', () => {
  const ran: Ran = []
  const suite = claudeHooksSuite({
    keyEnv: 'TEST_CLAUDE_EVENTS_KEY',
    prefix: 'events',
    tools: testTools(ran),
  })
  const { install, add, program } = suite
  let server: ModelServer
  let h: AgentHarness
  before(() => ({ server, h } = suite))
  const messagesOf = (i: number) =>
    (server.requests[i]!.body.messages as any[]).filter((m) => m.role !== 'system')
  const textOf = (i: number) =>
    messagesOf(i)
      .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
      .join('\n')

  it('the suite names 34 events, and yoke fires 16 of them', () => {
    assert.equal(new Set(ALL_EVENTS).size, 34)
    for (const event of FIRED_EVENTS) assert.ok(ALL_EVENTS.includes(event), event)
    assert.equal(FIRED_EVENTS.length, 16)
  })

  // ---- tool events ------------------------------------------------------------------------------

  it('PreToolUse: `if` narrows a handler to the calls its permission rule takes (Bash(git *) on a mapped tool)', async () => {
    const hook = program(`printf '%s' 'no pushing from here' >&2; exit 2`)
    await install(
      { PreToolUse: [group('Bash', command(hook.file, { if: 'Bash(git push *)' }))] },
      { toolNames: { Bash: ['shell_run'] } },
    )
    const pushed = await h.rt.call('shell_run', { command: 'cd repo && FOO=1 git push origin' })
    assert.equal(pushed.status, 'DENIED')
    assert.match(pushed.error!.message, /no pushing from here/)
    const tested = await h.rt.call('shell_run', { command: 'npm test' })
    assert.equal(tested.status, 'ok')
    assert.equal(hook.payloads().length, 1, 'the handler never spawned for npm test')
    assert.equal(hook.payloads()[0]!.tool_name, 'shell_run')
  })

  it('PostToolUse asyncRewake (as security-guidance writes it): runs in the background; its exit 2 wakes the run before it ends', async () => {
    const review = program(`printf '%s' 'the commit adds a secret' >&2; exit 2`)
    await install(
      {
        PostToolUse: [
          group(
            'Bash',
            command(review.file, {
              if: 'Bash(git commit:*)',
              asyncRewake: true,
              rewakeMessage: 'Background security review:',
            }),
          ),
        ],
      },
      { toolNames: { Bash: ['shell_run'] } },
    )
    const before = server.requests.length
    server.push(
      { toolCalls: [{ id: 'g1', name: 'shell_run', args: { command: 'git commit -m wip' } }] },
      { text: 'committed' },
      { text: 'removed the secret' },
    )
    const { result } = await h.run('commit the work')
    assert.equal(result.status, 'done', result.reason)
    assert.equal(result.text, 'removed the secret')
    assert.match(textOf(before + 2), /Background security review:\n\nthe commit adds a secret/)
    assert.equal(review.payloads().length, 1)
  })

  it('PreToolUse: defer stops an agent run at its only call; the call does not run, the reason names it', async () => {
    const hook = program(printSpecific('PreToolUse', { permissionDecision: 'defer' }))
    await install({ PreToolUse: [group('notes_add', command(hook.file))] })
    server.push({ toolCalls: [{ id: 'd1', name: 'notes_add', args: { command: 'later' } }] })
    ran.length = 0
    const { result } = await h.run('add a note')
    assert.deepEqual(ran, [], 'the deferred call did not run')
    assert.equal(result.status, 'failed')
    assert.match(
      result.reason ?? '',
      /tool_deferred: \{"id":"[^"]+","name":"notes_add","input":\{"command":"later"\}\}/,
    )
    // two calls in one turn: defer is ignored (a warning) and the calls go on
    server.push(
      {
        toolCalls: [
          { id: 'd2', name: 'notes_add', args: { command: 'a' } },
          { id: 'd3', name: 'notes_add', args: { command: 'b' } },
        ],
      },
      { text: 'both added' },
    )
    const second = await h.run('add two notes')
    assert.equal(second.result.status, 'done', second.result.reason)
    assert.equal(ran.length, 2)
    assert.ok(h.logs.some((l) => /defer needs a run's only call/.test(l.message)))
  })

  it('PreToolUse: an agent handler runs a short agent run on read-only tools and its ok: false denies', async () => {
    await install({
      PreToolUse: [
        group('notes_add', {
          type: 'agent',
          prompt: 'Read the notes and say whether this may be added: $ARGUMENTS',
        }),
      ],
    })
    const before = server.requests.length
    server.push(
      { toolCalls: [{ id: 'r1', name: 'notes_read', args: {} }] },
      { text: '{"ok": false, "reason": "the notes say the list is frozen"}' },
    )
    ran.length = 0
    const r = await h.rt.call('notes_add', { command: 'one more' })
    assert.equal(r.status, 'DENIED')
    assert.match(r.error!.message, /the list is frozen/)
    assert.deepEqual(
      ran.map((c) => c.tool),
      ['notes_read'],
      'the agent read the notes; the denied call never ran',
    )
    const asked = server.requests[before]!.body
    assert.match(messagesOf(before)[0].content, /"tool_input":\{"command":"one more"\}/)
    const offered = (asked.tools ?? []).map((t: any) => t.function.name)
    assert.deepEqual(offered, ['notes_read'], 'only the read-only tool is offered')
  })

  it('PostToolUse: an mcp_tool handler calls the tool through the runtime, ${tool_input.*} filled in; its JSON decides', async () => {
    await install({
      PostToolUse: [
        group('notes_add', {
          type: 'mcp_tool',
          server: 'audit',
          tool: 'check',
          input: { note: '${tool_input.command}', tool: '${tool_name}' },
        }),
      ],
    })
    ran.length = 0
    const r = await h.rt.call('notes_add', { command: 'ship it' })
    assert.equal(r.status, 'ok')
    assert.deepEqual(ran, [
      { tool: 'notes_add', args: { command: 'ship it' } },
      { tool: 'mcp__audit__check', args: { note: 'ship it', tool: 'notes_add' } },
    ])
    assert.match(r.content.map((c: any) => c.text).join('\n'), /audited: ship it/)
    // a server that is not there: a non-blocking error naming the tool
    await install({
      PreToolUse: [group('notes_add', { type: 'mcp_tool', server: 'gone', tool: 'check' })],
    })
    assert.equal((await h.rt.call('notes_add', { command: 'still' })).status, 'ok')
    assert.ok(
      h.logs.some(
        (l) => l.level === 'warn' && /mcp__gone__check answered UNKNOWN_TOOL/.test(l.message),
      ),
    )
  })

  it('PostToolUseFailure: runs on an error result (its context joins it) and on a body that threw; PostToolUse does not', async () => {
    const failure = program(
      printSpecific('PostToolUseFailure', {
        additionalContext: 'the flaky service is down on Sundays',
      }),
    )
    const success = program('exit 0')
    await install({
      PostToolUseFailure: [group('soft_fail|hard_fail', command(failure.file))],
      PostToolUse: [group('*', command(success.file))],
    })
    const soft = await h.rt.call('soft_fail', {})
    assert.equal(soft.ok, false)
    assert.match(
      soft.content.map((c: any) => c.text).join('\n'),
      /the flaky service is down on Sundays/,
    )
    const hard = await h.rt.call('hard_fail', {})
    assert.equal(hard.status, 'EXEC_FAILED')
    await until(
      'the failure of the body that threw to be told',
      () => failure.payloads().length === 2,
    )
    const [p1, p2] = failure.payloads()
    assert.equal(p1!.hook_event_name, 'PostToolUseFailure')
    assert.match(String(p1!.error), /the service answered 503/)
    assert.equal(p2!.tool_name, 'hard_fail')
    assert.match(String(p2!.error), /connection reset/)
    assert.equal(success.payloads().length, 0, 'PostToolUse runs on successes only')
    const denied = program('exit 2')
    await install({ PreToolUse: [group('soft_fail', command(denied.file))] })
    assert.equal((await h.rt.call('soft_fail', {})).status, 'DENIED')
    assert.equal(failure.payloads().length, 2, 'a denial is no failure of execution')
  })

  it('PostToolBatch: runs once after the turn’s calls, with all of them; its context reaches the next request', async () => {
    const hook = program(
      printSpecific('PostToolBatch', { additionalContext: 'Both notes are in the ledger now.' }),
    )
    await install({ PostToolBatch: [group(undefined, command(hook.file))] })
    server.push(
      {
        toolCalls: [
          { id: 'b1', name: 'notes_add', args: { command: 'x' } },
          { id: 'b2', name: 'notes_add', args: { command: 'y' } },
        ],
      },
      { text: 'done' },
    )
    const before = server.requests.length
    const { result } = await h.run('add two')
    assert.equal(result.status, 'done', result.reason)
    const [payload] = hook.payloads()
    assert.equal(hook.payloads().length, 1)
    assert.deepEqual(
      (payload!.tool_calls as any[]).map((c) => [c.tool_use_id, c.tool_name, c.tool_response]),
      [
        ['b1', 'notes_add', 'noted x'],
        ['b2', 'notes_add', 'noted y'],
      ],
    )
    assert.match(textOf(before + 1), /Both notes are in the ledger now\./)
  })

  it('PermissionRequest and Notification: a call that needs approval tells Notification and the hook answers for the person', async () => {
    const ask = program(
      printSpecific('PreToolUse', {
        permissionDecision: 'ask',
        permissionDecisionReason: 'notes are precious',
      }),
    )
    const allow = program(printSpecific('PermissionRequest', { decision: { behavior: 'allow' } }))
    const deny = program(
      printSpecific('PermissionRequest', {
        decision: { behavior: 'deny', message: 'not on a Friday' },
      }),
    )
    const notified = program('exit 0')
    await install({
      PreToolUse: [group('notes_add|shell_run', command(ask.file))],
      PermissionRequest: [
        group('notes_add', command(allow.file)),
        group('shell_run', command(deny.file)),
      ],
      Notification: [group('permission_prompt', command(notified.file))],
    })
    assert.equal((await h.rt.call('notes_add', { command: 'ok?' })).status, 'ok')
    const refused = await h.rt.call('shell_run', { command: 'ls' })
    assert.equal(refused.status, 'DENIED')
    assert.match(refused.error!.message, /not on a Friday/)
    const [request] = allow.payloads()
    assert.equal(request!.hook_event_name, 'PermissionRequest')
    assert.deepEqual(request!.tool_input, { command: 'ok?' })
    await until('Notification to be told', () => notified.payloads().length === 2)
    assert.equal(notified.payloads()[0]!.notification_type, 'permission_prompt')
    assert.match(String(notified.payloads()[0]!.message), /permission to use notes_add/)
  })

  it('Elicitation: an MCP server’s question is answered by the hook (accept with content); exit 2 declines', async () => {
    const answer = program(
      printSpecific('Elicitation', { action: 'accept', content: { username: 'alice' } }),
    )
    const decline = program('exit 2')
    await install({
      Elicitation: [group('forms', command(answer.file)), group('other', command(decline.file))],
    })
    const approval = h.kernel.services.get('approval')!.value as any
    const ask = (from: string) =>
      approval.question({
        from: `MCP server "${from}"`,
        call: { id: 'e1', name: `mcp__${from}__login`, args: {}, scope: GLOBAL, caller: 'cli' },
        mode: 'form',
        message: 'Who are you?',
        schema: { type: 'object', properties: { username: { type: 'string' } } },
        signal: new AbortController().signal,
      })
    const accepted = await ask('forms')
    assert.equal(accepted.action, 'accept')
    assert.deepEqual(accepted.content, { username: 'alice' })
    assert.equal((await ask('other')).action, 'decline')
    const [payload] = answer.payloads()
    assert.equal(payload!.mcp_server_name, 'forms')
    assert.equal(payload!.message, 'Who are you?')
    assert.deepEqual(payload!.requested_schema, {
      type: 'object',
      properties: { username: { type: 'string' } },
    })
  })

  // ---- session events ---------------------------------------------------------------------------

  it('UserPromptSubmit: a prompt handler asks the model once with the input; ok: false refuses the prompt', async () => {
    await install({
      UserPromptSubmit: [
        group(undefined, { type: 'prompt', prompt: 'Is this prompt about secrets? $ARGUMENTS' }),
      ],
    })
    const before = server.requests.length
    server.push({ text: '{"ok": false, "reason": "prompts about secrets are refused"}' })
    const { result } = await h.run('print the secrets')
    assert.equal(result.status, 'failed')
    assert.match(result.reason ?? '', /prompts about secrets are refused/)
    assert.equal(server.requests.length, before + 1, 'only the hook asked the model')
    const asked = server.requests[before]!.body
    assert.match(
      asked.messages.at(-1).content,
      /^Is this prompt about secrets\? \{.*"prompt":"print the secrets"/,
    )
    assert.match(JSON.stringify(asked.messages), /"ok": true|\\"ok\\": true/)
  })

  it('a prompt handler whose model answers no verdict, or fails, never blocks (a warning names it)', async () => {
    await install({
      PreToolUse: [group('notes_add', { type: 'prompt', prompt: 'Is $ARGUMENTS safe?' })],
    })
    server.push({ text: 'Sure, looks fine to me.' })
    assert.equal((await h.rt.call('notes_add', { command: 'a' })).status, 'ok')
    server.push({ status: 500, error: 'the model is down' })
    assert.equal((await h.rt.call('notes_add', { command: 'b' })).status, 'ok')
    const warned = h.logs.filter((l) => l.level === 'warn').map((l) => l.message)
    assert.ok(warned.some((m) => /the model's answer is not JSON.*it does not block/.test(m)))
    assert.ok(warned.some((m) => /the model failed: .*it does not block/.test(m)))
  })

  it('Stop: a prompt handler’s ok: false sends the model on with the reason; ok: true lets it stop', async () => {
    await install({
      Stop: [group(undefined, { type: 'prompt', prompt: 'Are all tasks complete? $ARGUMENTS' })],
    })
    const before = server.requests.length
    server.push(
      { text: 'all done' },
      { text: '{"ok": false, "reason": "the tests were not run"}' },
      { text: 'ran the tests' },
      { text: '{"ok": true}' },
    )
    const { result } = await h.run('finish the work')
    assert.equal(result.status, 'done', result.reason)
    assert.equal(result.text, 'ran the tests')
    assert.match(textOf(before + 2), /the tests were not run/)
    assert.match(
      server.requests[before + 1]!.body.messages.at(-1).content,
      /"last_assistant_message":"all done"/,
    )
  })

  it('transcript_path is the run in Claude Code’s JSONL shape: a Stop hook reads the last assistant text as ralph-wiggum does', async () => {
    const stop = program(
      `t=$(printf '%s' "$payload" | jq -r .transcript_path); grep '"role":"assistant"' "$t" | tail -1 | jq -r '.message.content | map(select(.type == "text")) | map(.text) | join("\\n")' > "$t.last"`,
    )
    await install({ Stop: [group(undefined, command(stop.file))] })
    server.push(
      { toolCalls: [{ id: 't1', name: 'notes_add', args: { command: 'n' } }] },
      { text: 'the notes are in' },
    )
    const { result } = await h.run('take notes')
    assert.equal(result.status, 'done', result.reason)
    const file = String(stop.payloads()[0]!.transcript_path)
    assert.match(file, /\.claude\.jsonl$/)
    assert.equal(readFileSync(`${file}.last`, 'utf8'), 'the notes are in\n')
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    assert.deepEqual(
      lines.map((l) => [l.type, l.message.content[0]?.type ?? typeof l.message.content]),
      [
        ['user', 'string'],
        ['assistant', 'tool_use'],
        ['user', 'tool_result'],
        ['assistant', 'text'],
      ],
    )
  })

  it('SessionStart: an mcp_tool handler’s text goes before the task; SessionEnd runs at the end', async () => {
    const end = program('exit 0')
    await install({
      SessionStart: [group('startup', { type: 'mcp_tool', server: 'ctx', tool: 'info' })],
      SessionEnd: [group(undefined, command(end.file))],
    })
    const before = server.requests.length
    server.push({ text: 'hello' })
    const { result } = await h.run('greet me')
    assert.equal(result.status, 'done', result.reason)
    assert.match(messagesOf(before).at(-1).content, /^The release is on Friday\.\n\ngreet me$/)
    await until('SessionEnd to run', () => end.payloads().length === 1)
    assert.equal(end.payloads()[0]!.reason, 'other')
  })

  it('SubagentStart and SubagentStop: a spawned run gets SubagentStart’s context, not SessionStart', async () => {
    const start = program(
      printSpecific('SubagentStart', { additionalContext: 'Subagents cite sources.' }),
    )
    const session = program('echo main-context')
    const stop = program('exit 0')
    await install({
      SubagentStart: [group('*', command(start.file))],
      SessionStart: [group(undefined, command(session.file))],
      SubagentStop: [group('*', command(stop.file))],
    })
    const before = server.requests.length
    server.push(
      { toolCalls: [{ id: 's1', name: 'spawn', args: { task: 'look it up' } }] },
      { text: 'found it' },
      { text: 'the answer is 42' },
    )
    const { result } = await h.run('find the answer')
    assert.equal(result.status, 'done', result.reason)
    assert.match(messagesOf(before + 1)[0].content, /^Subagents cite sources\.\n\nlook it up$/)
    assert.equal(session.payloads().length, 1, 'SessionStart ran for the main run only')
    assert.equal(typeof start.payloads()[0]!.agent_id, 'string')
    assert.equal(stop.payloads()[0]!.hook_event_name, 'SubagentStop')
  })

  it('StopFailure: a run the model failed tells it the error type (rate_limit); its output is ignored', async () => {
    const hook = program(printJson({ decision: 'block', reason: 'ignored' }))
    await install({ StopFailure: [group('rate_limit', command(hook.file))] })
    server.push({ status: 429, error: 'Rate limit reached' })
    const { result } = await h.run('anything')
    assert.equal(result.status, 'failed')
    await until('StopFailure to run', () => hook.payloads().length === 1)
    assert.equal(hook.payloads()[0]!.error, 'rate_limit')
    assert.match(String(hook.payloads()[0]!.error_details), /429/)
  })

  // ---- files ------------------------------------------------------------------------------------

  it('ConfigChange: exit 2 keeps a settings file’s hooks in force when it changes', async () => {
    mkdirSync(join(h.root, '.claude'), { recursive: true })
    const guard = program('exit 2')
    const deny = program(`printf '%s' 'frozen' >&2; exit 2`)
    const settings = join(h.root, '.claude', 'settings.json')
    const hooks = {
      ConfigChange: [group('project_settings', command(guard.file))],
      PreToolUse: [group('notes_add', command(deny.file))],
    }
    writeFileSync(settings, JSON.stringify({ hooks }))
    await add({ files: ['.claude/settings.json'] })
    assert.equal((await h.rt.call('notes_add', { command: 'a' })).status, 'DENIED')
    writeFileSync(settings, JSON.stringify({ hooks: { ConfigChange: hooks.ConfigChange } }))
    await until('ConfigChange to run', () => guard.payloads().length === 1)
    assert.equal(guard.payloads()[0]!.source, 'project_settings')
    assert.equal(guard.payloads()[0]!.file_path, settings)
    await until('the block to be logged', () =>
      h.logs.some((l) => /blocked the change/.test(l.message)),
    )
    assert.equal((await h.rt.call('notes_add', { command: 'b' })).status, 'DENIED', 'kept')
  })

  it('FileChanged: the files its matcher names are watched; a change runs it with the path and what happened', async () => {
    const hook = program('exit 0')
    await install({ FileChanged: [group('.envrc|.env', command(hook.file))] })
    // written until seen: the watch of a file not there yet arms a little after the instance starts
    let writes = 0
    await until(
      'FileChanged to run',
      () => {
        if (hook.payloads().length) return true
        writeFileSync(join(h.root, '.envrc'), `export A=${++writes}\n`)
        return false
      },
      { every: 300 },
    )
    const [payload] = hook.payloads()
    assert.equal(payload!.file_path, join(h.root, '.envrc'))
    assert.match(String(payload!.event), /^(add|change)$/)
  })

  // ---- events with no counterpart in yoke ---------------------------------------------------------

  for (const event of ALL_EVENTS.filter((e) => !(FIRED_EVENTS as readonly string[]).includes(e)))
    it(`${event}: accepted, reported once with why it has no counterpart, and never run`, async () => {
      const hook = program('exit 0')
      const mark = h.logs.length
      await install({ [event]: [group(undefined, command(hook.file))] })
      server.push(
        { toolCalls: [{ id: 'w1', name: 'notes_add', args: { command: 'w' } }] },
        { text: 'ok' },
      )
      const { result } = await h.run(`exercise ${event}`)
      assert.equal(result.status, 'done', result.reason)
      const said = h.logs
        .slice(mark)
        .filter((l) => l.message.includes(`${event} has no counterpart in yoke (`))
      assert.equal(said.length, 1, `one warning for ${event}`)
      assert.equal(said[0]!.level, 'warn')
      assert.equal(hook.payloads().length, 0, `${event} never ran`)
    })
})

/** The tools the events exercise: notes, calls that fail two ways, a read-only one, two "MCP" ones. */
function testTools(ran: Ran) {
  return (runtime: RuntimeApi) => {
    const note = (tool: string, args: Record<string, unknown>) => void ran.push({ tool, args })
    commandTools(runtime, ran, ['notes_add', 'shell_run'], (_, said) => `noted ${said}`)
    runtime.register({
      name: 'notes_read',
      annotations: { readOnlyHint: true },
      execute: (args) => (note('notes_read', args), 'The list is frozen until Monday.'),
    })
    runtime.register({
      name: 'soft_fail',
      execute: () => ({
        content: [{ type: 'text', text: 'the service answered 503' }],
        isError: true,
      }),
    })
    runtime.register({
      name: 'hard_fail',
      execute: () => {
        throw new Error('connection reset')
      },
    })
    runtime.register({
      name: 'mcp__audit__check',
      source: 'mcp:audit',
      execute: (args) => {
        note('mcp__audit__check', args)
        return JSON.stringify({
          hookSpecificOutput: {
            hookEventName: 'PostToolUse',
            additionalContext: `audited: ${String(args.note)}`,
          },
        })
      },
    })
    runtime.register({
      name: 'mcp__ctx__info',
      source: 'mcp:ctx',
      execute: () => 'The release is on Friday.',
    })
  }
}
