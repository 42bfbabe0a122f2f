/**
 * The console's test helpers: a composed project with the console on a real loopback port, plain
 * HTTP requests with any headers (fetch would refuse to set Host), and an event-stream reader.
 */
import { request, type IncomingMessage } from 'node:http'
import { after } from 'node:test'
import { Composition, type ComposeOptions } from '../../../src/index.ts'
import type { ConsoleUrl } from '../../../plugins/console/api.ts'
import { tempProject, type Project } from '../../helpers/project.ts'

export const TOOLS = `export default {
  name: 'tools',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, execute: (a) => 'echo ' + a.text })
    ctx.runtime.register({ name: 'guarded', risk: 'high', execute: () => 'guarded ran' })
    ctx.runtime.register({ name: 'blocked', execute: () => 'blocked ran' })
  },
}
`

export const CONFIG = (console = '    config: { uiDir: ./ui }') =>
  [
    'preset: minimal',
    'plugins:',
    '  tools:',
    '    use: ./tools.mjs',
    '  policy:',
    '    use: policy',
    '    config: { deny: [blocked], askRisks: [high] }',
    '  console:',
    '    use: console',
    console,
    '',
  ].join('\n')

export interface Launched {
  project: Project
  composition: Composition
  url: ConsoleUrl
  token: string
  port: number
}

/** A project with the console (under `command: 'dev'` unless told otherwise), started. */
export function launcher() {
  const made: Array<{ p: Project; c: Composition }> = []
  after(async () => {
    for (const { p, c } of made) {
      await c.close().catch(() => {})
      p.cleanup()
    }
  })
  return async (config = CONFIG(), options: Partial<ComposeOptions> = {}): Promise<Launched> => {
    const project = tempProject({
      'tools.mjs': TOOLS,
      'yoke.config.yaml': config,
      'ui/index.html': '<!doctype html><title>console</title>',
      'ui/app.js': 'export {}',
      'secret.txt': 'the secret outside the page folder',
    })
    const composition = new Composition({
      cwd: project.dir,
      home: project.home,
      runMode: 'serve',
      command: 'dev',
      trust: true,
      ...options,
    })
    made.push({ p: project, c: composition })
    const event = await composition.start()
    if (!event.ok) throw new Error(event.errors.map((e) => e.message).join('\n'))
    const url = (await composition.kernel.ask('console/url', {})) as ConsoleUrl
    const token = url.url ? new URL(url.url).searchParams.get('token')! : ''
    return { project, composition, url, token, port: url.port ?? 0 }
  }
}

export interface Reply {
  status: number
  headers: IncomingMessage['headers']
  text: string
  json(): any
}

/** One request to 127.0.0.1:port with exactly these headers (Host included, when given). */
export function http(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { Host: `127.0.0.1:${port}`, ...options.headers },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d) => (text += d))
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            text,
            json: () => JSON.parse(text),
          }),
        )
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` })
export const postJson = (token: string) => ({
  ...bearer(token),
  'Content-Type': 'application/json',
})

export interface Sse {
  events: Array<{ kind: string; data: any }>
  /** the next event of `kind` (seen already from index `from`) that matches; bounded */
  next(kind: string, match?: (data: any) => boolean, from?: number, ms?: number): Promise<any>
  close(): void
}

/** Opens the event stream with `?token=` (as the page's EventSource does). */
export function sse(port: number, token: string): Promise<Sse> {
  return new Promise((resolve, reject) => {
    const events: Sse['events'] = []
    const waiters = new Set<() => void>()
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: `/api/events?token=${token}`,
        headers: { Host: `127.0.0.1:${port}` },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`events: ${res.statusCode}`))
        let buffer = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          buffer += chunk
          let end
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const kind = /^event: (.*)$/m.exec(frame)?.[1]
            const data = /^data: (.*)$/m.exec(frame)?.[1]
            if (kind && data !== undefined) events.push({ kind, data: JSON.parse(data) })
            for (const w of [...waiters]) w()
          }
        })
        const stream: Sse = {
          events,
          next(kind, match = () => true, from = 0, ms = 10_000) {
            return new Promise((done, fail) => {
              const look = () => {
                const found = events.slice(from).find((e) => e.kind === kind && match(e.data))
                if (!found) return false
                waiters.delete(look)
                clearTimeout(timer)
                done(found.data)
                return true
              }
              const timer = setTimeout(() => {
                waiters.delete(look)
                fail(
                  new Error(
                    `no "${kind}" event in ${ms} ms; saw: ${events.map((e) => e.kind).join(', ')}`,
                  ),
                )
              }, ms)
              if (!look()) waiters.add(look)
            })
          },
          close: () => req.destroy(),
        }
        resolve(stream)
      },
    )
    req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)))
    req.end()
  })
}
