/**
 * 2026-07-28 requests over HTTP are stateless: a handler builds a Server for each request. Who
 * sent it decides the scope the request runs in. Holders of the static token run in the view's
 * scope, because one token does not tell its holders apart. Each OAuth token holder runs in a
 * scope of its own under the view's (`…:<view>/holder-<hash>`). So one user's "allow for this
 * session" grants and dynamic plugins are never another's, as with 2025-era sessions.
 *
 * Each view keeps at most MAX_HOLDERS holders. The one used least recently goes first, with its
 * scope, as a closed session's does; a token that names only its `jti` is a holder per token.
 */
import { createHash } from 'node:crypto'
import { toNodeHandler } from '@modelcontextprotocol/node'
import type { McpHttpHandler } from '@modelcontextprotocol/server'
import type { ScopeHandle } from 'yoke'
import { STATIC_HOLDER } from './access.ts'
import type { View } from './views.ts'

export const MAX_HOLDERS = 256

/** What a handler serves with: the scope its calls run in, and the caller name they begin with. */
export interface Served {
  scope: ScopeHandle
  callerBase: string
}

type NodeHandler = ReturnType<typeof toNodeHandler>

interface Held {
  handler: McpHttpHandler
  node: NodeHandler
  /** a scope of the holder's own, disposed with it; undefined: the view's */
  own?: ScopeHandle
}

export class StatelessHandlers {
  readonly #byView = new Map<View, Map<string, Held>>()

  constructor(
    private readonly make: (view: View, served: Served) => McpHttpHandler,
    private readonly max = MAX_HOLDERS,
  ) {}

  /** The node handler for `who`'s requests to `view`. */
  of(view: View, who: string): NodeHandler {
    let held = this.#byView.get(view)
    if (!held) this.#byView.set(view, (held = new Map()))
    const found = held.get(who)
    if (found) {
      held.delete(who) // to the end: the most recently used
      held.set(who, found)
      return found.node
    }
    const tag = who === STATIC_HOLDER ? undefined : holderTag(who)
    const own = tag ? view.sessionScope(tag) : undefined
    const handler = this.make(view, {
      scope: own ?? view.scope,
      callerBase: `mcp:${view.name}:${tag ?? 'http'}`,
    })
    const entry: Held = { handler, node: toNodeHandler(handler), own }
    held.set(who, entry)
    if (held.size > this.max) {
      const [oldest, evicted] = held.entries().next().value!
      held.delete(oldest)
      void release(evicted)
    }
    return entry.node
  }

  /** Every handler of `view`, for its list-changed notifications. */
  handlersOf(view: View): McpHttpHandler[] {
    return [...(this.#byView.get(view)?.values() ?? [])].map((h) => h.handler)
  }

  async close(): Promise<void> {
    const all = [...this.#byView.values()].flatMap((held) => [...held.values()])
    this.#byView.clear()
    await Promise.all(all.map(release))
  }
}

/** A holder's name in scopes and callers: a hash, so no claim value lands in a log line. */
const holderTag = (who: string) =>
  `holder-${createHash('sha256').update(who).digest('hex').slice(0, 16)}`

async function release({ handler, own }: Held): Promise<void> {
  await handler.close()
  await own?.dispose()
}
