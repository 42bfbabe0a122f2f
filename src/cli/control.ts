/**
 * @module cli/control
 * A running `yoke dev` listens on a Unix socket named after its project (directory and project
 * config file), so that commands run beside it (`yoke inspect`, and every `cli.control`) reach
 * the live state instead of composing a second copy. Protocol: one JSON request line, one JSON
 * answer line: `{ ok: true, answer }` or `{ ok: false, error }` (a catalogue error as JSON).
 */
import { createHash } from 'node:crypto'
import { lstatSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { createConnection, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { YokeError, type ErrorCode } from '../errors.ts'

export type ControlRequest = { cmd: string; [key: string]: unknown }
export type ControlHandler = (request: ControlRequest) => Promise<unknown>

/** What asking a dev gives: none answers, an answer (undefined is one), or the dev's error. */
export type Reply =
  { status: 'none' } | { status: 'ok'; answer: unknown } | { status: 'error'; error: YokeError }

/** How long a dev has to answer once it accepted the request (its handlers are bounded first). */
const ANSWER_MS = 40_000

export function socketPath(projectDir: string, projectFile = ''): string {
  const dir = join(tmpdir(), `yoke-${process.getuid?.() ?? 'user'}`)
  const key = createHash('sha256').update(`${projectDir}\0${projectFile}`).digest('hex')
  return join(dir, `${key.slice(0, 16)}.sock`)
}

/**
 * Listens on `path` for a dev. A socket a live dev answers on is not taken over (CONTROL_CONFLICT
 * naming it; the caller runs without a socket); a stale one, left by a dev that was killed, is.
 */
export async function listen(path: string, handler: ControlHandler): Promise<() => Promise<void>> {
  const dir = join(path, '..')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const owner = statSync(dir)
  // another user's directory could hold a planted socket
  if (process.getuid && (owner.uid !== process.getuid() || owner.mode & 0o077))
    throw new Error(`${dir} is not private to this user`)
  const other = await ask(path, { cmd: 'ping' }, 1000)
  if (other.status !== 'none')
    throw new YokeError('CONTROL_CONFLICT', {
      name: 'the control socket',
      owner: 'another yoke dev of this project',
    })
  rmSync(path, { force: true })
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
        return socket.end(JSON.stringify({ ok: false, error: { message: 'bad request' } }) + '\n')
      }
      Promise.resolve()
        .then(() => (request.cmd === 'ping' ? 'pong' : handler(request)))
        .then(
          (answer) => socket.end(JSON.stringify({ ok: true, answer: answer ?? null }) + '\n'),
          (err) => socket.end(JSON.stringify({ ok: false, error: errorOf(err) }) + '\n'),
        )
    })
  })
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve))
  const ours = lstatSync(path).ino
  server.unref()
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      // a later dev may have taken the path over: only our own socket is removed
      if (lstatSync(path, { throwIfNoEntry: false })?.ino === ours) rmSync(path, { force: true })
    })
}

function errorOf(err: unknown) {
  if (err instanceof YokeError) return err.toJSON()
  return { message: (err as Error)?.message ?? String(err) }
}

/**
 * Asks the dev on `path`. `none` when nothing listens (or it does not accept within `connectMs`);
 * once it has accepted, its answer is awaited up to ANSWER_MS, so a slow handler is not mistaken
 * for no dev.
 */
export function ask(path: string, request: ControlRequest, connectMs = 2000): Promise<Reply> {
  return new Promise((resolve) => {
    const socket = createConnection(path)
    let buffer = ''
    let timer = setTimeout(() => done({ status: 'none' }), connectMs)
    const done = (reply: Reply) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(reply)
    }
    socket.setEncoding('utf8')
    socket.on('connect', () => {
      clearTimeout(timer)
      const what = `the running yoke dev's answer to "${request.cmd}"`
      timer = setTimeout(
        () =>
          done({
            status: 'error',
            error: new YokeError('PLUGIN_TIMEOUT', { what, ms: ANSWER_MS }),
          }),
        ANSWER_MS,
      )
      socket.write(JSON.stringify(request) + '\n')
    })
    socket.on('data', (chunk) => (buffer += chunk))
    socket.on('end', () => {
      let reply: { ok?: boolean; answer?: unknown; error?: ErrorJson }
      try {
        reply = JSON.parse(buffer)
      } catch {
        return done({ status: 'none' }) // not a dev speaking this protocol
      }
      if (reply.ok) return done({ status: 'ok', answer: reply.answer ?? undefined })
      done({ status: 'error', error: fromJson(reply.error ?? {}) })
    })
    socket.on('error', () => done({ status: 'none' }))
  })
}

type ErrorJson = {
  code?: string
  message?: string
  hint?: string
  instance?: string
  plugin?: string
}

/** The dev's error as it sent it: its code, message and hint (its plugin's codes may be unknown here). */
function fromJson(json: ErrorJson): YokeError {
  const error = new YokeError(
    (json.code ?? 'CONTROL_FAILED') as ErrorCode,
    {
      reason: json.message,
    },
    { instance: json.instance, plugin: json.plugin },
  )
  Object.defineProperty(error, 'message', { value: json.message ?? 'the running yoke dev failed' })
  if (json.hint) Object.defineProperty(error, 'hint', { value: json.hint })
  return error
}
