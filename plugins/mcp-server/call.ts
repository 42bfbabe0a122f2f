/**
 * One tools/call, either era: a new call through the pipeline as an Exchange (or, for a 2026-07-28
 * client that declared the tasks extension, a task), or a 2026-07-28 retry that continues the call
 * its sealed requestState names, and then what comes next: the result, or questions for the client
 * (`input_required`). Who the client is and what it can be asked come from what its era says: the
 * initialize handshake, or the request's envelope.
 */
import { randomUUID } from 'node:crypto'
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  inputRequired,
  inputResponse,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequest,
  type Server,
  type ServerContext,
} from '@modelcontextprotocol/server'
import { messageOf, type ProgressEvent } from 'yoke'
import { APPROVAL_MS } from './approval.ts'
import { RelayError, type Relay } from './cluster.ts'
import type { Asked, Exchange, Round, Step } from './exchange.ts'
import { taskSupport, toCallToolResult } from './result.ts'
import type { Era, GatewayHost, Served } from './server.ts'
import { TASKS_EXTENSION } from './tasks.ts'
import { traceOf } from './trace.ts'
import type { View } from './views.ts'

type Ctx = ServerContext

/** The elicitation modes a declared capability covers (a bare `elicitation: {}` is form only). */
function modesOf(elicitation: unknown): Set<'form' | 'url'> {
  if (!elicitation || typeof elicitation !== 'object') return new Set()
  const { form, url } = elicitation as { form?: unknown; url?: unknown }
  const modes = new Set<'form' | 'url'>()
  if (form || !url) modes.add('form')
  if (url) modes.add('url')
  return modes
}

/** A 2025-era Server's client, as its initialize handshake said (which holds for the session). */
const initialized = new WeakMap<Server, Asked>()

/** Who is asking, from what this era says: the initialize handshake, or the request's envelope. */
function askedOf(server: Server, era: Era, ctx: Ctx): Asked {
  if (era === 'legacy') {
    const known = initialized.get(server)
    if (known) return known
    const info = server.getClientVersion()
    const asked = {
      name: info?.name ?? 'the MCP client',
      modes: modesOf(server.getClientCapabilities()?.elicitation),
    }
    if (info) initialized.set(server, asked)
    return asked
  }
  const envelope = (ctx.mcpReq.envelope ?? {}) as Record<
    string,
    Record<string, unknown> | undefined
  >
  const name = envelope[CLIENT_INFO_META_KEY]?.name
  return {
    name: typeof name === 'string' ? name : 'the MCP client',
    modes: modesOf(envelope[CLIENT_CAPABILITIES_META_KEY]?.elicitation),
  }
}

function declaresTasks(ctx: Ctx): boolean {
  const envelope = (ctx.mcpReq.envelope ?? {}) as Record<
    string,
    Record<string, unknown> | undefined
  >
  const extensions = envelope[CLIENT_CAPABILITIES_META_KEY]?.extensions
  return Boolean(extensions && typeof extensions === 'object' && TASKS_EXTENSION in extensions)
}

/** Progress for this request's token, increasing as MCP wants (a step without a number counts one). */
function progressOf(ctx: Ctx): ((event: ProgressEvent) => void) | undefined {
  const token = ctx.mcpReq._meta?.progressToken
  if (token === undefined) return undefined
  let last = 0
  return (event) => {
    const given =
      typeof event.progress === 'number' && event.progress > last ? event.progress : undefined
    last = given ?? last + 1
    const total =
      given !== undefined && typeof event.total === 'number' ? { total: event.total } : {}
    const message = typeof event.message === 'string' ? { message: event.message } : {}
    ctx.mcpReq
      .notify({
        method: 'notifications/progress',
        params: { progressToken: token, progress: last, ...total, ...message },
      })
      .catch(() => {})
  }
}

const unknownTool = (name: string, view: View): CallToolResult => ({
  content: [
    { type: 'text', text: `UNKNOWN_TOOL: no tool named "${name}" in the MCP view "${view.name}"` },
  ],
  isError: true,
})

