/**
 * The upstream MCP servers' prompts, resources and resource templates (those of the servers that
 * mcp-client instances connected, through the `mcp` hub), served next to the skills' and
 * namespaced like their tools:
 *
 * - a prompt `greet` of server `fx` is `mcp__fx__greet`;
 * - a resource `fixture://readme` of server `fx` is `mcp://fx/fixture://readme`, and a template
 *   `fixture://items/{id}` is `mcp://fx/fixture://items/{id}` (the prefix is literal, so a client
 *   expands the template as it would the server's own).
 *
 * Results pass through as the server sent them; a read's contents get the namespaced URI they
 * were asked for. Lists are kept until the hub says that a server's list changed or its state
 * did; a server that fails to list costs its own entries only.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplateType,
} from '@modelcontextprotocol/server'
import { messageOf } from 'yoke'
import type { McpHub, McpServerHandle } from '../mcp/api.ts'

export type Kind = 'prompts' | 'resources' | 'templates'
type Entry = Prompt | Resource | ResourceTemplateType
type Page = { nextCursor?: string } & Record<string, unknown>
type Client = NonNullable<ReturnType<McpServerHandle['client']>>

/** a list reads at most this many pages of each server */
const PAGES = 10
const SCHEME = 'mcp://'

export const promptName = (server: string, name: string) => `mcp__${server}__${name}`
export const resourceUri = (server: string, uri: string) => `${SCHEME}${server}/${uri}`

/** what each kind needs of the server (capability) and of the SDK client */
const KINDS: Record<
  Kind,
  {
    capability: 'prompts' | 'resources'
    field: string
    list: (c: Client, p: object, o: object) => Promise<Page>
  }
> = {
  prompts: {
    capability: 'prompts',
    field: 'prompts',
    list: (c, p, o) => c.listPrompts(p, o) as Promise<Page>,
  },
  resources: {
    capability: 'resources',
    field: 'resources',
    list: (c, p, o) => c.listResources(p, o) as Promise<Page>,
  },
  templates: {
    capability: 'resources',
    field: 'resourceTemplates',
    list: (c, p, o) => c.listResourceTemplates(p, o) as Promise<Page>,
  },
}

export class Upstream {
  /** by server: the client the lists came from (a reconnect makes a new one) and the lists */
  readonly #cache = new Map<string, { client: Client; lists: Partial<Record<Kind, Entry[]>> }>()
  /** what each server offered when its state last changed */
  readonly #offers = new Map<string, { prompts: boolean; resources: boolean }>()
  /** `server kind` lists that failed and were warned of (once, until they list again) */
  readonly #failing = new Set<string>()

