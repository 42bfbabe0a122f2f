/**
 * One connection to one MCP server: a fresh SDK Client over a fresh transport (the SDK closes a
 * client whose initialization failed, so nothing is reused). Streamable HTTP falls back to SSE
 * when the server answers 4xx to it. `lost` settles once, with why the connection ended.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import {
  CreateMessageRequestSchema,
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
  type CreateMessageRequest,
  type CreateMessageResult,
} from '@modelcontextprotocol/sdk/types.js'
import { transportOf, type McpClientConfig } from './config.ts'
import { sessionExpired, sseTransport, streamableTransport, wantsSse } from './http.ts'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js'
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js'
import { createAjv, settledWithin } from 'yoke'
import { ProcessTransport, serverEnv } from './stdio.ts'

export type TransportKind = 'stdio' | 'http' | 'sse'

export interface SessionHost {
  projectDir: string
  /** the roots the entry lists; none: the roots capability is not declared at all */
  roots: Array<{ uri: string; name: string }>
  version: string
  /** the server announced that its tool list changed */
  onToolsChanged(): void
  /** a transport or protocol error that did not end the connection (logged) */
  onError(err: Error): void
  /** answers sampling/createMessage; when absent, sampling is not declared */
  sample?(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>
}

export class Session {
  readonly lost: Promise<Error>
  #lose!: (why: Error) => void
  #checking = false
  #terminated = false
  isLost = false
  /** why it ended, once it has */
  why?: string
  /** it ended because the server forgot the session: reconnect at once, it is not an outage */
  expired = false

  private constructor(
    readonly client: Client,
    readonly transport: Transport,
    readonly kind: TransportKind,
  ) {
    this.lost = new Promise((resolve) => (this.#lose = resolve))
  }

  /** the Streamable HTTP session id */
  get sessionId(): string | undefined {
    return this.transport.sessionId
  }

  get pid(): number | undefined {
    return this.transport instanceof ProcessTransport ? this.transport.pid : undefined
  }

  /** Connects within `startupMs` or throws; a stdio server that fails is killed. `signal` aborts the attempt. */
  static async open(
    cfg: McpClientConfig,
    host: SessionHost,
    signal?: AbortSignal,
    kind: TransportKind = transportOf(cfg),
  ): Promise<Session> {
    const client = new Client(
      { name: 'yoke', version: host.version },
      {
        capabilities: {
          // roots only when the entry lists some: a server such as server-filesystem replaces the
          // directories it was started with by whatever roots/list answers
          ...(host.roots.length ? { roots: {} } : {}),
          ...(host.sample ? { sampling: {} } : {}),
        },
        jsonSchemaValidator: tolerantValidator,
      },
    )
    const session = new Session(client, makeTransport(cfg, kind, host.projectDir), kind)
    if (host.roots.length) {
      const roots = host.roots.map((root) => ({ ...root }))
      client.setRequestHandler(ListRootsRequestSchema, () => ({ roots }))
    }
    if (host.sample)
      client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
        host.sample!(request.params, extra.signal),
      )
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => host.onToolsChanged())
    client.onclose = () => session.#ended(new Error(session.#closeReason()))
    client.onerror = (err) => {
      host.onError(err)
      session.#check()
    }
    let timer: NodeJS.Timeout | undefined
    let onAbort: (() => void) | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new Error(`no answer to the handshake within ${cfg.startupMs} ms (startupMs)`)),
        cfg.startupMs,
      )
      onAbort = () => reject(signal!.reason)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
    try {
      signal?.throwIfAborted()
      await Promise.race([
        client.connect(session.transport, { timeout: cfg.startupMs, signal }),
        late,
      ])
      return session
    } catch (err) {
      await session.close()
      if (kind === 'http' && !cfg.transport && wantsSse(err) && !signal?.aborted)
        return Session.open(cfg, host, signal, 'sse')
      throw new Error(describe(err, session), { cause: err })
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort!)
    }
  }

  /** Ends the connection; an HTTP session is ended on the server too (bounded: a dead server is not waited for). */
  async close(): Promise<void> {
    this.#ended(new Error('closed'))
    if (
      !this.#terminated &&
      !this.expired &&
      this.transport instanceof StreamableHTTPClientTransport &&
      this.sessionId
    ) {
      this.#terminated = true
      await settledWithin(this.transport.terminateSession(), 1000)
    }
    await this.client.close().catch(() => {})
    // after a server exits on its own the client has let go of the transport; its group still needs ending
    if (this.transport instanceof ProcessTransport) await this.transport.close()
  }

  /** Marks the connection lost and closes it; `expired`: the server forgot our HTTP session. */
  drop(why: string, expired = false): void {
    this.expired ||= expired
    this.#ended(new Error(why))
    void this.client.close().catch(() => {})
  }

  #ended(why: Error) {
    if (this.isLost) return
    this.isLost = true
    this.why = why.message
    this.#lose(why)
  }

  /** After a transport error, a ping tells a dead server (an HTTP one sends no close) from a hiccup. */
  #check() {
    if (this.#checking || this.isLost) return
    this.#checking = true
    this.client
      .ping({ timeout: 5000 })
      .catch((err) =>
        this.drop(
          sessionExpired(err)
            ? 'the server forgot the session'
            : `the server stopped answering (${(err as Error).message})`,
          sessionExpired(err),
        ),
      )
      .finally(() => (this.#checking = false))
  }

  #closeReason(): string {
    const t = this.transport
    if (!(t instanceof ProcessTransport)) return 'the connection closed'
    if (t.fatal) return t.fatal // what made yoke end it (a message over the cap, a line that is not JSON-RPC)
    const how = t.exit
      ? t.exit.signal
        ? `was killed by ${t.exit.signal}`
        : `exited with code ${t.exit.code}`
      : 'closed its output'
    return `the server process ${how}${t.stderr.length ? ` (stderr: ${t.stderr.at(-1)})` : ''}`
  }
}

