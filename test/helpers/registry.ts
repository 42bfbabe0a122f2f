/**
 * An MCP Registry over loopback, speaking the official API's read side: `GET
 * /v0/servers?search=` (`{servers: [{server, _meta}], metadata}`) and `GET
 * /v0/servers/{name}/versions/{version|latest}` (`{server, _meta}`; the name URL-encoded).
 * `publish` adds a version (the last published is the latest), as a registry does.
 *
 *   const registry = await serveRegistry([serverJson])
 *   add('mcp:io.github.acme/weather', { …, registry: registry.url })
 *   after(() => registry.close())
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

type ServerJson = { name: string; version: string; [field: string]: unknown }

export interface ServedRegistry {
  url: string
  publish(server: ServerJson): void
  /** the requests it answered, as `GET /path` */
  readonly requests: string[]
  close(): Promise<void>
}

export async function serveRegistry(servers: ServerJson[] = []): Promise<ServedRegistry> {
  const versions = new Map<string, ServerJson[]>()
  const requests: string[] = []
  const publish = (s: ServerJson) => versions.set(s.name, [...(versions.get(s.name) ?? []), s])
  servers.forEach(publish)
  const wrap = (s: ServerJson, latest: boolean) => ({
    server: s,
    _meta: { 'io.modelcontextprotocol.registry/official': { status: 'active', isLatest: latest } },
  })
  const http = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`)
    const url = new URL(req.url ?? '/', 'http://registry')
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    const one = /^\/v0(?:\.1)?\/servers\/([^/]+)\/versions\/([^/]+)$/.exec(url.pathname)
    if (one) {
      const list = versions.get(decodeURIComponent(one[1]!)) ?? []
      const version = decodeURIComponent(one[2]!)
      const found = version === 'latest' ? list.at(-1) : list.find((s) => s.version === version)
      return found
        ? json(200, wrap(found, found === list.at(-1)))
        : json(404, { title: 'Not Found', status: 404, detail: 'Server not found' })
    }
    if (/^\/v0(?:\.1)?\/servers$/.test(url.pathname)) {
      const term = url.searchParams.get('search') ?? ''
      const found = [...versions.entries()]
        .filter(([name]) => name.includes(term))
        .map(([, list]) => wrap(list.at(-1)!, true))
      return json(200, { servers: found, metadata: { count: found.length } })
    }
    json(404, { title: 'Not Found', status: 404 })
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    publish,
    requests,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  }
}
