/**
 * A real redis-server for one test file: on a free loopback port, nothing persisted (`--save ''
 * --appendonly no`), in a temp directory; stopped (and its directory removed) when the file ends.
 * `kill()` ends it as a crash would (SIGKILL), `start()` brings it back on the same port, `pause()`
 * and `resume()` make it a peer that holds connections and answers nothing (SIGSTOP, SIGCONT).
 * Where the binary is missing, `missing` says which, for the suite's skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, createConnection, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'

const BINARY = 'redis-server'

/** Why the Redis tests skip here, or false when redis-server is on PATH. */
export const missing: string | false =
  spawnSync(BINARY, ['--version'], { stdio: 'ignore' }).status === 0
    ? false
    : `${BINARY} is not installed (apt-get install -y --no-install-recommends redis-server)`

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Whether something on `port` answers a PING with PONG (within `ms`). */
export function pong(port: number, ms = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(ms, () => done(false))
    socket.on('error', () => done(false))
    socket.on('connect', () => socket.write('PING\r\n'))
    socket.on('data', (d) => done(d.toString().startsWith('+PONG')))
  })
}

export class RedisServer {
  readonly dir = mkdtempSync(join(tmpdir(), 'yoke-redis-'))
  port = 0
  #process: ChildProcess | undefined
  #output = ''

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  /** Starts it (on its port, or a free one the first time) and waits until it answers. */
  async start(): Promise<this> {
    if (this.#alive()) return this
    const again = this.port !== 0
    for (let attempt = 0; attempt < 4; attempt++) {
      if (!again) this.port = await freePort()
      if (await this.#launch()) return this
    }
    throw new Error(`redis-server did not start on ${this.port}: ${this.#output.slice(-500)}`)
  }

  /** Ends it as a crash would, and waits until it is gone. */
  async kill() {
    await this.#stop('SIGKILL')
  }

  /** A peer that holds its connections and answers nothing, until `resume()`. */
  pause() {
    this.#process?.kill('SIGSTOP')
  }

  resume() {
    this.#process?.kill('SIGCONT')
  }

  async close() {
    this.resume()
    await this.#stop('SIGKILL')
    rmSync(this.dir, { recursive: true, force: true })
  }

  async #launch(): Promise<boolean> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ]
    const child = spawn(BINARY, [...args, '--dir', this.dir], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.#process = child
    child.stdout!.on('data', (d) => (this.#output = (this.#output + d).slice(-4000)))
    child.stderr!.on('data', (d) => (this.#output = (this.#output + d).slice(-4000)))
    const exited = new Promise<false>((resolve) => child.once('exit', () => resolve(false)))
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline) {
      const up = await Promise.race([pong(this.port, 500), exited])
      if (up) return true
      if (child.exitCode !== null || child.signalCode !== null) return false
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await this.#stop('SIGKILL')
    return false
  }

  #alive() {
    const child = this.#process
    return child !== undefined && child.exitCode === null && child.signalCode === null
  }

  async #stop(signal: NodeJS.Signals) {
    const child = this.#process
    if (!child || !this.#alive()) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill(signal)
    await exited
    this.#process = undefined
  }
}

/** A redis-server for this file, stopped when the file ends (undefined where it is missing). */
export async function redisForFile(): Promise<RedisServer | undefined> {
  if (missing) return undefined
  const server = await new RedisServer().start()
  after(() => server.close())
  return server
}

/** A TCP server that accepts connections and never answers: a dead peer. */
export async function silentPeer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<import('node:net').Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `redis://127.0.0.1:${port}`,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