  constructor(
    private readonly hub: () => McpHub | undefined,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * Which of the lists a server's state change (it connected, went away, reconnected) touched:
   * those it offers now or offered before (by its capabilities), so a server with no prompts
   * and no resources makes no news.
   */
  offersChanged(server: string): Array<'prompts' | 'resources'> {
    const handle = this.hub()?.get(server)
    const status = handle?.status()
    const caps =
      status?.state === 'connected' ? handle?.client()?.getServerCapabilities() : undefined
    const now = { prompts: Boolean(caps?.prompts), resources: Boolean(caps?.resources) }
    const before = this.#offers.get(server) ?? { prompts: false, resources: false }
    this.#offers.set(server, now)
    // a reconnect may bring other lists: a server that offers a kind is news while its state moves
    return (['prompts', 'resources'] as const).filter((k) => now[k] || before[k])
  }

  /** A server's lists (or every server's) are read again next time. */
  forget(server?: string): void {
    if (server === undefined) this.#cache.clear()
    else this.#cache.delete(server)
  }

  async prompts(): Promise<Prompt[]> {
    return (await this.#all('prompts')).map(({ server, entry }) => ({
      ...(entry as Prompt),
      name: promptName(server, (entry as Prompt).name),
    }))
  }

  async resources(): Promise<Resource[]> {
    return (await this.#all('resources')).map(({ server, entry }) => ({
      ...(entry as Resource),
      uri: resourceUri(server, (entry as Resource).uri),
    }))
  }

  async templates(): Promise<ResourceTemplateType[]> {
    return (await this.#all('templates')).map(({ server, entry }) => ({
      ...(entry as ResourceTemplateType),
      uriTemplate: resourceUri(server, (entry as ResourceTemplateType).uriTemplate),
    }))
  }

  /** Whether `name` is in the upstream prompts' namespace (else it is a skill's). */
  isPrompt(name: string): boolean {
    return name.startsWith('mcp__')
  }

  isResource(uri: string): boolean {
    return uri.startsWith(SCHEME)
  }

  async getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    signal: AbortSignal,
  ): Promise<GetPromptResult> {
    const found = this.#serverOf(name)
    if (!found)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `no prompt named "${name}": no connected MCP server has it (prompts/list shows the names)`,
      )
    const { handle, client, rest } = found
    return client.getPrompt(
      { name: rest, ...(args && { arguments: args }) },
      { timeout: handle.timeoutMs, signal },
    )
  }

  async readResource(uri: string, signal: AbortSignal): Promise<ReadResourceResult> {
    const server = uri.slice(SCHEME.length).split('/', 1)[0]!
    const inner = uri.slice(SCHEME.length + server.length + 1)
    const handle = this.hub()?.get(server)
    const client = handle?.client()
    if (!handle || !client || !inner)
      throw new ResourceNotFoundError(
        uri,
        `resource ${uri}: ${inner ? `no connected MCP server named "${server}"` : `not an mcp://<server>/<uri> resource`}`,
      )
    const read = await client.readResource({ uri: inner }, { timeout: handle.timeoutMs, signal })
    return {
      ...read,
      contents: read.contents.map((c) =>
        typeof c.uri === 'string' ? { ...c, uri: resourceUri(server, c.uri) } : c,
      ),
    }
  }

  /** The connected server whose namespace `name` is in (the longest name, as names may hold `__`). */
  #serverOf(name: string): { handle: McpServerHandle; client: Client; rest: string } | undefined {
    const hub = this.hub()
    let best: { handle: McpServerHandle; client: Client; rest: string } | undefined
    for (const status of hub?.list() ?? []) {
      const prefix = promptName(status.name, '')
      if (!name.startsWith(prefix) || name.length === prefix.length) continue
      if (best && best.handle.name.length >= status.name.length) continue
      const handle = hub!.get(status.name)
      const client = handle?.client()
      if (handle && client) best = { handle, client, rest: name.slice(prefix.length) }
    }
    return best
  }

  async #all(kind: Kind): Promise<Array<{ server: string; entry: Entry }>> {
    const hub = this.hub()
    if (!hub) return []
    const lists = await Promise.all(
      hub.list().map(async (status) => {
        const handle = hub.get(status.name)
        const client = status.state === 'connected' ? handle?.client() : undefined
        if (!handle || !client || !client.getServerCapabilities()?.[KINDS[kind].capability])
          return []
        const entries = await this.#list(handle, client, kind)
        return entries.map((entry) => ({ server: status.name, entry }))
      }),
    )
    return lists.flat()
  }

  async #list(handle: McpServerHandle, client: Client, kind: Kind): Promise<Entry[]> {
    let cached = this.#cache.get(handle.name)
    if (cached?.client !== client) this.#cache.set(handle.name, (cached = { client, lists: {} }))
    const have = cached.lists[kind]
    if (have) return have
    const { field, list } = KINDS[kind]
    const entries: Entry[] = []
    try {
      let cursor: string | undefined
      for (let page = 0; page < PAGES; page++) {
        const got = await list(client, cursor === undefined ? {} : { cursor }, {
          timeout: handle.timeoutMs,
        })
        entries.push(...((got[field] as Entry[] | undefined) ?? []))
        cursor = got.nextCursor
        if (!cursor) break
      }
    } catch (err) {
      // a server's failure is worth a warning, once: each client's list asks again
      const failing = `${handle.name} ${kind}`
      if (!this.#failing.has(failing)) {
        this.#failing.add(failing)
        this.warn(`MCP server ${handle.name}: ${kind} not listed: ${messageOf(err)}`)
      }
      return [] // not kept: asked again next time
    }
    this.#failing.delete(`${handle.name} ${kind}`)
    if (this.#cache.get(handle.name) === cached) cached.lists[kind] = entries
    return entries
  }
}
