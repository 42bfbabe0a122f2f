/**
 * One connection to one MCP server: a fresh SDK Client over a fresh transport (the SDK closes a
 * client whose connect failed, so nothing is reused). The era is negotiated per `protocol`:
 * `auto` probes `server/discover` in place (over stdio too: yoke's ProcessTransport is probed on
 * its own pipe, no second process), and a stdio server that exits on the probe is started again
 * with the 2025 handshake. Streamable HTTP falls back to SSE when the server answers 4xx to it.
 * `lost` settles once, with why the connection ended.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import {
  StreamableHTTPClientTransport,
  type AuthProvider,
  type Client,
  type ClientCapabilities,
  type CreateMessageRequest,
  type CreateMessageResult,
  type ElicitRequest,
  type ElicitResult,
  type McpSubscription,
  type PriorDiscovery,
  type ProtocolEra,
  type SubscriptionFilter,
  type Transport,
} from '@modelcontextprotocol/client'
import { messageOf, settledWithin } from 'yoke'
import type { McpList } from '../mcp/api.ts'
import { transportOf, type McpClientConfig } from './config.ts'
import {
  sessionExpired,
  sseTransport,
  streamableTransport,
  unauthorized,
  wantsSse,
} from './http.ts'
import { LoginRequired } from './oauth/client.ts'
import { capabilitiesOf, eraProblem, exitedOnProbe, makeClient, PROBE_MS } from './negotiation.ts'
import { ProcessTransport, serverEnv, tellingLine } from './stdio.ts'
import type { Transcript } from './transcript.ts'
import { Wire } from './wire.ts'
import { loginNeeded } from './failures.ts'

export type TransportKind = 'stdio' | 'http' | 'sse'

export interface SessionHost {
  projectDir: string
  /** the roots the entry lists; none: the roots capability is not declared at all */
  roots: Array<{ uri: string; name: string }>
  version: string
  /** the server announced that one of its lists changed */
  onListChanged(list: McpList): void
  /** a transport or protocol error that did not end the connection (logged) */
  onError(err: Error): void
  /** answers sampling/createMessage; when absent, sampling is not declared */
  sample?(params: CreateMessageRequest['params'], signal: AbortSignal): Promise<CreateMessageResult>
  /** answers a 2025-era elicitation/create (a 2026 server asks inside the call's result instead) */
  elicit(params: ElicitRequest['params'], signal: AbortSignal): Promise<ElicitResult>
  /** what an earlier connection learnt: this server speaks only the 2025 era (skip the probe) */
  legacyOnly: boolean
  /** remembers that the server speaks only the 2025 era (it exited on the probe, or ignored it) */
  learntLegacy(): void
  /** OAuth: the bearer token per request and the answer to a 401 (oauth/client.ts) */
  auth?: AuthProvider
  /** OAuth: remembers a scope the server asked for (the next login asks for it) */
  wantScope?(scope?: string): void
  /** the server's protocol transcript, kept across its connections (none: `transcript: false`) */
  transcript?: Transcript
}

export class Session {
  readonly lost: Promise<Error>
  #lose!: (why: Error) => void
  #checking = false
  #terminated = false
  #listening?: McpSubscription
  #closing?: Promise<void>
  isLost = false
  /** why it ended, once it has */
  why?: string
  /** it ended because the server forgot the session: reconnect at once, it is not an outage */
  expired = false
  /** OAuth: a step-up the server asked for (SessionHost.wantScope) */
  wantScope?: (scope?: string) => void

