/**
 * @module cli/control
 * A running `yoke dev` listens on a Unix socket named after its project (directory and project
 * config file), so that commands run beside it (`yoke inspect`, and every `cli.control`) reach
 * the live state instead of composing a second copy. Protocol, JSON lines: the asker sends the
 * request; the dev may put questions (`{ ask: { id, question } }`, answered by `{ reply: id,
 * answer }`, or withdrawn by `{ cancel: id, why, by?, answer? }` when someone else answered first)
 * and notes (`{ tell }`), then ends with `{ ok: true, answer }` or `{ ok: false, error }` (a
 * catalogue error as JSON). An asker that goes away aborts the handler's signal.
 */
import { createHash } from 'node:crypto'
import { lstatSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { messageOf, YokeError, type ErrorCode } from '../errors.ts'

export type ControlRequest = { cmd: string; [key: string]: unknown }

/** The conversation with one asker, while its request runs. */
export interface ControlSession {
  /** aborted when the asker goes away */
  signal: AbortSignal
  /**
   * puts a question to the asker (an approval); resolves with its reply. When `signal` aborts
   * (another side answered first), the asker is told and the question rejects with its reason.
   */
  ask(question: unknown, signal?: AbortSignal): Promise<unknown>
  /** tells the asker something on the way (progress) */
  tell(note: unknown): void
}

export type ControlHandler = (request: ControlRequest, session: ControlSession) => Promise<unknown>

/** What the asker does with the dev's questions and notes, and how long it waits. */
export interface AskOptions {
  connectMs?: number
  /** how long the answer may take once the dev accepted (default 40 s) */
  answerMs?: number
  /** answers a question; `signal` aborts when the dev withdraws it (its reason may say who answered first) */
  onAsk?(question: unknown, signal: AbortSignal): Promise<unknown>
  onTell?(note: unknown): void
  /** ends the conversation: the dev's handler sees its signal abort */
  signal?: AbortSignal
}

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
  const other = await ask(path, { cmd: 'ping' }, { connectMs: 1000 })
  if (other.status !== 'none')
    throw new YokeError('CONTROL_CONFLICT', {
      name: 'the control socket',
      owner: 'another yoke dev of this project',
    })
  rmSync(path, { force: true })
  const server: Server = createServer((socket) => converse(socket, handler))
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

/** One asker: its request line, then its replies to the dev's questions. */
function converse(socket: Socket, handler: ControlHandler) {
  const gone = new AbortController()
  const waiting = new Map<number, (answer: unknown) => void>()
  let request: ControlRequest | undefined
  let questions = 0
  const send = (message: unknown) => socket.writable && socket.write(JSON.stringify(message) + '\n')
  const session: ControlSession = {
    signal: gone.signal,
    ask: (question, signal) =>
      new Promise((resolve, reject) => {
        if (gone.signal.aborted) return reject(new Error('the asker has gone'))
        const id = ++questions
        waiting.set(id, resolve)
        gone.signal.addEventListener('abort', () => reject(new Error('the asker has gone')), {
          once: true,
        })
        signal?.addEventListener(
          'abort',
          () => {
            if (!waiting.delete(id)) return
            const { by, answer } = (signal.reason ?? {}) as { by?: string; answer?: string }
            send({ cancel: id, why: messageOf(signal.reason ?? 'withdrawn'), by, answer })
            reject(signal.reason)
          },
          { once: true },
        )
        send({ ask: { id, question } })
      }),
    tell: (note) => void send({ tell: note }),
  }
  const finish = (message: unknown) => socket.end(JSON.stringify(message) + '\n')
  socket.setEncoding('utf8')
  socket.on('error', () => {})
  socket.on('close', () => gone.abort())
  lines(socket, 64 * 1024, (line) => {
    let message: Record<string, unknown>
    try {
      message = JSON.parse(line)
    } catch {
      return finish({ ok: false, error: { message: 'bad request' } })
    }
    if (request) {
      const id = message.reply as number
      waiting.get(id)?.(message.answer)
      waiting.delete(id)
      return
    }
    request = message as ControlRequest
    Promise.resolve()
      .then(() => (request!.cmd === 'ping' ? 'pong' : handler(request!, session)))
      .then(
        (answer) => finish({ ok: true, answer: answer ?? null }),
        (err) => finish({ ok: false, error: errorOf(err) }),
      )
  })
}

/** Calls `take` with each line `socket` reads; a line over `max` characters ends the socket. */
function lines(socket: Socket, max: number, take: (line: string) => void) {
  let buffer = ''
  socket.on('data', (chunk: string) => {
    buffer += chunk
    for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl)
      buffer = buffer.slice(nl + 1)
      if (line) take(line)
    }
    if (buffer.length > max) socket.destroy()
  })
}

