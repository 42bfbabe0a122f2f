/**
 * The model's way to the connected servers' resources and prompts (names as in Codex):
 * list_mcp_resources, list_mcp_resource_templates, read_mcp_resource, list_mcp_prompts,
 * get_mcp_prompt. Each takes a `server`; the list tools without one cover every connected server.
 */
import type { Client } from '@modelcontextprotocol/client'
import { messageOf, YokeError, type CallContext, type ToolDefinition, type ToolOutput } from 'yoke'
import type { McpHub, McpServerHandle } from './api.ts'

type Kind = 'resources' | 'prompts'
type Lister = (
  client: Client,
  cursor: string | undefined,
  options: { timeout: number; signal: AbortSignal },
) => Promise<{ nextCursor?: string } & Record<string, unknown>>

const server = {
  type: 'string',
  description:
    'the MCP server name (as in mcp__<server>__…); omit it to cover every connected server',
}
const cursor = { type: 'string', description: 'nextCursor from the previous page of this server' }
/** a listing that covers every server reads at most this many pages from each */
const PAGES = 10

export function resourceTools(hub: McpHub): ToolDefinition[] {
  return [
    listTool(
      hub,
      'resources',
      'list_mcp_resources',
      'List the resources (files, records, documents) that MCP servers offer.',
      'resources',
      (c, cursor, o) => c.listResources(cursor === undefined ? undefined : { cursor }, o),
    ),
    listTool(
      hub,
      'resources',
      'list_mcp_resource_templates',
      'List the URI templates of resources that MCP servers can generate.',
      'resourceTemplates',
      (c, cursor, o) => c.listResourceTemplates(cursor === undefined ? undefined : { cursor }, o),
    ),
    {
      name: 'read_mcp_resource',
      description: 'Read one resource of an MCP server by its URI.',
      inputSchema: {
        type: 'object',
        properties: {
          server: { ...server, description: 'the MCP server name' },
          uri: { type: 'string' },
        },
        required: ['server', 'uri'],
        additionalProperties: false,
      },
      source: 'mcp',
      risk: 'low',
      concurrency: 'safe',
      async execute(args, ctx) {
        const target = pick(hub, 'resources', args.server as string)
        const { contents } = await client(target).readResource(
          { uri: args.uri as string },
          options(target, ctx),
        )
        // binary contents become a placeholder: their base64 would flood the model's context
        const text = contents.map((c) =>
          'text' in c
            ? c.text
            : `[${c.mimeType ?? 'binary'} ${c.uri}, ${Math.floor((c.blob.length * 3) / 4)} bytes]`,
        )
        return {
          content: [{ type: 'text', text: text.join('\n') }],
          structured: {
            contents: contents.map((c) => ('blob' in c ? { uri: c.uri, mimeType: c.mimeType } : c)),
          },
        }
      },
    },
  ]
}

export function promptTools(hub: McpHub): ToolDefinition[] {
  return [
    listTool(
      hub,
      'prompts',
      'list_mcp_prompts',
      'List the prompt templates that MCP servers offer.',
      'prompts',
      (c, cursor, o) => c.listPrompts(cursor === undefined ? undefined : { cursor }, o),
    ),
    {
      name: 'get_mcp_prompt',
      description: 'Get one prompt of an MCP server, filled in with its arguments.',
      inputSchema: {
        type: 'object',
        properties: {
          server: { ...server, description: 'the MCP server name' },
          name: { type: 'string' },
          arguments: { type: 'object', additionalProperties: { type: 'string' } },
        },
        required: ['server', 'name'],
        additionalProperties: false,
      },
      source: 'mcp',
      risk: 'low',
      concurrency: 'safe',
      async execute(args, ctx) {
        const target = pick(hub, 'prompts', args.server as string)
        const result = await client(target).getPrompt(
          {
            name: args.name as string,
            arguments: args.arguments as Record<string, string> | undefined,
          },
          options(target, ctx),
        )
        const text = result.messages.map(
          (m) =>
            `${m.role}: ${m.content.type === 'text' ? m.content.text : m.content.type === 'resource' ? `[resource ${m.content.resource.uri}]` : `[${m.content.type}]`}`,
        )
        return {
          content: [
            { type: 'text', text: [result.description, ...text].filter(Boolean).join('\n\n') },
          ],
          structured: result,
        }
      },
    },
  ]
}

function listTool(
  hub: McpHub,
  kind: Kind,
  name: string,
  description: string,
  field: string,
  list: Lister,
): ToolDefinition {
  return {
    name,
    description,
    inputSchema: { type: 'object', properties: { server, cursor }, additionalProperties: false },
    source: 'mcp',
    risk: 'low',
    concurrency: 'safe',
    async execute(args, ctx): Promise<ToolOutput> {
      if (typeof args.server === 'string') {
        const target = pick(hub, kind, args.server)
        const page = await list(
          client(target),
          args.cursor as string | undefined,
          options(target, ctx),
        )
        return { items: tag(page[field], target.name), nextCursor: page.nextCursor }
      }
      const items: unknown[] = []
      const unreachable: string[] = []
      for (const status of hub.list()) {
        const target = hub.get(status.name)!
        if (!target.client()?.getServerCapabilities()?.[kind]) continue
        try {
          let next: string | undefined
          for (let page = 0; page < PAGES; page++) {
            const got = await list(client(target), next, options(target, ctx))
            items.push(...tag(got[field], target.name))
            if ((next = got.nextCursor) === undefined) break
          }
        } catch (err) {
          unreachable.push(`${target.name}: ${messageOf(err)}`)
        }
      }
      return { items, ...(unreachable.length && { unreachable }) }
    },
  }
}

function tag(items: unknown, name: string): unknown[] {
  return Array.isArray(items) ? items.map((item) => ({ server: name, ...item })) : []
}

/** The named server, which must exist, be connected and offer `kind`. */
function pick(hub: McpHub, kind: Kind, name: string): McpServerHandle {
  const target = hub.get(name)
  if (!target)
    throw new Error(
      `no MCP server is named "${name}"; the servers are: ${
        hub
          .list()
          .map((s) => s.name)
          .join(', ') || 'none'
      }`,
    )
  const status = target.status()
  if (!target.client())
    throw new YokeError('SERVER_UNAVAILABLE', { server: name, state: status.detail })
  if (!target.client()!.getServerCapabilities()?.[kind])
    throw new Error(`MCP server "${name}" offers no ${kind}`)
  return target
}

function client(target: McpServerHandle): Client {
  const c = target.client()
  if (!c)
    throw new YokeError('SERVER_UNAVAILABLE', {
      server: target.name,
      state: target.status().detail,
    })
  return c
}

function options(target: McpServerHandle, ctx: CallContext) {
  return { timeout: target.timeoutMs, signal: ctx.signal }
}