/**
 * What a 2026-07-28 retry's sealed requestState says: the waiting call it continues, and the
 * replica that holds it (the call waits in that process's pipeline; absent in states minted
 * before replicas said so).
 */
export interface RetryState {
  exchange: string
  at?: string
}

/** A step as it travels between replicas: questions, or the result as the client gets it. */
type WireStep =
  | { kind: 'ask'; inputRequests: Record<string, InputRequest> }
  | { kind: 'result'; result: CallToolResult }

export async function callTool(
  host: GatewayHost,
  served: Served,
  server: Server,
  name: string,
  args: Record<string, unknown>,
  ctx: Ctx,
): Promise<CallToolResult> {
  const { view } = served
  const round: Round = {
    signal: ctx.mcpReq.signal,
    client: askedOf(server, served.era, ctx),
    progress: progressOf(ctx),
  }
  const state = ctx.mcpReq.requestState<RetryState>()
  let exchange: Exchange
  if (state) {
    const at = state.at ?? host.replica
    // the call waits in another replica's pipeline: that replica answers this round
    if (at !== host.replica)
      return answerOf(
        host,
        await relayRetry(host, served, name, state, at, round, ctx),
        state.exchange,
        at,
      )
    // a 2026-07-28 retry: the call it continues still waits in the pipeline
    exchange = continued(host, served, name, state.exchange)
    exchange.answer((key) => inputResponse(ctx.mcpReq.inputResponses, key))
  } else {
    // a served scope's own tools are not masked by the runtime: the view's globs refuse them here
    if (view.checksCalls && !view.admits(name)) return unknownTool(name, view)
    const tool = view.tools().get(name) // none for a tool a policy hides: the pipeline says why
    const asTask =
      served.era === 'modern' && tool && taskSupport(tool) !== 'forbidden' && declaresTasks(ctx)
    const full = asTask ? host.tasks.refusal(view.name) : undefined
    if (full) return { content: [{ type: 'text', text: full }], isError: true }
    exchange = started(host, served, name, args, round.client, ctx, Boolean(asTask))
    if (asTask) {
      const task = host.tasks.start(view.name, exchange, tool)
      // its id goes out once any replica can find it (a store that does not answer: bounded)
      await host.tasks.shared?.written(task.taskId)
      return { resultType: 'task', ...task.created() } as unknown as CallToolResult
    }
  }
  const step = wireStep(await exchange.next(round), view, name)
  // a result needs no state sealed (and no await more: most calls end here)
  return step.kind === 'result' ? step.result : answerOf(host, step, exchange.id, host.replica)
}

/** A step as the client gets it: the result, or `input_required` with the state of its retry. */
async function answerOf(
  host: GatewayHost,
  step: WireStep,
  exchange: string,
  at: string,
): Promise<CallToolResult> {
  if (step.kind === 'result') return step.result
  return inputRequired({
    inputRequests: step.inputRequests,
    requestState: await host.codec.mint({ exchange, at } satisfies RetryState),
  }) as unknown as CallToolResult
}

function wireStep(step: Step, view: View, name: string): WireStep {
  if (step.kind === 'ask') return step
  // the runtime's own message names the scope behind the view, which is no client's business
  if (step.result.status === 'UNKNOWN_TOOL')
    return { kind: 'result', result: unknownTool(name, view) }
  return { kind: 'result', result: toCallToolResult(step.result, view.tools().get(name)) }
}

