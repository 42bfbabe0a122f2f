/**
 * The page's link to the console server: the launch token (read from the address once, then
 * dropped from the address bar and history), JSON fetches with `Authorization: Bearer`, and the
 * live event stream (EventSource cannot set headers, so it carries `?token=`).
 */

let token = ''

/** Reads `?token=` from the address once and removes it (history.replaceState keeps the hash). */
export function takeToken(): string {
  const url = new URL(location.href)
  const found = url.searchParams.get('token')
  if (found !== null) {
    token = found
    url.searchParams.delete('token')
    history.replaceState(history.state, '', url.pathname + url.search + url.hash)
  }
  return token
}

/** An API answer that was not 2xx: its status and the server's error text. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message)
  }
}

/** GET or POST (JSON) an API path with the token; throws ApiError on a non-2xx answer. */
export async function api<T>(path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { headers: { Authorization: `Bearer ${token}` } }
  if (body !== undefined) {
    init.method = 'POST'
    init.headers = { ...init.headers, 'Content-Type': 'application/json' }
    init.body = JSON.stringify(body)
  }
  const res = await fetch(path, init)
  const text = await res.text()
  let data: unknown = text
  try {
    data = text ? JSON.parse(text) : undefined
  } catch {}
  if (!res.ok) throw new ApiError(res.status, errorText(data, res), data)
  return data as T
}

function errorText(data: unknown, res: Response): string {
  if (data && typeof data === 'object') {
    const o = data as { error?: unknown; message?: unknown; fix?: unknown }
    const err = o.error && typeof o.error === 'object' ? (o.error as Record<string, unknown>) : o
    const parts = [err.message ?? err.error, err.fix].filter((x) => typeof x === 'string')
    if (parts.length) return parts.join(' — ')
  }
  return `${res.status} ${res.statusText}`
}

export type Connection = 'connecting' | 'live' | 'lost'

/**
 * Opens the event stream; `onEvent(kind, data)` for each named event in `kinds`; `onState` as
 * the connection comes and goes (EventSource reconnects by itself; `onOpen` refetches what was
 * missed). Returns the close function.
 */
export function subscribe(
  kinds: readonly string[],
  onEvent: (kind: string, data: unknown) => void,
  onState: (state: Connection) => void,
  onOpen: () => void,
): () => void {
  const source = new EventSource(`/api/events?token=${encodeURIComponent(token)}`)
  onState('connecting')
  source.onopen = () => {
    onState('live')
    onOpen()
  }
  source.onerror = () => onState(source.readyState === EventSource.CLOSED ? 'lost' : 'connecting')
  for (const kind of kinds) {
    source.addEventListener(kind, (e) => {
      let data: unknown
      try {
        data = JSON.parse((e as MessageEvent<string>).data)
      } catch {
        return
      }
      onEvent(kind, data)
    })
  }
  return () => source.close()
}