function errorOf(err: unknown) {
  if (err instanceof YokeError) return err.toJSON()
  return { message: messageOf(err) }
}

/**
 * Asks the dev on `path`. `none` when nothing listens (or it does not accept within `connectMs`);
 * once it has accepted, its answer is awaited up to ANSWER_MS, so a slow handler is not mistaken
 * for no dev.
 */
export function ask(
  path: string,
  request: ControlRequest,
  { connectMs = 2000, answerMs = ANSWER_MS, onAsk, onTell, signal }: AskOptions = {},
): Promise<Reply> {
  return new Promise((resolve) => {
    const socket = createConnection(path)
    let timer = setTimeout(() => done({ status: 'none' }), connectMs)
    let settled = false
    const questions = new Questions(socket, onAsk)
    const done = (reply: Reply) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      questions.end()
      signal?.removeEventListener('abort', leave)
      socket.destroy()
      resolve(reply)
    }
    const leave = () =>
      done({ status: 'error', error: new YokeError('ABORTED', { name: `"${request.cmd}"` }) })
    signal?.addEventListener('abort', leave, { once: true })
    socket.setEncoding('utf8')
    socket.on('connect', () => {
      clearTimeout(timer)
      const what = `the running yoke dev's answer to "${request.cmd}"`
      if (Number.isFinite(answerMs))
        timer = setTimeout(
          () =>
            done({
              status: 'error',
              error: new YokeError('PLUGIN_TIMEOUT', { what, ms: answerMs }),
            }),
          answerMs,
        )
      socket.write(JSON.stringify(request) + '\n')
      sent = true
    })
    let sent = false
    let spoke = false
    lines(socket, 64 * 1024 * 1024, (line) => {
      let message: DevMessage
      try {
        message = JSON.parse(line)
      } catch {
        return done({ status: 'none' }) // not a dev speaking this protocol
      }
      spoke = true
      if (message.ask) questions.asked(message.ask.id, message.ask.question)
      else if (message.cancel !== undefined) questions.withdrawn(message.cancel, message)
      else if ('tell' in message) onTell?.(message.tell)
      else if (message.ok) done({ status: 'ok', answer: message.answer ?? undefined })
      else done({ status: 'error', error: fromJson(message.error ?? {}) })
    })
    // a dev that took the request and went without answering may have done the work (a tool call
    // ran): that is its failure, not "no dev", so the command does not do it again on its own copy
    const gone = () =>
      done(
        sent
          ? {
              status: 'error',
              error: new YokeError('CONTROL_FAILED', {
                name: request.cmd,
                owner: 'the running yoke dev',
                reason: `it closed the connection before answering${spoke ? '' : ' (it may have stopped)'}`,
              }),
            }
          : { status: 'none' },
      )
    socket.on('end', gone)
    socket.on('close', gone)
    socket.on('error', gone)
  })
}

/** A line from the dev: a question, a withdrawal, a note, or the end (ok with an answer, or an error). */
interface DevMessage {
  ok?: boolean
  answer?: unknown
  error?: ErrorJson
  ask?: { id: number; question: unknown }
  cancel?: number
  why?: string
  by?: string
  tell?: unknown
}

/** The dev's open questions to one asker, each answered by `onAsk` or withdrawn by the dev. */
class Questions {
  readonly #open = new Map<number, AbortController>()

  constructor(
    private readonly socket: Socket,
    private readonly onAsk: AskOptions['onAsk'],
  ) {}

  asked(id: number, question: unknown): void {
    const withdrawn = new AbortController()
    this.#open.set(id, withdrawn)
    const reply = (answer?: unknown) =>
      this.socket.writable && this.socket.write(JSON.stringify({ reply: id, answer }) + '\n')
    void Promise.resolve(this.onAsk?.(question, withdrawn.signal))
      .then(reply, () => reply())
      .finally(() => this.#open.delete(id))
  }

  /** Someone else answered first: the reason carries who (`by`) and what (`answer`). */
  withdrawn(id: number, { why, by, answer }: DevMessage) {
    this.#open.get(id)?.abort(Object.assign(new Error(why ?? 'withdrawn'), { by, answer }))
  }

  end(): void {
    for (const question of this.#open.values()) question.abort(new Error('the request ended'))
  }
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
