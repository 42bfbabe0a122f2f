/**
 * @module cli/control
 * A running `yoke dev` listens on a Unix socket named after its project directory, so that
 * `yoke inspect` run beside it shows the live state instead of composing a second copy.
 * Protocol: one JSON request line, one JSON answer line.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { createConnection, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type ControlRequest = { cmd: string; [key: string]: unknown }
export type ControlHandler = (request: ControlRequest) => Promise<unknown>

export function socketPath(projectDir: string): string {
  const dir = join(tmpdir(), `yoke-${process.getuid?.() ?? 'user'}`)
  return join(dir, `${createHash('sha256').update(projectDir).digest('hex').slice(0, 16)}.sock`)
}

export async function listen(path: string, handler: ControlHandler): Promise<() => Promise<void>> {
  mkdirSync(join(path, '..'), { recursive: true, mode: 0o700 })
  rmSync(path, { force: true }) // a socket left by a dev that was killed
  const server: Server = createServer((socket) => {
    let buffer = ''
    socket.setEncoding('utf8')
    socket.on('error', () => {})
    socket.on('data', (chunk) => {
      buffer += chunk
      if (buffer.length > 64 * 1024) return socket.destroy()
      const nl = buffer.indexOf('\n')
      if (nl < 0) return
      let request: ControlRequest
      try {
        request = JSON.parse(buffer.slice(0, nl))
      } catch {
        return socket.end(JSON.stringify({ ok: false, error: 'bad request' }) + '\n')
      }
      handler(request).then(
        (answer) => socket.end(JSON.stringify({ ok: true, answer }) + '\n'),
        (err) =>
          socket.end(JSON.stringify({ ok: false, error: String(err?.message ?? err) }) + '\n'),
      )
    })
  })
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve))
  server.unref()
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      rmSync(path, { force: true })
    })
}

/** Asks a running dev; undefined when none answers within `timeoutMs`. */
export function ask(
  path: string,
  request: string | ControlRequest,
  timeoutMs = 5000,
): Promise<unknown | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection(path)
    let buffer = ''
    const done = (value: unknown) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(value)
    }
    const timer = setTimeout(() => done(undefined), timeoutMs)
    socket.setEncoding('utf8')
    socket.on('connect', () =>
      socket.write(JSON.stringify(typeof request === 'string' ? { cmd: request } : request) + '\n'),
    )
    socket.on('data', (chunk) => (buffer += chunk))
    socket.on('end', () => {
      try {
        const reply = JSON.parse(buffer)
        done(reply.ok ? reply.answer : undefined)
      } catch {
        done(undefined)
      }
    })
    socket.on('error', () => done(undefined))
  })
}
