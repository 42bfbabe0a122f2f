// The hook-adapter conformance suite, event by event: each of Claude Code's 34 hook events (SDK
// 0.3.333's HOOK_EVENTS) either runs as Claude Code documents it, on a real agent loop against a
// model server speaking OpenAI's wire format, with real child processes for command handlers and
// that model for prompt and agent handlers, or is reported once as having no counterpart in yoke,
// with why, and never runs. Each handler type runs at least once: command, http (claude-hooks.test),
// prompt, agent and mcp_tool.
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import openai from '../../../plugins/openai/index.ts'
import claudeHooks from '../../../plugins/claude-hooks/index.ts'
import { FIRED_EVENTS } from '../../../plugins/claude-hooks/api.ts'
import { GLOBAL, type Context, type Fiber, type RuntimeApi } from '../../../src/index.ts'
import { hookProgram, shQuote } from '../../conformance/hooks.ts'
import { agentHarness, type AgentHarness } from '../../helpers/agent.ts'
import { modelServer, type ModelServer } from '../../helpers/model-server.ts'
import { until } from '../../helpers/until.ts'

process.env.TEST_CLAUDE_EVENTS_KEY = 'sk-test'
const json = (value: unknown) => `printf '%s' ${shQuote(JSON.stringify(value))}`

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
  let server: ModelServer
  let h: AgentHarness
  const ran: Array<{ tool: string; args: unknown }> = []
  const added: Fiber[] = []
  let n = 0

  before(async () => {
    server = await modelServer()
    h = await agentHarness({
      model: [
        openai,
        {
          model: 'gpt-test',
          apiKeyEnv: 'TEST_CLAUDE_EVENTS_KEY',
          baseUrl: server.openaiBaseUrl,
          maxRetries: 0,
        },
      ],
      extra: [[testTools(ran), {}, 'tools']],
    })
  })
  after(async () => {
    await h?.close()
    await server?.close()
  })
  const install = async (hooks: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const file = `events-${++n}.json`
    writeFileSync(join(h.root, file), JSON.stringify({ hooks }, null, 2))
    const fiber = await h.add(claudeHooks, { files: [file], ...extra }, `events-${n}`)
    await h.kernel.settled()
    assert.equal(fiber.state, 'active', fiber.error?.message)
    added.push(fiber)
    return join(h.root, file)
  }
  const removeAll = async () => {
    for (const f of added.splice(0)) await h.kernel.remove(f)
  }
  const program = (body: string) => hookProgram(h.root, `event-${++n}.sh`, body)
  const command = (file: string, more = {}) => ({ type: 'command', command: file, ...more })
  const group = (matcher: string | undefined, ...hooks: unknown[]) => ({
    ...(matcher !== undefined && { matcher }),
    hooks,
  })
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
    try {
      const pushed = await h.rt.call('shell_run', { command: 'cd repo && FOO=1 git push origin' })
      assert.equal(pushed.status, 'DENIED')
      assert.match(pushed.error!.message, /no pushing from here/)
      const tested = await h.rt.call('shell_run', { command: 'npm test' })
      assert.equal(tested.status, 'ok')
      assert.equal(hook.payloads().length, 1, 'the handler never spawned for npm test')
      assert.equal(hook.payloads()[0]!.tool_name, 'shell_run')
    } finally {
      await removeAll()
    }
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
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('PreToolUse: defer stops an agent run at its only call; the call does not run, the reason names it', async () => {
    const hook = program(
      json({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'defer' } }),
    )
    await install({ PreToolUse: [group('notes_add', command(hook.file))] })
    try {
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
    } finally {
      await removeAll()
    }
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
    try {
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
    } finally {
      await removeAll()
    }
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
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('PostToolUseFailure: runs on an error result (its context joins it) and on a body that threw; PostToolUse does not', async () => {
    const failure = program(
      json({
        hookSpecificOutput: {
          hookEventName: 'PostToolUseFailure',
          additionalContext: 'the flaky service is down on Sundays',
        },
      }),
    )
    const success = program('exit 0')
    await install({
      PostToolUseFailure: [group('soft_fail|hard_fail', command(failure.file))],
      PostToolUse: [group('*', command(success.file))],
    })
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('PostToolBatch: runs once after the turn’s calls, with all of them; its context reaches the next request', async () => {
    const hook = program(
      json({
        hookSpecificOutput: {
          hookEventName: 'PostToolBatch',
          additionalContext: 'Both notes are in the ledger now.',
        },
      }),
    )
    await install({ PostToolBatch: [group(undefined, command(hook.file))] })
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('PermissionRequest and Notification: a call that needs approval tells Notification and the hook answers for the person', async () => {
    const ask = program(
      json({
        hookSpecificOutput: {
          hookEventName: 'PreToolUse',
          permissionDecision: 'ask',
          permissionDecisionReason: 'notes are precious',
        },
      }),
    )
    const allow = program(
      json({
        hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } },
      }),
    )
    const deny = program(
      json({
        hookSpecificOutput: {
          hookEventName: 'PermissionRequest',
          decision: { behavior: 'deny', message: 'not on a Friday' },
        },
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
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('Elicitation: an MCP server’s question is answered by the hook (accept with content); exit 2 declines', async () => {
    const answer = program(
      json({
        hookSpecificOutput: {
          hookEventName: 'Elicitation',
          action: 'accept',
          content: { username: 'alice' },
        },
      }),
    )
    const decline = program('exit 2')
    await install({
      Elicitation: [group('forms', command(answer.file)), group('other', command(decline.file))],
    })
    try {
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
    } finally {
      await removeAll()
    }
  })

  // ---- session events ---------------------------------------------------------------------------

  it('UserPromptSubmit: a prompt handler asks the model once with the input; ok: false refuses the prompt', async () => {
    await install({
      UserPromptSubmit: [
        group(undefined, { type: 'prompt', prompt: 'Is this prompt about secrets? $ARGUMENTS' }),
      ],
    })
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('a prompt handler whose model answers no verdict, or fails, never blocks (a warning names it)', async () => {
    await install({
      PreToolUse: [group('notes_add', { type: 'prompt', prompt: 'Is $ARGUMENTS safe?' })],
    })
    try {
      server.push({ text: 'Sure, looks fine to me.' })
      assert.equal((await h.rt.call('notes_add', { command: 'a' })).status, 'ok')
      server.push({ status: 500, error: 'the model is down' })
      assert.equal((await h.rt.call('notes_add', { command: 'b' })).status, 'ok')
      const warned = h.logs.filter((l) => l.level === 'warn').map((l) => l.message)
      assert.ok(warned.some((m) => /the model's answer is not JSON.*it does not block/.test(m)))
      assert.ok(warned.some((m) => /the model failed: .*it does not block/.test(m)))
    } finally {
      await removeAll()
    }
  })

  it('Stop: a prompt handler’s ok: false sends the model on with the reason; ok: true lets it stop', async () => {
    await install({
      Stop: [group(undefined, { type: 'prompt', prompt: 'Are all tasks complete? $ARGUMENTS' })],
    })
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('transcript_path is the run in Claude Code’s JSONL shape: a Stop hook reads the last assistant text as ralph-wiggum does', async () => {
    const stop = program(
      `t=$(printf '%s' "$payload" | jq -r .transcript_path); grep '"role":"assistant"' "$t" | tail -1 | jq -r '.message.content | map(select(.type == "text")) | map(.text) | join("\\n")' > "$t.last"`,
    )
    await install({ Stop: [group(undefined, command(stop.file))] })
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('SessionStart: an mcp_tool handler’s text goes before the task; SessionEnd runs at the end', async () => {
    const end = program('exit 0')
    await install({
      SessionStart: [group('startup', { type: 'mcp_tool', server: 'ctx', tool: 'info' })],
      SessionEnd: [group(undefined, command(end.file))],
    })
    try {
      const before = server.requests.length
      server.push({ text: 'hello' })
      const { result } = await h.run('greet me')
      assert.equal(result.status, 'done', result.reason)
      assert.match(messagesOf(before).at(-1).content, /^The release is on Friday\.\n\ngreet me$/)
      await until('SessionEnd to run', () => end.payloads().length === 1)
      assert.equal(end.payloads()[0]!.reason, 'other')
    } finally {
      await removeAll()
    }
  })

  it('SubagentStart and SubagentStop: a spawned run gets SubagentStart’s context, not SessionStart', async () => {
    const start = program(
      json({
        hookSpecificOutput: {
          hookEventName: 'SubagentStart',
          additionalContext: 'Subagents cite sources.',
        },
      }),
    )
    const session = program('echo main-context')
    const stop = program('exit 0')
    await install({
      SubagentStart: [group('*', command(start.file))],
      SessionStart: [group(undefined, command(session.file))],
      SubagentStop: [group('*', command(stop.file))],
    })
    try {
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
    } finally {
      await removeAll()
    }
  })

  it('StopFailure: a run the model failed tells it the error type (rate_limit); its output is ignored', async () => {
    const hook = program(json({ decision: 'block', reason: 'ignored' }))
    await install({ StopFailure: [group('rate_limit', command(hook.file))] })
    try {
      server.push({ status: 429, error: 'Rate limit reached' })
      const { result } = await h.run('anything')
      assert.equal(result.status, 'failed')
      await until('StopFailure to run', () => hook.payloads().length === 1)
      assert.equal(hook.payloads()[0]!.error, 'rate_limit')
      assert.match(String(hook.payloads()[0]!.error_details), /429/)
    } finally {
      await removeAll()
    }
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
    const fiber = await h.add(claudeHooks, { files: ['.claude/settings.json'] }, `events-${++n}`)
    added.push(fiber)
    try {
      assert.equal((await h.rt.call('notes_add', { command: 'a' })).status, 'DENIED')
      writeFileSync(settings, JSON.stringify({ hooks: { ConfigChange: hooks.ConfigChange } }))
      await until('ConfigChange to run', () => guard.payloads().length === 1)
      assert.equal(guard.payloads()[0]!.source, 'project_settings')
      assert.equal(guard.payloads()[0]!.file_path, settings)
      await until('the block to be logged', () =>
        h.logs.some((l) => /blocked the change/.test(l.message)),
      )
      assert.equal((await h.rt.call('notes_add', { command: 'b' })).status, 'DENIED', 'kept')
    } finally {
      await removeAll()
    }
  })

  it('FileChanged: the files its matcher names are watched; a change runs it with the path and what happened', async () => {
    const hook = program('exit 0')
    await install({ FileChanged: [group('.envrc|.env', command(hook.file))] })
    try {
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
    } finally {
      await removeAll()
    }
  })

  // ---- events with no counterpart in yoke ---------------------------------------------------------

  for (const event of ALL_EVENTS.filter((e) => !(FIRED_EVENTS as readonly string[]).includes(e)))
    it(`${event}: accepted, reported once with why it has no counterpart, and never run`, async () => {
      const hook = program('exit 0')
      const mark = h.logs.length
      await install({ [event]: [group(undefined, command(hook.file))] })
      try {
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
      } finally {
        await removeAll()
      }
    })
})

/** The tools the events exercise: notes, calls that fail two ways, a read-only one, two "MCP" ones. */
function testTools(ran: Array<{ tool: string; args: unknown }>) {
  return {
    name: 'event-tools',
    inject: ['runtime'],
    apply(ctx: Context & { runtime: RuntimeApi }) {
      const note = (tool: string, args: Record<string, unknown>) => void ran.push({ tool, args })
      const command = {
        type: 'object',
        properties: { command: { type: 'string' } },
        additionalProperties: false,
      }
      for (const name of ['notes_add', 'shell_run'])
        ctx.runtime.register({
          name,
          inputSchema: command,
          execute: (args) => (note(name, args), `noted ${String(args.command)}`),
        })
      ctx.runtime.register({
        name: 'notes_read',
        annotations: { readOnlyHint: true },
        execute: (args) => (note('notes_read', args), 'The list is frozen until Monday.'),
      })
      ctx.runtime.register({
        name: 'soft_fail',
        execute: () => ({
          content: [{ type: 'text', text: 'the service answered 503' }],
          isError: true,
        }),
      })
      ctx.runtime.register({
        name: 'hard_fail',
        execute: () => {
          throw new Error('connection reset')
        },
      })
      ctx.runtime.register({
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
      ctx.runtime.register({
        name: 'mcp__ctx__info',
        source: 'mcp:ctx',
        execute: () => 'The release is on Friday.',
      })
    },
  }
}
