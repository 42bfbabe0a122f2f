/**
 * Who may use the HTTP endpoint (this folder): the static bearer token (token.ts), or OAuth access
 * tokens (resource.ts: the gateway as a protected resource; issuer.ts and jwt.ts: the issuer's
 * keys and one token's checks). The endpoint asks before it routes a request; a refusal is the
 * status and the headers to answer with (a WWW-Authenticate challenge), and a message that never
 * holds the token. A request let through says who it is, as far as its token tells: a 2025-era
 * session stays with who opened it.
 */
import type { Token } from './token.ts'
import type { View } from '../views.ts'

export interface Refusal {
  status: 401 | 403 | 503
  /** for the client's JSON-RPC error and the debug log: never the token */
  message: string
  headers: Record<string, string>
}

/** Let through, as `who`: the static token's holder, or an OAuth token's issuer and subject. */
export interface Admitted {
  who: string
}

export const isRefusal = (verdict: Refusal | Admitted): verdict is Refusal => 'status' in verdict

/** Whoever holds the static token (one token does not tell its holders apart). */
export const STATIC_HOLDER = 'the static token'

export interface Access {
  /** where the token is, or what it must be, for people: never a token */
  readonly hint: string
  /**
   * Whether the request may go on to `view` (undefined: a path that names no view, to be answered
   * 404 once the client has shown it may use the endpoint at all)
   */
  check(authorization: string | undefined, view: View | undefined): Promise<Refusal | Admitted>
  /** the document served at `path` without a token (protected resource metadata), if any */
  document?(path: string): object | undefined
}

/** The static bearer token alone. */
export function staticAccess(token: Token): Access {
  return {
    hint: token.hint,
    check: async (authorization) =>
      token.check(authorization)
        ? { who: STATIC_HOLDER }
        : {
            status: 401,
            message:
              'Unauthorized: send Authorization: Bearer <token> (see the mcp-server README for where the token is)',
            headers: { 'www-authenticate': 'Bearer realm="yoke"' },
          },
  }
}
