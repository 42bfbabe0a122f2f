/**
 * @module cli/serve
 * `yoke serve`: the composed tools as an MCP server, through the project's mcp-server instance
 * (one is added when the config has none). `--stdio` serves one session on stdin/stdout (stdout
 * then carries protocol messages only; logs go to stderr) and ends with stdin; otherwise it
 * serves Streamable HTTP and prints the URL on stderr. Config edits reload as in `yoke dev`.
 */
import type { McpServerApi } from '../../plugins/mcp-server/index.ts'
import { Composition } from '../config/composer.ts'
import { loadLayers } from '../config/layers.ts'
import { mergeLayers } from '../config/merge.ts'
import { YokeError } from '../errors.ts'
import { composeOptions, type Command } from './args.ts'
import { errorJson, formatError, printJson } from './output.ts'

const PLUGIN = 'mcp-server'

export const serve: Command = {
  name: 'serve',
  summary: 'serve the composed tools as an MCP server: Streamable HTTP (default) or --stdio',
  usage: 'yoke serve [--stdio | --http HOST:PORT] [--view NAME] [common flags]',
  options: { stdio: { type: 'boolean' }, http: { type: 'string' }, view: { type: 'string' } },
  async run(args) {
    const stdio = Boolean(args.stdio)
    const http = args.http as string | undefined
    if (stdio && http !== undefined)
      throw new YokeError('USAGE', { reason: 'give --stdio or --http HOST:PORT, not both' })
    const listen = http === undefined ? undefined : parseHostPort(http)
    const options = composeOptions(args)
    // which instance serves: the configured one (switched on if disabled), else one added for this run
    const key = await serverKey(options)
    const sets = [...(options.sets ?? [])]
    if (key.add) sets.push(`plugins.${key.name}.use=${PLUGIN}`)
    if (key.disabled) sets.push(`plugins.${key.name}.enabled=true`)
    if (stdio) sets.push(`plugins.${key.name}.config.http=false`)
    if (listen)
      sets.push(`plugins.${key.name}.config.http=${JSON.stringify({ enabled: true, ...listen })}`)
    if (stdio) {
      // stdout is the protocol's: whatever a plugin prints goes to stderr
      for (const method of ['log', 'info', 'debug', 'warn'] as const)
        console[method] = console.error
    }

    const composition = new Composition({ ...options, sets })
    composition.kernel.hooks.log.tap('yoke serve', (r) => {
      if (r.level === 'debug') return
      process.stderr.write(
        `${r.level} ${r.fiber ? `${r.fiber.key}: ` : ''}${r.error instanceof YokeError ? formatError(r.error) : r.message}\n`,
      )
    })
    const stop = new Promise<void>((resolve) => {
      process.once('SIGINT', resolve)
      process.once('SIGTERM', resolve)
    })
    try {
      const first = await composition.start()
      if (!first.ok) {
        process.stderr.write(first.errors.map((e) => formatError(e)).join('\n') + '\n')
        return 2
      }
      const fiber = composition.reconciler.running.get(key.name)?.fiber
      const service = composition.kernel.services.get('mcpServer')?.value as
        McpServerApi | undefined
      if (!service || fiber?.state !== 'active') {
        const why =
          fiber?.error ??
          new Error(
            `the ${PLUGIN} instance "${key.name}" is ${fiber?.state ?? 'not running'}; \`yoke inspect\` says why`,
          )
        if (args.json) printJson({ ok: false, error: errorJson(why) })
        process.stderr.write(formatError(why) + '\n')
        return 1
      }
      const view = (args.view as string | undefined) ?? 'default'
      if (!service.views.includes(view))
        throw new YokeError('MCP_VIEW_UNKNOWN', { view, views: service.views.join(', ') })
      await composition.watch()
      if (stdio) {
        process.stderr.write(`yoke serve: MCP over stdio (view ${view})\n`)
        const ended = await Promise.race([
          service
            .serveStdio(process.stdin, process.stdout, { view })
            .then(() => 'session' as const),
          stop.then(() => 'signal' as const),
        ])
        // the session also ends when a reload restarts the mcp-server instance itself: say so
        if (ended === 'session' && !process.stdin.readableEnded)
          process.stderr.write(
            `yoke serve: the stdio session ended (the ${PLUGIN} instance "${key.name}" restarted or stopped); the client has to start a new one\n`,
          )
        return 0
      }
      const url = service.urlOf(view)
      if (!url)
        throw new YokeError('USAGE', {
          reason: `the ${PLUGIN} instance "${key.name}" has http: false; use --stdio, or --http HOST:PORT`,
        })
      process.stderr.write(
        `yoke serve: MCP endpoint ${url}\n  clients send Authorization: Bearer <token>; the token is ${service.tokenHint}\n  views: ${service.views.map((v) => `${v} ${service.urlOf(v)}`).join(', ')}\n  Ctrl-C to stop\n`,
      )
      if (args.json)
        printJson({
          ok: true,
          url,
          views: Object.fromEntries(service.views.map((v) => [v, service.urlOf(v)])),
          tokenHint: service.tokenHint,
        })
      await stop
      return 0
    } finally {
      await composition.close()
    }
  },
}

function parseHostPort(value: string): { host: string; port: number } {
  const m = /^\[?([^\]]*?)\]?:(\d{1,5})$/.exec(value)
  const port = Number(m?.[2])
  if (!m || !m[1] || port > 65535)
    throw new YokeError('USAGE', {
      reason: `--http takes HOST:PORT (e.g. 127.0.0.1:3920, or 127.0.0.1:0 for any free port), not "${value}"`,
    })
  return { host: m[1], port }
}

/**
 * Options for a one-shot command (`yoke run`, `tools call`, `inspect --fresh`, …): the configured
 * mcp-server instances run without their HTTP endpoint, which belongs to `yoke dev` and `yoke serve`
 * (a one-shot command would otherwise take the port a running `yoke dev` holds).
 */
export async function withoutEndpoint(
  options: ReturnType<typeof composeOptions>,
): Promise<ReturnType<typeof composeOptions>> {
  const stack = await loadLayers(options)
  if (stack.errors.length) return options
  const plugins = (mergeLayers(stack.layers).value.plugins ?? {}) as Record<
    string,
    { use?: string } | null
  >
  const keys = Object.entries(plugins)
    .filter(([, entry]) => entry && isServer(entry.use))
    .map(([key]) => key)
  return keys.length
    ? {
        ...options,
        sets: [...(options.sets ?? []), ...keys.map((key) => `plugins.${key}.config.http=false`)],
      }
    : options
}

const isServer = (use: string | undefined) =>
  use === PLUGIN || /(^|[\\/])mcp-server([\\/]index\.ts)?$/.test(use ?? '')

/** The instance key of the configured mcp-server, or the key to add one under. */
async function serverKey(
  options: ReturnType<typeof composeOptions>,
): Promise<{ name: string; add?: boolean; disabled?: boolean }> {
  const stack = await loadLayers(options)
  if (stack.errors.length) return { name: PLUGIN } // the composition reports them
  const plugins = (mergeLayers(stack.layers).value.plugins ?? {}) as Record<
    string,
    { use?: string; enabled?: boolean } | null
  >
  const ours = Object.entries(plugins).filter(([, entry]) => entry && isServer(entry.use))
  const found = ours.find(([, entry]) => entry!.enabled !== false) ?? ours[0]
  if (found) return { name: found[0], disabled: found[1]!.enabled === false }
  return { name: plugins[PLUGIN] === undefined ? PLUGIN : 'yoke-serve', add: true }
}
