// `yoke serve` as a real process, driven by real clients: the MCP Inspector CLI (a separate
// process) over stdio and over HTTP, and the SDK client across a hot reload that adds an MCP
// server and a skill.
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { FIXTURE } from '../../helpers/mcp.ts'
import { tempProject, YOKE, type Project } from '../../helpers/project.ts'
import { inspector, serveHttp } from '../../helpers/serve.ts'
import { until } from '../../helpers/until.ts'

const CALC = `export default {
  name: 'calc',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({
      name: 'add', description: 'adds two numbers', concurrency: 'safe',
      inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      execute: ({ a, b }) => String(a + b),
    })
    ctx.runtime.register({ name: 'shout', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, execute: ({ text }) => String(text).toUpperCase() })
  },
}
`
const CONFIG = `preset: base
plugins:
  calc:
    use: ./calc.mjs
  skills:
    config: { dirs: [./skills] }
  gateway:
    use: mcp-server
    config:
      views:
        math: { allow: [add] }
`
const FX = `  fx:
    use: mcp-client
    config: { serverName: fx, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(FIXTURE)}, normal] }
`

describe('yoke serve --stdio, driven by the MCP Inspector CLI', () => {
  let project: Project
  before(() => {
    project = tempProject({
      'calc.mjs': CALC,
      'yoke.config.yaml': 'preset: base\nplugins:\n  calc:\n    use: ./calc.mjs\n',
    })
  })
  after(() => project.cleanup())
  // the config has no mcp-server instance: yoke serve adds one (the Inspector has a --config of its own)
  const serveArgs = () => [
    '-e',
    `YOKE_HOME=${project.home}`,
    process.execPath,
    YOKE,
    'serve',
    '--stdio',
    '--cwd',
    project.dir,
  ]

  it('lists and calls the tools; stdout carries protocol messages only', async () => {
    const list = await inspector(project, [...serveArgs(), '--method', 'tools/list'])
    assert.equal(list.code, 0, list.out)
    const names = list.json.tools.map((t: { name: string }) => t.name)
    assert.ok(names.includes('add') && names.includes('skills_list'), names.join(', '))
    assert.deepEqual(
      list.json.tools.find((t: { name: string }) => t.name === 'add').inputSchema.required,
      ['a', 'b'],
    )
    const call = await inspector(project, [
      ...serveArgs(),
      '--method',
      'tools/call',
      '--tool-name',
      'add',
      '--tool-arg',
      'a=2',
      '--tool-arg',
      'b=3',
    ])
    assert.equal(call.code, 0, call.out)
    assert.deepEqual(call.json.content, [{ type: 'text', text: '5' }])
  })
})

describe('yoke serve --stdio when its own instance restarts', () => {
  it('the session ends and stderr says why', async () => {
    const project = tempProject({
      'calc.mjs': CALC,
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n  calc:\n    use: ./calc.mjs\n  gateway:\n    use: mcp-server\n    config: { changeDebounceMs: 50 }\n',
    })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [YOKE, 'serve', '--stdio'],
      cwd: project.dir,
      env: { ...(process.env as Record<string, string>), NO_COLOR: '1', YOKE_HOME: project.home },
      stderr: 'pipe',
    })
    let stderr = ''
    transport.stderr!.on('data', (d) => (stderr += d))
    const client = new Client({ name: 'restart-test', version: '1' })
    const closed = new Promise<void>((resolve) => (client.onclose = resolve))
    try {
      await client.connect(transport)
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'add'))
      project.write(
        'yoke.config.yaml',
        'preset: minimal\nplugins:\n  calc:\n    use: ./calc.mjs\n  gateway:\n    use: mcp-server\n    config: { changeDebounceMs: 60 }\n',
      )
      await Promise.race([
        closed,
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`the session did not end:\n${stderr}`)), 20_000),
        ),
      ])
      assert.match(
        stderr,
        /yoke serve: the stdio session ended \(the mcp-server instance "gateway" restarted or stopped\)/,
      )
    } finally {
      await client.close().catch(() => {})
      project.cleanup()
    }
  })
})