/** A stdio server runs in the project directory, or in `cwd` relative to it (as Claude Code runs .mcp.json servers). */
function makeTransport(cfg: McpClientConfig, kind: TransportKind, projectDir: string): Transport {
  if (kind === 'stdio')
    return new ProcessTransport({
      command: cfg.command!,
      args: cfg.args,
      env: serverEnv(cfg.env),
      cwd: resolve(projectDir, cfg.cwd ?? '.'),
      maxMessageBytes: cfg.maxMessageBytes,
    })
  const options = { url: cfg.url!, headers: cfg.headers, ssrfGuard: cfg.ssrfGuard }
  return kind === 'http' ? streamableTransport(options) : sseTransport(options)
}

/** The failure, with the server's last stderr line when it has one (usually the real reason). */
function describe(err: unknown, session: Session): string {
  const message = (err as Error)?.message ?? String(err)
  const t = session.transport
  if (t instanceof ProcessTransport) {
    const code = (err as NodeJS.ErrnoException)?.code
    if (code === 'ENOENT' && t.options.cwd && !existsSync(t.options.cwd))
      return `the working directory does not exist: ${t.options.cwd}`
    if (code === 'ENOENT') return `command not found: ${JSON.stringify(t.options.command)}`
    if (t.fatal) return t.fatal // the exit that followed is ours, not the server's
    const tail = t.stderr.at(-1)
    const exit = t.exit ? `; the process exited with code ${t.exit.code ?? t.exit.signal}` : ''
    return `${message}${exit}${tail ? ` (stderr: ${tail})` : ''}`
  }
  return message
}

// servers' output schemas run on yoke's ajv: their patterns on the linear-time engine too
const ajvProvider = new AjvJsonSchemaValidator(createAjv({ validateSchema: false }))

/**
 * The SDK compiles every tool's outputSchema inside listTools and throws on the first that does
 * not compile, losing the whole list; this one lets that tool's calls fail instead (and the tool
 * sync skips it).
 */
export const tolerantValidator: jsonSchemaValidator = {
  getValidator(schema) {
    try {
      return ajvProvider.getValidator(schema)
    } catch (err) {
      const errorMessage = `the server's outputSchema does not compile: ${(err as Error).message}`
      return () => ({ valid: false, data: undefined, errorMessage })
    }
  },
}
