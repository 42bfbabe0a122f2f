/**
 * MCP test helpers: a kernel with the runtime, the `mcp` registry and mcp-client instances added
 * one by one, and the real servers the tests spawn.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import mcpHub, { type McpHub, type McpServerStatus } from '../../plugins/mcp/index.ts'
import mcpClient from '../../plugins/mcp-client/index.ts'
import mcpServer, { type McpServerApi } from '../../plugins/mcp-server/index.ts'
import openai from '../../plugins/openai/index.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Fiber,
  type LogRecord,
  type Plugin,
  type ToolRuntime,
  type ToolResult,
} from '../../src/index.ts'
import { ROOT } from './project.ts'
import { until } from './until.ts'

export const EVERYTHING = join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
)
export const MEMORY = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js')
export const FIXTURE = join(ROOT, 'test/fixtures/mcp/server.mjs')
/** the 2026-07-28 fixture (it serves the 2025 era too unless --modern-only): test/fixtures/mcp/modern.mjs */
export const MODERN = join(ROOT, 'test/fixtures/mcp/modern.mjs')
/** a transparent stdio pipe that appends what the client sends to $TEE_FILE */
export const TEE = join(ROOT, 'test/fixtures/mcp/tee.mjs')
/** raw JSON-RPC frames, no SDK: malformed tool lists, huge lists, lines that are not JSON */
export const RAW = join(ROOT, 'test/fixtures/mcp/raw.mjs')
/** treats roots as server-filesystem does: the client's roots replace its command-line directories */
export const FS_LIKE = join(ROOT, 'test/fixtures/mcp/fs-like.mjs')
/** the real @modelcontextprotocol/server-filesystem from npm */
export const FILESYSTEM = join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
)

export const text = (r: ToolResult) =>
  r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')

export interface McpHarness {
  kernel: Kernel
  rt: ToolRuntime
  hub: McpHub
  logs: LogRecord[]
  /** adds an mcp-client instance and waits for its apply */
  add(key: string, config: Record<string, unknown>): Promise<Fiber>
  remove(key: string): Promise<void>
  status(name: string): McpServerStatus
  /** the shared `until` (helpers/until.ts), 15 s by default */
  until(what: string, check: () => boolean, ms?: number): Promise<void>
  close(): Promise<void>
}

export async function mcpHarness(
  projectDir = ROOT,
  runtime: Record<string, unknown> = {},
): Promise<McpHarness> {
  const kernel = new Kernel()
  const logs: LogRecord[] = []
  kernel.hooks.log.tap('test', (r) => void logs.push(r))
  kernel.spawn(
    toPlugin(runtimePlugin) as Plugin,
    { unloadGraceMs: 200, ...runtime },
    { key: 'yoke:runtime' },
  )
  kernel.spawn(
    toPlugin({
      name: 'project',
      provides: ['project'],
      apply: (ctx: any) =>
        void ctx.provide('project', { dir: projectDir, home: join(projectDir, '.home') }),
    }) as Plugin,
    {},
    { key: 'yoke:project' },
  )
  kernel.spawn(toPlugin(mcpHub) as Plugin, {}, { key: 'mcp' })
  await kernel.settled()
  const fibers = new Map<string, Fiber>()
  const plugin = toPlugin(mcpClient) as Plugin
  const harness: McpHarness = {
    kernel,
    logs,
    rt: kernel.services.get('runtime')!.value as ToolRuntime,
    hub: kernel.services.get('mcp')!.value as McpHub,
    async add(key, config) {
      const checked = validateConfig(plugin, config)
      assert.ok('value' in checked, JSON.stringify(checked))
      const fiber = kernel.spawn(plugin, checked.value, { key })
      fibers.set(key, fiber)
      await kernel.whenSettled(fiber, 60_000)
      return fiber
    },
    async remove(key) {
      await kernel.remove(fibers.get(key)!)
      fibers.delete(key)
    },
    status(name) {
      const found = harness.hub.list().find((s) => s.name === name)
      assert.ok(found, `no server ${name}`)
      return found
    },
    until: (what, check, ms = 15_000) => until(what, check, { ms }),
    close: () => kernel.dispose(),
  }
  return harness
}

export const everything = (serverName = 'everything', extra: Record<string, unknown> = {}) => ({
  serverName,
  command: process.execPath,
  args: [EVERYTHING, 'stdio'],
  ...extra,
})
export const fixture = (
  serverName: string,
  mode = 'normal',
  extra: Record<string, unknown> = {},
) => ({ serverName, command: process.execPath, args: [FIXTURE, mode], ...extra })

