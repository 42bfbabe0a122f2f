/**
 * The one SDK Server factory behind every connection, both eras: a low-level v2 Server (so JSON
 * Schemas pass through as registered) serving one view. tools/call runs each call as an Exchange
 * through the pipeline (call.ts); a 2026-07-28 client that declared the tasks extension gets a
 * task for a spawnOnly tool or one whose source supports tasks. Prompts and resources are the skills' and
 * the upstream servers' (upstream.ts), filtered by the view's globs (a prompt by its name, a
 * resource by its URI). Errors name the view, never the runtime scope behind it.
 */
import {
  inputResponse,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
  type CallToolResult,
  type RequestStateCodec,
} from '@modelcontextprotocol/server'
import { z } from 'zod'
import type { RegisteredTool, ScopeHandle } from 'yoke'
import type { ClaudePluginsApi } from '../claude-plugins/api.ts'
import type { SkillsApi } from '../skills/api.ts'
import { TOOL_SEARCH, type ToolSearchApi } from '../tool-search/api.ts'
import { messageOf } from 'yoke'
import { callTool, type RetryState } from './call.ts'
import { RelayError, type Cluster, type Relay } from './cluster.ts'
import type { SessionGrants } from './grants.ts'
import type { Exchanges } from './exchange.ts'
import { toMcpTool } from './result.ts'
import { getPrompt, listPrompts, listResources, readResource } from './skills.ts'
import { entriesOf, serveSkills, skillsExtension } from './skills-ext.ts'
import { getCommandPrompt, isCommandPrompt, listCommandPrompts } from './slash.ts'
import { TASKS_EXTENSION, type TaskTable } from './tasks.ts'
import type { Upstream } from './upstream.ts'
import { CONTROL, uriRefusal, type View } from './views.ts'

export type Era = 'legacy' | 'modern'

/** What the instance shares with every Server it makes. */
export interface GatewayHost {
  version: string
  exchanges: Exchanges
  tasks: TaskTable
  upstream: Upstream
  skills(): SkillsApi | undefined
  /** Claude Code plugin commands, served as prompts */
  claudePlugins(): ClaudePluginsApi | undefined
  /** the tool-search plugin's service: a view in deferred mode lists what it offers */
  toolSearch(): ToolSearchApi | undefined
  /** seals a 2026-07-28 retry's state: the exchange it continues, and the replica that holds it */
  codec: RequestStateCodec<RetryState>
  /** this replica's id (lifecycle.ts) */
  replica: string
  /** the other replicas, while a store is shared (cluster.ts) */
  cluster?: Cluster
  /** a session's "allow for this session" grants in the shared store (grants.ts) */
  grantsOf(connection: string): SessionGrants
  /** an error of a connection's protocol machinery: logged as a warning, unless the client caused it */
  report(where: string, err: Error): void
  /** a tools/call carried a malformed W3C trace context (trace.ts): ignored, counted, said at debug */
  malformedTrace(why: string): void
  /** each tools/list answer, with the tools it sent (the service's `listed` hook) */
  listed(tools: readonly RegisteredTool[], served: Served): void
}

/** What one Server serves: a view, over one connection (or, modern HTTP, none). */
export interface Served {
  view: View
  era: Era
  /** where calls run: the connection's scope (a session, a stdio pipe), or the view's */
  scope: ScopeHandle
  /** `mcp:<view>:<connection>`: each call's caller is this and a number */
  callerBase: string
  /** the scope is the connection's own: "allow for this session" is offered */
  session: boolean
  /** how long a question waits for the client's answer (a stateless request's retry: answerWaitMs) */
  answerMs: number
}

/** What the SDK reports of a client's own doing (bad input, a request for what is not there, a gone connection). */
const CLIENT_FAULT =
  /^(Rejected|Received a|Unknown message type|Not Acceptable|Unsupported Media Type|Invalid Request|Bad Request|Session not found|Parse error|Conflict|Method not allowed|Era mismatch|Dropped inbound request|requestState verification rejected|Invalid event ID|Response for request ID|subscriptions\/listen refused|Request body too large|Failed to (send|write))/

/**
 * Whether an error the SDK reports (a Server's or a handler's onerror) is the client's doing, worth
 * a debug line only; anything else is the gateway's own trouble and worth a warning.
 */
export function clientCaused(err: Error): boolean {
  return (
    err.name === 'ZodError' ||
    err.name === 'SyntaxError' ||
    typeof (err as { code?: unknown }).code === 'number' || // a JSON-RPC error the client was sent
    CLIENT_FAULT.test(err.message)
  )
}

