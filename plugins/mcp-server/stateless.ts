/**
 * 2026-07-28 requests over HTTP are stateless: a handler builds a Server for each request. Who
 * sent it decides the scope the request runs in. Holders of the static token run in the view's
 * scope, because one token does not tell its holders apart. Each OAuth token holder runs in a
 * scope of its own under the view's (`…:<view>/holder-<hash>`). So one user's "allow for this
 * session" grants and dynamic plugins are never another's, as with 2025-era sessions.
 *
 * Each view keeps at most MAX_HOLDERS token holders. The one used least recently that has nothing
 * in flight goes first, with its scope, as a closed session's does (a token that names only its
 * `jti` is a holder per token); the static token's handler stays.
 */
import { createHash } from 'node:crypto'
import { toNodeHandler } from '@modelcontextprotocol/node'
import type { McpHttpHandler } from '@modelcontextprotocol/server'
import type { ScopeHandle } from 'yoke'
import { STATIC_HOLDER } from './oauth/access.ts'
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
  /** requests in flight (a call, a listen stream): a busy holder is never let go */
  active: number
}

export class StatelessHandlers {
  /** per view: the static token's handler (never let go), then the token holders', oldest first */
  readonly #byView = new Map<View, { shared?: Held; holders: Map<string, Held> }>()

  constructor(
    private readonly make: (view: View, served: Served) => McpHttpHandler,
    private readonly max = MAX_HOLDERS,
  ) {}

  /** The node handler for `who`'s requests to `view`. */
  of(view: View, who: string): NodeHandler {
    let table = this.#byView.get(view)
    if (!table) this.#byView.set(view, (table = { holders: new Map() }))
    if (who === STATIC_HOLDER)
      return serving((table.shared ??= this.#held(view, { scope: view.scope, tag: 'http' })))
    const { holders } = table
    let held = holders.get(who)
    if (held)
      holders.delete(who) // to the end: the most recently used
    else {
      const tag = holderTag(who)
      held = this.#held(view, { scope: view.sessionScope(tag), tag, own: true })
    }
    holders.set(who, held)
    if (holders.size > this.max) this.#letGoOfOneIdle(holders, who)
    return serving(held)
  }

  /** Every handler of `view`, for its list-changed notifications. */
  handlersOf(view: View): McpHttpHandler[] {
    const table = this.#byView.get(view)
    if (!table) return []
    return [...(table.shared ? [table.shared] : []), ...table.holders.values()].map(
      (h) => h.handler,
    )
  }

  async close(): Promise<void> {
    const all = [...this.#byView.values()].flatMap((t) => [
      ...(t.shared ? [t.shared] : []),
      ...t.holders.values(),
    ])
    this.#byView.clear()
    await Promise.all(all.map(release))
  }

  #held(view: View, { scope, tag, own }: { scope: ScopeHandle; tag: string; own?: boolean }): Held {
    const handler = this.make(view, { scope, callerBase: `mcp:${view.name}:${tag}` })
    return { handler, node: toNodeHandler(handler), own: own ? scope : undefined, active: 0 }
  }

  /** The least recently used holder with nothing in flight goes (never `asking`); all busy: none. */
  #letGoOfOneIdle(holders: Map<string, Held>, asking: string) {
    for (const [who, held] of holders)
      if (held.active === 0 && who !== asking) {
        holders.delete(who)
        void release(held)
        return
      }
  }
}

/** The node handler, counting what is in flight until each response closes. */
function serving(held: Held): NodeHandler {
  return (req, res, body) => {
    held.active++
    let done = false
    res.on('close', () => {
      if (!done) held.active--
      done = true
    })
    return held.node(req, res, body)
  }
}

/** A holder's name in scopes and callers: a hash, so no claim value lands in a log line. */
const holderTag = (who: string) =>
  `holder-${createHash('sha256').update(who).digest('hex').slice(0, 16)}`

/**
 * Its scope goes first, before anything is awaited, so a holder that comes back at once can have
 * its scope again; then the handler closes, whether or not the scope went well.
 */
async function release({ handler, own }: Held): Promise<void> {
  try {
    await own?.dispose()
  } finally {
    await handler.close()
  }
}