/** A retry of a call that waits on replica `at`, relayed there (the `retry` request below). */
async function relayRetry(
  host: GatewayHost,
  served: Served,
  name: string,
  state: RetryState,
  at: string,
  round: Round,
  ctx: Ctx,
): Promise<WireStep> {
  if (!host.cluster)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `this retry continues a call that waits on replica ${at}, and this replica (${host.replica}) shares no store with it: give every replica the store plugin with one Redis (engine: redis), or route a client's retries to the replica that asked; call ${name} again`,
    )
  const body: Relay = {
    op: 'retry',
    exchange: state.exchange,
    tool: name,
    view: served.view.name,
    connection: served.callerBase,
    client: { name: round.client.name, modes: [...round.client.modes] },
    responses: ctx.mcpReq.inputResponses ?? {},
  }
  try {
    return await host.cluster.request<WireStep>(at, body, round.signal)
  } catch (err) {
    if (err instanceof RelayError)
      throw new ProtocolError(err.code ?? ProtocolErrorCode.InternalError, err.message)
    if (round.signal.aborted) throw err
    throw new ProtocolError(
      ProtocolErrorCode.InternalError,
      `the call this retry continues waits on replica ${at}, which this replica could not reach: ${messageOf(err)}; call ${name} again`,
    )
  }
}

/**
 * Replica side of a relayed retry: the call it continues waits here. The same checks as a retry
 * that came here directly (the same tool, the same connection's), then its next step.
 */
export async function serveRelayedRetry(
  host: GatewayHost,
  view: View,
  body: Relay,
  signal: AbortSignal,
): Promise<WireStep> {
  const name = String(body.tool)
  const exchange = continued(
    host,
    { view, callerBase: String(body.connection) },
    name,
    String(body.exchange),
  )
  const responses = body.responses as Ctx['mcpReq']['inputResponses']
  exchange.answer((key) => inputResponse(responses, key))
  const client = body.client as { name: string; modes: Array<'form' | 'url'> }
  const step = await exchange.next({
    signal,
    client: { name: client.name, modes: new Set(client.modes) },
  })
  return wireStep(step, view, name)
}

/** The call a 2026-07-28 retry continues: still waiting, the same tool, the same connection's. */
function continued(
  host: GatewayHost,
  served: Pick<Served, 'view' | 'callerBase'>,
  name: string,
  id: string,
): Exchange {
  const exchange = host.exchanges.byId(id)
  if (!exchange) {
    const ended = host.exchanges.endedAs(id)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      ended
        ? `the call this retry continues has ended: ${ended}; call ${name} again`
        : `the gateway has no record of the call this retry continues (it ended long ago, or the gateway restarted since); call ${name} again`,
    )
  }
  if (exchange.tool !== name || exchange.connection !== served.callerBase)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `this retry's requestState is for another call, not for ${name} in the MCP view "${served.view.name}"; call ${name} again`,
    )
  return exchange
}

/** A new call through the pipeline, in the connection's scope. */
function started(
  host: GatewayHost,
  served: Served,
  name: string,
  args: Record<string, unknown>,
  client: Asked,
  ctx: Ctx,
  task: boolean,
): Exchange {
  return host.exchanges.start({
    view: served.view.name,
    scope: served.scope,
    connection: served.callerBase,
    tool: name,
    args,
    session: served.session,
    // a session's grants are the replicas' (its sealed id resumes it on any of them)
    ...(served.session && host.cluster && { grants: host.grantsOf(served.callerBase) }),
    client,
    answerMs: served.answerMs,
    task,
    // the trace the client's call continues (its `_meta.traceparent`); a malformed one is ignored
    trace: traceOf(ctx.mcpReq._meta, host),
    ...(served.era === 'legacy' && {
      // the call is this one request: its cancellation (or its connection's close) is the call's
      signal: ctx.mcpReq.signal,
      // on the stream of the request that made the call (HTTP: its POST's), so it reaches the client
      // there, whichever replica holds the session's GET stream (the SDK sends a question with no
      // related request on that GET stream)
      push: (question, signal) =>
        ctx.mcpReq.elicitInput(
          (question.mode === 'url'
            ? { ...question, elicitationId: question.elicitationId ?? randomUUID() }
            : question) as never,
          { signal, timeout: APPROVAL_MS, relatedRequestId: ctx.mcpReq.id },
        ),
    }),
  })
}