const byTaskId = z.looseObject({ taskId: z.string() })
const taskUpdate = z.looseObject({
  taskId: z.string(),
  inputResponses: z.record(z.string(), z.unknown()).optional(),
})

export function buildServer(host: GatewayHost, served: Served): Server {
  // the skills extension (SEP-2640, skills-ext.ts) in a view that serves skills, either era
  const extensions = {
    ...(served.era === 'modern' && { [TASKS_EXTENSION]: {} }),
    ...skillsExtension(served.view.config.skills),
  }
  const server = new Server(
    { name: 'yoke', version: host.version },
    {
      capabilities: {
        tools: { listChanged: true },
        prompts: { listChanged: true },
        resources: { listChanged: true },
        ...(Object.keys(extensions).length && { extensions }),
      },
      // the codec of now: a cluster's shared key replaces the first one once it is known
      requestState: { verify: (state, ctx) => host.codec.verify(state, ctx) },
    },
  )
  serveTools(server, host, served)
  servePrompts(server, host, served)
  serveResources(server, host, served)
  if (served.view.config.skills)
    serveSkills(server, () => host.skills(), entriesOf(host), served.era === 'modern')
  if (served.era === 'modern') serveTasks(server, host, served)
  return server
}

function serveTools(server: Server, host: GatewayHost, served: Served) {
  server.setRequestHandler('tools/list', async () => {
    const tools = await listed(host, served)
    host.listed(tools, served)
    const tasks = served.era === 'modern'
    const described = (tool: RegisteredTool) => tool.describe?.(served.scope.key, tools)
    return { tools: tools.map((tool) => toMcpTool(tool, tasks, described(tool))) }
  })
  server.setRequestHandler('tools/call', async (request, ctx) => {
    const { name } = request.params
    const result = await callTool(host, served, server, name, request.params.arguments ?? {}, ctx)
    if (name === TOOL_SEARCH) found(host, served, server, result)
    return result
  })
}

/** The skills', the Claude plugin commands' and the upstream servers' prompts the view shows. */
function servePrompts(server: Server, host: GatewayHost, { view }: Served) {
  const skills = () => (view.config.skills ? host.skills() : undefined)
  const commands = () => (view.config.commands ? host.claudePlugins() : undefined)
  server.setRequestHandler('prompts/list', async () => ({
    prompts: [
      ...listPrompts(skills()),
      ...listCommandPrompts(commands()),
      ...(await host.upstream.prompts()).filter((p) => view.admits(p.name)),
    ],
  }))
  server.setRequestHandler('prompts/get', (request, ctx) => {
    const { name, arguments: args } = request.params
    if (CONTROL.test(name))
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `no prompt named ${JSON.stringify(name)}: prompt names hold no control characters`,
      )
    const skill = skills()?.get(name)
    if (!skill && isCommandPrompt(commands(), name)) return getCommandPrompt(commands(), name, args)
    if (!skill && host.upstream.isPrompt(name)) {
      if (!view.admits(name))
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `no prompt named "${name}" in the MCP view "${view.name}"`,
        )
      return host.upstream.getPrompt(name, args, ctx.mcpReq.signal)
    }
    return getPrompt(skills(), name, args)
  })
}

/** The skills' and the upstream servers' resources (and templates) the view shows. */
function serveResources(server: Server, host: GatewayHost, { view }: Served) {
  const skills = () => (view.config.skills ? host.skills() : undefined)
  server.setRequestHandler('resources/list', async () => ({
    resources: [
      ...listResources(skills()),
      ...(await host.upstream.resources()).filter((r) => view.admits(r.uri)),
    ],
  }))
  server.setRequestHandler('resources/templates/list', async () => ({
    resourceTemplates: (await host.upstream.templates()).filter((t) => view.admits(t.uriTemplate)),
  }))
  server.setRequestHandler('resources/read', (request, ctx) => {
    const { uri } = request.params
    const refused = uriRefusal(uri)
    if (refused)
      throw new ResourceNotFoundError(
        uri,
        `resource ${JSON.stringify(uri)} is not served: ${refused}`,
      )
    if (!host.upstream.isResource(uri)) return readResource(skills(), uri)
    if (!view.admits(uri))
      throw new ResourceNotFoundError(uri, `resource ${uri}: not in the MCP view "${view.name}"`)
    return host.upstream.readResource(uri, ctx.mcpReq.signal)
  })
}

/**
 * tasks/get, tasks/update and tasks/cancel (2026-07-28): a task is its caller's, in its view. One
 * this replica runs is answered here; another replica's is read from the shared store, and an
 * update or cancel is relayed to the replica that runs it (shared-tasks.ts).
 */
