/**
 * An MCP Registry over HTTP (the official one, or any that serves its API): a server's entry by
 * name and version (`GET /v0/servers/{name}/versions/{version|latest}`, answered `{server,
 * _meta}`), and a search (`GET /v0/servers?search=…`) to name what it has when a name is not
 * found. Every request is bounded (1 MiB, 30 s) and its failure names the registry.
 */
import { YokeError } from 'yoke/cli'
import { DEFAULT_REGISTRY } from './server-json.ts'

const MAX_BYTES = 1024 * 1024
const TIMEOUT_MS = 30_000

/** The registry to ask: `--registry`, else `YOKE_MCP_REGISTRY`, else the official one. */
export const registryBase = (given?: string) =>
  (given ?? process.env.YOKE_MCP_REGISTRY ?? DEFAULT_REGISTRY).replace(/\/+$/, '')

export const entryUrl = (base: string, name: string, version = 'latest') =>
  `${base}/v0/servers/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}`

/** The registry an entry's URL was read from (for `yoke update`). */
export const baseOf = (location: string) => location.replace(/\/v0(\.1)?\/servers\/.*$/, '')

/** GET, bounded: the status and the body as text (at most 1 MiB). */
async function get(url: string): Promise<{ status: number; text: string }> {
  let response: Response
  try {
    response = await fetch(url, {
      signal: AbortSignal.timeout(TIMEOUT_MS),
      headers: { accept: 'application/json' },
    })
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message
    throw new YokeError('INSTALL_FAILED', {
      reason: `the MCP registry did not answer ${url} (${cause}): check the URL and the network`,
    })
  }
  const chunks: Buffer[] = []
  let bytes = 0
  for await (const chunk of (response.body ?? []) as unknown as AsyncIterable<Uint8Array>) {
    bytes += (chunk as Uint8Array).byteLength
    if (bytes > MAX_BYTES) {
      await response.body?.cancel().catch(() => {})
      throw new YokeError('INSTALL_REFUSED', {
        reason: `the MCP registry sent more than ${MAX_BYTES} bytes for ${url}: refused`,
      })
    }
    chunks.push(Buffer.from(chunk as Uint8Array))
  }
  return { status: response.status, text: Buffer.concat(chunks).toString('utf8') }
}

const parse = (text: string, url: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    throw new YokeError('INSTALL_FAILED', {
      reason: `the MCP registry's answer to ${url} is not JSON`,
    })
  }
}

/** The names a search finds (at most 10), to say what the registry has. */
export async function searchNames(base: string, term: string): Promise<string[]> {
  const url = `${base}/v0/servers?search=${encodeURIComponent(term)}&limit=10`
  const { status, text } = await get(url)
  if (status !== 200) return []
  const doc = parse(text, url) as { servers?: Array<{ server?: { name?: string }; name?: string }> }
  return [
    ...new Set((doc.servers ?? []).map((s) => s.server?.name ?? s.name).filter(Boolean)),
  ] as string[]
}

/** A server's entry: its server.json (as text, to install as it was served) and where it was read. */
export async function registryEntry(
  base: string,
  name: string,
  version?: string,
): Promise<{ url: string; text: string; server: Record<string, unknown> }> {
  const url = entryUrl(base, name, version)
  const { status, text } = await get(url)
  if (status === 404) {
    const near = await searchNames(base, name.split('/').pop() ?? name).catch(() => [])
    throw new YokeError('INSTALL_FAILED', {
      reason: `the MCP registry ${base} has no server ${name}${version ? ` at version ${version}` : ''}${near.length ? ` (a search finds ${near.join(', ')})` : ''}`,
    })
  }
  if (status !== 200)
    throw new YokeError('INSTALL_FAILED', {
      reason: `the MCP registry answered ${status} to ${url}`,
    })
  const doc = parse(text, url) as Record<string, unknown>
  const server = (doc.server && typeof doc.server === 'object' ? doc.server : doc) as Record<
    string,
    unknown
  >
  // the lock records the version read, not `latest`: what a restore asks for again
  const exact = typeof server.version === 'string' ? entryUrl(base, name, server.version) : url
  return { url: exact, text: JSON.stringify(server, null, 2) + '\n', server }
}