describe('yoke serve over HTTP: the Inspector CLI, views, and a hot reload under a connected client', () => {
  let project: Project
  let child: ChildProcess
  let info: { url: string; views: Record<string, string> }
  let stderr = () => ''
  before(async () => {
    project = tempProject({ 'calc.mjs': CALC, 'yoke.config.yaml': CONFIG })
    const served = await serveHttp(project, 20_000)
    child = served.child
    stderr = served.stderr
    info = served.info
  })
  after(async () => {
    if (child.exitCode === null) child.kill('SIGKILL')
    project.cleanup()
  })
  const token = () => readFileSync(join(project.home, 'mcp-token'), 'utf8').trim()

  it('prints the URL on stderr and binds loopback', () => {
    assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    assert.ok(stderr().includes(`MCP endpoint ${info.url}`), stderr())
    assert.equal(info.views.math, `${info.url}/math`)
  })

  it('the Inspector CLI lists and calls over HTTP with the bearer token; a view shows only its tools', async () => {
    const header = ['--transport', 'http', '--header', `Authorization: Bearer ${token()}`]
    const list = await inspector(project, [info.url, ...header, '--method', 'tools/list'])
    assert.equal(list.code, 0, list.out)
    assert.ok(list.json.tools.some((t: { name: string }) => t.name === 'shout'))
    const call = await inspector(project, [
      info.url,
      ...header,
      '--method',
      'tools/call',
      '--tool-name',
      'shout',
      '--tool-arg',
      'text=hi',
    ])
    assert.deepEqual(call.json.content, [{ type: 'text', text: 'HI' }])
    const math = await inspector(project, [info.views.math, ...header, '--method', 'tools/list'])
    assert.deepEqual(
      math.json.tools.map((t: { name: string }) => t.name),
      ['add'],
    )
    const refused = await inspector(project, [
      info.url,
      '--transport',
      'http',
      '--method',
      'tools/list',
    ])
    assert.notEqual(refused.code, 0)
    assert.match(refused.out, /401|Unauthorized/)
  })

  it('a hot reload that adds an MCP server and a skill reaches a connected client; its session survives', async () => {
    let toolsChanged = 0
    let promptsChanged = 0
    const client = new Client({ name: 'reload-test', version: '1' })
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void toolsChanged++)
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => void promptsChanged++)
    const transport = new StreamableHTTPClientTransport(new URL(info.url), {
      requestInit: { headers: { Authorization: `Bearer ${token()}` } },
    })
    await client.connect(transport)
    const session = transport.sessionId
    assert.ok(!(await client.listTools()).tools.some((t) => t.name === 'mcp__fx__echo'))

    project.writeAtomic('yoke.config.yaml', CONFIG + FX)
    // a reload may announce more than one change (the instance, then its server's tools): the
    // wait is for a notice after which the list has the new tools
    await until(
      'tools/list_changed after adding an MCP server',
      async () =>
        toolsChanged > 0 &&
        (await client.listTools()).tools.some((t) => t.name === 'mcp__fx__echo'),
      { ms: 20_000, every: 100 },
    )
    const echo = await client.callTool({
      name: 'mcp__fx__echo',
      arguments: { text: 'through the reload' },
    })
    assert.deepEqual(echo.content, [{ type: 'text', text: 'through the reload' }])
    assert.equal(transport.sessionId, session, 'the same session')

    promptsChanged = 0 // what the reload itself announced is not what this waits for
    project.write(
      'skills/fresh/SKILL.md',
      '---\nname: fresh\ndescription: A skill added while serving.\n---\nDo the fresh thing.\n',
    )
    await until(
      'prompts/list_changed after adding a skill',
      async () =>
        promptsChanged > 0 && (await client.listPrompts()).prompts.some((p) => p.name === 'fresh'),
      { ms: 15_000, every: 100 },
    )
    await client.close()
  })

  it('a reload of the mcp-server instance itself keeps its port (port 0): clients reconnect at the same URL', async () => {
    const auth = { Authorization: `Bearer ${token()}` }
    const old = new Client({ name: 'before-reload', version: '1' })
    const transport = new StreamableHTTPClientTransport(new URL(info.url), {
      requestInit: { headers: auth },
    })
    await old.connect(transport)
    const session = transport.sessionId!
    // a change to the instance's own config restarts it (it is exclusive: the old one stops first)
    project.writeAtomic(
      'yoke.config.yaml',
      CONFIG.replace(
        '    config:\n      views:',
        '    config:\n      changeDebounceMs: 60\n      views:',
      ) + FX,
    )
    // the old session is gone once the new version serves: 404 for it, at the same address
    await until(
      'the restarted instance to answer at the same URL',
      async () => {
        try {
          const res = await fetch(info.url, {
            method: 'POST',
            headers: {
              ...auth,
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-session-id': session,
              'mcp-protocol-version': '2025-06-18',
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
            signal: AbortSignal.timeout(2000),
          })
          await res.text()
          return res.status === 404
        } catch {
          return false // refused: nothing listens there (now)
        }
      },
      { ms: 20_000, every: 100 },
    )
    await old.close().catch(() => {})
    const fresh = new Client({ name: 'after-reload', version: '1' })
    await fresh.connect(
      new StreamableHTTPClientTransport(new URL(info.url), { requestInit: { headers: auth } }),
    )
    assert.ok((await fresh.listTools()).tools.some((t) => t.name === 'add'))
    await fresh.close()
    assert.doesNotMatch(stderr(), /the MCP endpoint moved/, 'nothing to announce: it stayed')
  })

  it('stops cleanly on SIGINT', async () => {
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    )
    child.kill('SIGINT')
    const code = await Promise.race([
      exited,
      new Promise((resolve) => setTimeout(() => resolve('still running'), 10_000).unref()),
    ])
    assert.equal(code, 0, stderr())
  })
})
