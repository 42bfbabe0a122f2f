// Claude Code hooks (claude-hooks) given hostile material: a handler nested 5,000 deep in a
// hooks.json (refused at load, by file and handler, the others load), output nested deep or 100 MB
// large (a program's stdout, an http answer). A hook's own failure is non-blocking (Claude Code's
// rule): the call goes on, and the warning names the hook and says what went wrong.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { stringify } from 'yaml'
import type { LogRecord, ToolResult, ToolRuntime } from '../../../src/index.ts'
import { composedProject, hookProgram } from '../../conformance/hooks.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
/** `{"x":{"x":…1…}}`, `depth` objects deep, as text (JSON.parse reads it; JSON.stringify of it overflows). */
const deepJson = (depth: number, leaf = '1') => '{"x":'.repeat(depth) + leaf + '}'.repeat(depth)

describe('claude-hooks: hostile hooks never block a call', () => {
  let project: Project
  let rt: ToolRuntime
  let logs: LogRecord[]
  let close: () => Promise<void>
  let reload: () => Promise<void>
  const instances: Record<string, unknown> = {}
  let n = 0

  before(async () => {
    project = tempProject()
    const composed = await composedProject(project, () =>
      project.write('yoke.config.yaml', stringify({ preset: 'minimal', plugins: instances })),
    )
    rt = composed.composition.runtime!
    logs = composed.logs
    reload = composed.reload
    close = () => composed.composition.close()
  })
  after(async () => {
    await close?.()
    project?.cleanup()
  })

  /** A fresh tool (its own name, so no case sees another's hooks) whose body records its runs. */
  const tool = (schema: Record<string, unknown> = { msg: { type: 'string' } }) => {
    const name = `hostile_${++n}`
    const ran: unknown[] = []
    rt.register({
      name,
      inputSchema: { type: 'object', properties: schema },
      execute: (args) => {
        ran.push(args)
        return `${name} ran`
      },
    })
    return { name, ran }
  }
  /** A claude-hooks instance reading `hooksText` (a hooks.json's whole text) from a file. */
  const install = async (hooksText: string) => {
    const key = `hooks${++n}`
    const file = project.write(`${key}.json`, hooksText)
    instances[key] = { use: 'claude-hooks', config: { files: [`${key}.json`] } }
    await reload()
    return file
  }
  const warnings = () => logs.filter((l) => l.level === 'warn' || l.level === 'error')

  it('a handler nested 5,000 deep is refused at load, naming the file and the handler; the others run and the call goes on', async () => {
    const t = tool()
    const good = hookProgram(project.dir, 'good.sh', 'exit 0')
    const deep = `{"type":"command","command":"true","extra":${deepJson(5000)}}`
    const file = await install(
      `{"hooks":{"PreToolUse":[{"matcher":"${t.name}","hooks":[` +
        `{"type":"command","command":"${good.file}"},\n${deep}]}]}}`,
    )
    const refused = warnings().find((l) => l.message.includes('PreToolUse[0].hooks[1]'))
    assert.ok(refused, JSON.stringify(warnings()))
    assert.ok(refused.message.includes(file), refused.message)
    assert.match(refused.message, /deeper than 64 levels; this handler is refused/)
    assert.ok(
      warnings().some((l) => l.message.startsWith(`${file}:2:`) && /nests deeper/.test(l.message)),
      'the line where the nesting passes the bound is said',
    )
    const r = await rt.call(t.name, { msg: 'hi' })
    assert.equal(r.status, 'ok', text(r))
    assert.deepEqual(t.ran, [{ msg: 'hi' }])
    assert.equal(good.payloads().length, 1, 'the good handler ran')
  })

  it('a hooks file 150,000 levels deep or more, broken or whole, is read at once and reported, never parsed by yaml; the instance stays up', async () => {
    const t = tool()
    const before = logs.length
    const started = Date.now()
    const broken = await install(`{"hooks":{"PreToolUse":${'['.repeat(200_000)}`)
    const whole = await install(
      `{"hooks":{"PreToolUse":[{"matcher":"${t.name}","hooks":[${deepJson(150_000)}]}]}}`,
    )
    assert.ok(Date.now() - started < 8_000, `took ${Date.now() - started} ms`)
    const said = logs.slice(before).map((l) => l.message)
    assert.ok(
      said.some((m) => m.startsWith(`${broken}:1:`) && /not JSON/.test(m)),
      said.join('\n'),
    )
    assert.ok(
      said.some((m) => m.includes(whole) && /PreToolUse\[0\]\.hooks\[0\]: nested deeper/.test(m)),
      said.join('\n'),
    )
    assert.equal((await rt.call(t.name, { msg: 'x' })).status, 'ok')
  })

  it('JSON output nested 100,000 deep (updatedInput, updatedToolOutput) is a non-blocking error', async () => {
    const t = tool()
    const pre = hookProgram(
      project.dir,
      'deep-pre.sh',
      `printf '%s' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":${deepJson(100_000)}}}'`,
    )
    const post = hookProgram(
      project.dir,
      'deep-post.sh',
      `printf '%s' '{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":${deepJson(100_000)}}}'`,
    )
    const group = (command: string) => [{ matcher: t.name, hooks: [{ type: 'command', command }] }]
    await install(
      JSON.stringify({ hooks: { PreToolUse: group(pre.file), PostToolUse: group(post.file) } }),
    )
    const before = logs.length
    const r = await rt.call(t.name, { msg: 'keep' })
    assert.equal(r.status, 'ok', text(r))
    assert.deepEqual(t.ran, [{ msg: 'keep' }], 'the call kept its own arguments')
    assert.equal(text(r), `${t.name} ran`, 'the output stays')
    const said = logs
      .slice(before)
      .filter((l) => l.level === 'warn')
      .map((l) => l.message)
    assert.ok(
      said.some((m) => m.includes(pre.file) && /deeper than \d+ levels/.test(m)),
      said.join('\n'),
    )
    assert.ok(
      said.some((m) => m.includes(post.file) && /deeper than \d+ levels/.test(m)),
      said.join('\n'),
    )
  })

  it('an http handler answering 100 MB is stopped at the cap, unread past it; the call goes on', async () => {
    const t = tool()
    let sent = 0
    const server = createServer((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/plain' })
      const chunk = Buffer.alloc(1 << 20, 'a')
      const more = () => {
        while (sent < 100 << 20 && !res.destroyed) {
          sent += chunk.length
          if (!res.write(chunk)) return void res.once('drain', more)
        }
        res.end()
      }
      res.on('error', () => {})
      more()
    })
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
      await install(
        JSON.stringify({
          hooks: { PreToolUse: [{ matcher: t.name, hooks: [{ type: 'http', url }] }] },
        }),
      )
      const before = logs.length
      const r = await rt.call(t.name, { msg: 'x' })
      assert.equal(r.status, 'ok', text(r))
      const said = logs
        .slice(before)
        .filter((l) => l.message.includes(url))
        .map((l) => l.message)
      assert.ok(
        said.some((m) => /over 1048576 bytes, stopped/.test(m)),
        said.join('\n'),
      )
      assert.ok(sent < 100 << 20, `the server sent all ${sent} bytes: the body was read whole`)
    } finally {
      server.closeAllConnections()
      await new Promise((ok) => server.close(ok))
    }
  })

  it('100 MB of output is stopped at the cap, and said so (not "killed by SIGKILL"); the call goes on', async () => {
    const t = tool()
    const flood = hookProgram(project.dir, 'flood.sh', 'head -c 100000000 /dev/zero | tr "\\0" a')
    await install(
      JSON.stringify({
        hooks: {
          PreToolUse: [{ matcher: t.name, hooks: [{ type: 'command', command: flood.file }] }],
        },
      }),
    )
    const before = logs.length
    const r = await rt.call(t.name, { msg: 'x' })
    assert.equal(r.status, 'ok', text(r))
    const said = logs
      .slice(before)
      .filter((l) => l.message.includes(flood.file))
      .map((l) => l.message)
    assert.ok(
      said.some((m) => /output over 1048576 bytes, stopped/.test(m)),
      said.join('\n'),
    )
    assert.ok(!said.some((m) => /SIGKILL/.test(m)), said.join('\n'))
  })

  it('fields of the wrong type in a JSON answer fall back to the defaults; a deny stays a deny and nothing blocks by mistake', async () => {
    const t = tool()
    const post = hookProgram(
      project.dir,
      'typed-post.sh',
      `printf '%s' '{"decision":"block","reason":{"x":1},"systemMessage":[1],"hookSpecificOutput":{"additionalContext":{"y":2}}}'`,
    )
    const group = (command: string) => [{ matcher: t.name, hooks: [{ type: 'command', command }] }]
    await install(JSON.stringify({ hooks: { PostToolUse: group(post.file) } }))
    const r = await rt.call(t.name, { msg: 'x' })
    assert.equal(r.status, 'ok', text(r))
    assert.match(text(r), new RegExp(`^${t.name} ran`))
    assert.doesNotMatch(text(r), /object Object/)

    const t2 = tool()
    const pre = hookProgram(
      project.dir,
      'typed-pre.sh',
      `printf '%s' '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":["not","text"]}}'`,
    )
    await install(
      JSON.stringify({
        hooks: { PreToolUse: group(pre.file).map((g) => ({ ...g, matcher: t2.name })) },
      }),
    )
    const denied = await rt.call(t2.name, { msg: 'x' })
    assert.equal(denied.status, 'DENIED', text(denied))
    assert.deepEqual(t2.ran, [])
  })
})