  private constructor(
    readonly client: Client,
    /** what this client declared (the 2026 tasks extension frames its raw requests with them) */
    readonly capabilities: ClientCapabilities,
    readonly wire: Wire,
    readonly kind: TransportKind,
  ) {
    this.lost = new Promise((resolve) => (this.#lose = resolve))
  }

  /** the transport under the wire (yoke's ProcessTransport, or the SDK's HTTP ones) */
  get transport(): Transport {
    return this.wire.inner
  }

  /** the Streamable HTTP session id (the 2025 era over HTTP; a 2026-07-28 connection has none) */
  get sessionId(): string | undefined {
    return this.transport.sessionId
  }

  get pid(): number | undefined {
    return this.transport instanceof ProcessTransport ? this.transport.pid : undefined
  }

  /** the last lines a stdio server wrote to stderr (none over HTTP) */
  get stderr(): readonly string[] {
    return this.transport instanceof ProcessTransport ? this.transport.stderr : []
  }

  get era(): ProtocolEra {
    return this.client.getProtocolEra() ?? 'legacy'
  }

  /** the era and revision the connection speaks */
  get protocol(): { era: ProtocolEra; version: string } {
    return { era: this.era, version: this.client.getNegotiatedProtocolVersion() ?? 'unknown' }
  }

  /** Connects within `startupMs` or throws; a stdio server that fails is killed. `signal` aborts the attempt. */
  static async open(
    cfg: McpClientConfig,
    host: SessionHost,
    signal?: AbortSignal,
    kind: TransportKind = transportOf(cfg),
    prior?: PriorDiscovery,
  ): Promise<Session> {
    const capabilities = capabilitiesOf(host)
    const client = makeClient(cfg, host, capabilities)
    const transport = makeTransport(cfg, kind, host.projectDir, host.auth)
    const wire = new Wire(transport, host.transcript?.connection())
    const session = new Session(client, capabilities, wire, kind)
    session.wantScope = host.wantScope
    session.#wire(host)
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
    prior ??= host.legacyOnly && cfg.protocol === 'auto' ? { kind: 'legacy' } : undefined
    try {
      signal?.throwIfAborted()
      await Promise.race([
        client.connect(session.wire, { timeout: cfg.startupMs, signal, prior }),
        late,
      ])
      if (cfg.protocol === 'auto' && session.era === 'legacy' && session.wire.probeUnanswered)
        host.learntLegacy() // it ignored the probe: a reconnect need not wait for it again
      await session
        .#listen(host)
        .catch((err) =>
          host.onError(
            new Error(`its change stream (subscriptions/listen) did not open: ${err.message}`),
          ),
        )
      return session
    } catch (err) {
      await session.close()
      if (signal?.aborted) throw err
      // a stdio server that ended on the unknown probe (rmcp-based ones do) speaks only the 2025 era
      if (
        kind === 'stdio' &&
        cfg.protocol === 'auto' &&
        !prior &&
        exitedOnProbe(err, session.transport)
      ) {
        host.learntLegacy()
        return Session.open(cfg, host, signal, kind, { kind: 'legacy' })
      }
      if (loginNeeded(err)) throw loginNeeded(err)
      // a 401 without oauth in the entry: a reconnect loop would only hide what to do
      if (kind !== 'stdio' && !host.auth && unauthorized(err))
        throw new LoginRequired(cfg.serverName, signInWhy(cfg), { cause: err })
      if (kind === 'http' && !cfg.transport && wantsSse(err))
        return Session.open(cfg, host, signal, 'sse', prior)
      throw new Error(describe(err, session, cfg), { cause: err })
    } finally {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort!)
    }
  }

  /**
   * Ends the connection; an HTTP session is ended on the server too (bounded: a dead server is not
   * waited for). A second call waits for the first: closing the client under it would abort its DELETE.
   */
  close(): Promise<void> {
    return (this.#closing ??= this.#close())
  }

  async #close(): Promise<void> {
    this.#ended(new Error('closed'))
    void this.#listening?.close().catch(() => {})
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

  /** The handlers of what the server sends on its own: list changes, and the 2025 era's requests. */
  #wire(host: SessionHost) {
    const { client } = this
    if (host.roots.length) {
      const roots = host.roots.map((root) => ({ ...root }))
      client.setRequestHandler('roots/list', () => ({ roots }))
    }
    if (host.sample)
      client.setRequestHandler('sampling/createMessage', (request, ctx) =>
        host.sample!(request.params, ctx.mcpReq.signal),
      )
    client.setRequestHandler('elicitation/create', (request, ctx) =>
      host.elicit(request.params, ctx.mcpReq.signal),
    )
    client.setNotificationHandler('notifications/tools/list_changed', () =>
      host.onListChanged('tools'),
    )
    client.setNotificationHandler('notifications/resources/list_changed', () =>
      host.onListChanged('resources'),
    )
    client.setNotificationHandler('notifications/prompts/list_changed', () =>
      host.onListChanged('prompts'),
    )
    client.onclose = () => this.#ended(new Error(this.#closeReason()))
    // set before connecting: the SDK's era probe passes the transport's errors only to a handler
    // already there (a banner line before the first message is reported even then)
    const reported = new WeakSet<Error>()
    this.wire.onerror = (err) => {
      reported.add(err)
      host.onError(err)
    }
    client.onerror = (err) => {
      if (!reported.has(err)) host.onError(err)
      this.#check()
    }
  }

  /**
   * On a 2026-07-28 connection nothing arrives unsolicited: list changes come on a
   * `subscriptions/listen` stream, opened for the lists the server says can change. A stream
   * the server ends is opened again while the server answers (and the lists are read again, a
   * change may have been missed); one it will not reopen ends the connection.
   */
  async #listen(host: SessionHost, again = false): Promise<void> {
    if (this.era !== 'modern' || this.isLost) return
    const caps = this.client.getServerCapabilities()
    const filter: SubscriptionFilter = {
      ...(caps?.tools?.listChanged && { toolsListChanged: true }),
      ...(caps?.resources?.listChanged && { resourcesListChanged: true }),
      ...(caps?.prompts?.listChanged && { promptsListChanged: true }),
    }
    if (!Object.keys(filter).length) return
    const subscription = await this.client.listen(filter, { timeout: PROBE_MS })
    this.#listening = subscription
    if (again)
      for (const list of ['tools', 'resources', 'prompts'] as const)
        if (caps?.[list]?.listChanged) host.onListChanged(list)
    void subscription.closed.then(async (how) => {
      if (how === 'local' || this.isLost) return
      await new Promise((resolve) => setTimeout(resolve, 200))
      if (this.isLost) return
      await this.#listen(host, true).catch((err) =>
        this.drop(
          `its change stream (subscriptions/listen) ended and could not be reopened (${messageOf(err)})`,
        ),
      )
    })
  }

  /**
   * After a transport error, a request tells a dead server (an HTTP one sends no close) from a
   * hiccup: ping in the 2025 era, server/discover on 2026-07-28 (which has no ping).
   */
  #check() {
    if (this.#checking || this.isLost) return
    this.#checking = true
    const alive =
      this.era === 'modern'
        ? this.client.discover({ timeout: 5000 })
        : this.client.ping({ timeout: 5000 })
    alive
      .catch((err) =>
        this.drop(
          sessionExpired(err)
            ? 'the server forgot the session'
            : `the server stopped answering (${messageOf(err)})`,
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
    const telling = tellingLine(t.stderr)
    return `the server process ${how}${telling ? ` (stderr: ${telling})` : ''}`
  }
}

/** A stdio server runs in the project directory, or in `cwd` relative to it (as Claude Code runs .mcp.json servers). */
function makeTransport(
  cfg: McpClientConfig,
  kind: TransportKind,
  projectDir: string,
  authProvider?: AuthProvider,
): Transport {
  if (kind === 'stdio')
    return new ProcessTransport({
      command: cfg.command!,
      args: cfg.args,
      env: serverEnv(cfg.env),
      cwd: resolve(projectDir, cfg.cwd ?? '.'),
      maxMessageBytes: cfg.maxMessageBytes,
    })
  const options = { url: cfg.url!, headers: cfg.headers, ssrfGuard: cfg.ssrfGuard, authProvider }
  return kind === 'http' ? streamableTransport(options) : sseTransport(options)
}

/** Why an HTTP entry without `oauth` needs a sign-in: the server answered 401. */
function signInWhy(cfg: McpClientConfig): string {
  const bearer = Object.keys(cfg.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')
  return bearer
    ? 'it answered HTTP 401 to the Authorization header of its entry: check that token, or drop the header and set `oauth: true` in its entry'
    : 'it answered HTTP 401 and its entry has no oauth: set `oauth: true` in its entry'
}

/** The failure, with the server's last stderr line when it has one (usually the real reason). */
function describe(err: unknown, session: Session, cfg: McpClientConfig): string {
  const message = eraProblem(err, cfg) ?? messageOf(err)
  const t = session.transport
  if (t instanceof ProcessTransport) {
    const code = (err as NodeJS.ErrnoException)?.code
    if (code === 'ENOENT' && t.options.cwd && !existsSync(t.options.cwd))
      return `the working directory does not exist: ${t.options.cwd}`
    if (code === 'ENOENT') return `command not found: ${JSON.stringify(t.options.command)}`
    if (t.fatal) return t.fatal // the exit that followed is ours, not the server's
    const tail = tellingLine(t.stderr)
    const exit = t.exit ? `; the process exited with code ${t.exit.code ?? t.exit.signal}` : ''
    return `${message}${exit}${tail ? ` (stderr: ${tail})` : ''}`
  }
  return message
}