function serveTasks(server: Server, host: GatewayHost, served: Served) {
  const { view } = served
  const missing = (id: string) =>
    new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `no task "${id}" in the MCP view "${view.name}" (it ended more than an hour ago, the gateway restarted, or the shared store lost it)`,
    )
  const local = (id: string) => {
    const found = host.tasks.get(id, view.name)
    // a task belongs to the connection that started it: another token holder's is not found either
    if (found && found.exchange.connection !== served.callerBase) throw missing(id)
    return found
  }
  const remote = async (id: string) => {
    const shared = host.tasks.shared
    if (!shared) throw missing(id)
    const record = await shared.read(id).catch((err: unknown) => {
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `task "${id}" is not on this replica, and the shared store did not answer to say where it is (${messageOf(err)}); try again`,
      )
    })
    if (!record || record.view !== view.name || record.connection !== served.callerBase)
      throw missing(id)
    return record
  }
  /** an update or cancel of a task another replica runs, sent there */
  const relay = async (
    id: string,
    action: 'update' | 'cancel',
    extra: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Record<string, never>> => {
    const record = await remote(id)
    if (record.ended) return {}
    const body: Relay = {
      op: 'task',
      action,
      taskId: id,
      view: view.name,
      connection: served.callerBase,
      ...extra,
    }
    try {
      await host.cluster!.request(record.owner, body, signal)
      return {}
    } catch (err) {
      if (err instanceof RelayError)
        throw new ProtocolError(err.code ?? ProtocolErrorCode.InternalError, err.message)
      throw new ProtocolError(
        ProtocolErrorCode.InternalError,
        `task "${id}" runs on replica ${record.owner}, which this replica could not reach: ${messageOf(err)}`,
      )
    }
  }
  server.setRequestHandler('tasks/get', { params: byTaskId }, async (params) => {
    const found = local(params.taskId)
    return found ? found.wire() : (await remote(params.taskId)).wire
  })
  server.setRequestHandler('tasks/update', { params: taskUpdate }, async (params, ctx) => {
    // the SDK lifts a request's inputResponses out of its params (as for a tools/call retry)
    const responses = params.inputResponses ?? ctx.mcpReq.inputResponses ?? {}
    const found = local(params.taskId)
    if (!found) return relay(params.taskId, 'update', { responses }, ctx.mcpReq.signal)
    found.exchange.answer((key) => inputResponse(responses, key))
    return {}
  })
  server.setRequestHandler('tasks/cancel', { params: byTaskId }, async (params, ctx) => {
    const found = local(params.taskId)
    if (!found) return relay(params.taskId, 'cancel', {}, ctx.mcpReq.signal)
    found.cancel()
    return {}
  })
}

/** Replica side of a relayed tasks/update or tasks/cancel: the task runs here. */
export function serveRelayedTask(host: GatewayHost, body: Relay): object {
  const id = String(body.taskId)
  const task = host.tasks.get(id, String(body.view))
  if (!task || task.exchange.connection !== body.connection)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `no task "${id}" in the MCP view "${String(body.view)}"`,
    )
  if (body.action === 'cancel') task.cancel()
  else task.exchange.answer((key) => inputResponse(body.responses as never, key))
  return {}
}

/**
 * The tools a client is listed: all of the view's, or in deferred mode what tool-search offers this
 * connection (the direct tools, what it found, tool_search while anything is deferred). tool_search
 * is listed only where a view serves deferred mode.
 */
async function listed(host: GatewayHost, served: Served): Promise<RegisteredTool[]> {
  // a session (or a token holder) of its own may see more than the view: its dynamic plugins' tools
  const own = served.scope !== served.view.scope
  const tools = own
    ? served.scope.list().filter((t) => served.view.admits(t.name))
    : [...served.view.tools().values()]
  const search = served.view.config.toolSearch ? host.toolSearch() : undefined
  if (!search) return tools.filter((t) => t.name !== TOOL_SEARCH)
  return search.offered(tools, served.callerBase)
}

/**
 * After a tool_search in deferred mode, what it found is listed for this connection, and its client
 * is told (tools/list_changed). A stateless 2026-07-28 request has no connection to remember it for:
 * the found tools' names are in the answer, and a tool is callable by name whether listed or not.
 */
function found(host: GatewayHost, served: Served, server: Server, result: CallToolResult) {
  const search = served.view.config.toolSearch && served.session ? host.toolSearch() : undefined
  const tools = (result.structuredContent as { tools?: Array<{ name?: unknown }> } | undefined)
    ?.tools
  if (!search || result.isError || !tools?.length) return
  search.load(
    served.callerBase,
    tools.map((t) => String(t.name)),
  )
  server.sendToolListChanged().catch(() => {}) // a connection that has gone
}