export const raw = (serverName: string, mode: string, extra: Record<string, unknown> = {}) => ({
  serverName,
  command: process.execPath,
  args: [RAW, mode],
  ...extra,
})

/** true while a process with this pid runs (a zombie waiting for a reaper does not count) */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return true // no /proc: kill(0) is all there is
  }
}

/** A port nothing listens on right now (for a server that cannot be told to pick one). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Stops a child process (SIGKILL) and waits for its exit. */
export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGKILL')
  await exited
}

/**
 * How long a server process the tests start may take to listen: a hang detector, not a
 * performance bound (a cold start of a large bundle takes seconds on a loaded machine).
 */
export const SERVER_START_MS = 60_000

/** server-everything in `mode` on `port`, resolved once it listens (bounded: SERVER_START_MS; killed if it does not). */
export function everythingHttp(
  mode: 'streamableHttp' | 'sse',
  port: number,
): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EVERYTHING, mode], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let settled = false
    const timer = setTimeout(() => {
      settled = true
      child.kill('SIGKILL')
      reject(new Error(`server-everything ${mode} did not listen within ${SERVER_START_MS} ms`))
    }, SERVER_START_MS)
    const ready = async () => {
      // it logs before it listens: poll the port (until it answers, or the start was given up)
      while (!settled) {
        try {
          await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(5000) })
          settled = true
          clearTimeout(timer)
          return resolve(child)
        } catch {
          await new Promise((r) => setTimeout(r, 50))
        }
      }
    }
    child.stderr!.once('data', ready)
    child.stdout!.once('data', ready)
    child.once('exit', (code) => {
      settled = true
      clearTimeout(timer)
      reject(new Error(`server-everything ${mode} exited with ${code}`))
    })
  })
}

/**
 * The modern fixture over Streamable HTTP (`--http` plus `args`), resolved with its URL once it
 * listens (bounded: SERVER_START_MS; killed if it does not).
 */
export function modernHttp(args: string[] = []): Promise<{ url: string; child: ChildProcess }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MODERN, '--http', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the modern fixture did not listen within ${SERVER_START_MS} ms`))
    }, SERVER_START_MS)
    let out = ''
    child.stdout!.on('data', (chunk: Buffer) => {
      const port = /LISTENING (\d+)/.exec((out += chunk))?.[1]
      if (!port) return
      clearTimeout(timer)
      resolve({ url: `http://127.0.0.1:${port}/mcp`, child })
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the modern fixture exited with ${code}`))
    })
  })
}

/** The modern fixture's --log FILE: one object per line (what it received, and its events). */
export function fixtureLog(file: string): Array<Record<string, any>> {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

/**
 * An openai provider instance in the harness's kernel, active, answering from `baseUrl` (a test
 * model server); its key is set in `keyEnv` for the test. Remove it with `h.kernel.remove`.
 */
export async function openaiModel(
  h: McpHarness,
  key: string,
  model: string,
  baseUrl: string,
  keyEnv: string,
): Promise<Fiber> {
  process.env[keyEnv] = 'sk-test'
  const config = validateConfig(toPlugin(openai) as Plugin, {
    model,
    apiKeyEnv: keyEnv,
    baseUrl,
    maxRetries: 0,
  })
  assert.ok('value' in config, JSON.stringify(config))
  const fiber = h.kernel.spawn(toPlugin(openai) as Plugin, config.value, { key })
  await h.kernel.whenSettled(fiber, 10_000)
  return fiber
}

/**
 * The harness's kernel with a stdio server `up` (mcp-client, from `upstream`) behind the mcp-server
 * gateway (bearer `token`): the gateway's URL, once both are active.
 */
export async function gatewayOver(h: McpHarness, upstream: string, token: string) {
  const up = await h.add('up', {
    serverName: 'up',
    command: process.execPath,
    args: [upstream],
    failOnStartupError: true,
  })
  assert.equal(up.state, 'active', String(up.error))
  const gateway = toPlugin(mcpServer) as Plugin
  const checked = validateConfig(gateway, { token })
  assert.ok('value' in checked, JSON.stringify(checked))
  const served = h.kernel.spawn(gateway, checked.value, { key: 'gateway' })
  await h.kernel.whenSettled(served, 20_000)
  assert.equal(served.state, 'active', String(served.error))
  return (h.kernel.services.get('mcpServer')!.value as McpServerApi).url!
}
