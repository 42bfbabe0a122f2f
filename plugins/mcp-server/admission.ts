/**
 * Who gets a new 2025-era HTTP session when the table is full, so no client can lock the others
 * out. A client at its own cap gives up its idlest session (one with no request in flight, the
 * longest unused); a full table gives up the idlest session of the client holding the most.
 * Refused (429 / 503) only when every candidate has a request in flight. A pure decision over the
 * sessions as they are: the endpoint acts on it (http.ts).
 */

/** A session as admission sees it. */
export interface Seat {
  /** the remote address that opened it */
  client: string
  lastSeen: number
  /** requests being handled (not the GET stream): a session with any never gives way */
  requests: number
  closed: boolean
}

export interface SessionLimits {
  maxSessions: number
  maxSessionsPerClient: number
}

export type Admission<T extends Seat> =
  | { admitted: true; evict?: { seat: T; why: string } }
  | { admitted: false; status: 429 | 503; message: string }

/** The per-client cap when the config names none: a quarter of the sessions, at least one. */
export const perClientCap = (maxSessions: number, configured?: number): number =>
  configured ?? Math.max(1, Math.ceil(maxSessions / 4))

/**
 * Room for a new session of `client` among `seats` (every tracked session, closed ones included:
 * they count against maxSessions until they are gone).
 */
export function admission<T extends Seat>(
  seats: readonly T[],
  client: string,
  { maxSessions, maxSessionsPerClient: perClient }: SessionLimits,
): Admission<T> {
  const byClient = new Map<string, T[]>()
  for (const seat of seats) {
    if (seat.closed) continue
    const held = byClient.get(seat.client)
    if (held) held.push(seat)
    else byClient.set(seat.client, [seat])
  }
  const mine = byClient.get(client) ?? []
  if (mine.length >= perClient) {
    const seat = idlest(mine)
    if (!seat)
      return {
        admitted: false,
        status: 429,
        message: `Too many sessions from ${client}: ${mine.length} (http.maxSessionsPerClient ${perClient}), each with a request in flight; end one (DELETE) or try later`,
      }
    return {
      admitted: true,
      evict: {
        seat,
        why: `${client} opened a new one past http.maxSessionsPerClient ${perClient}`,
      },
    }
  }
  if (seats.length < maxSessions) return { admitted: true }
  const holders = [...byClient.values()].sort((a, b) => b.length - a.length)
  for (const held of holders) {
    const seat = idlest(held)
    if (seat)
      return {
        admitted: true,
        evict: {
          seat,
          why: `maxSessions ${maxSessions} reached; ${seat.client} holds the most sessions (${held.length})`,
        },
      }
  }
  return {
    admitted: false,
    status: 503,
    message: `Too many sessions (maxSessions ${maxSessions}), each with a request in flight; try later`,
  }
}

/** The session with no request in flight that was used longest ago. */
function idlest<T extends Seat>(list: T[]): T | undefined {
  let found: T | undefined
  for (const t of list) if (t.requests === 0 && (!found || t.lastSeen < found.lastSeen)) found = t
  return found
}
