/**
 * @module mcp-server/commands
 * `yoke serve`: the composed tools as an MCP server, through the project's mcp-server instance
 * (one is added when the config has none). `--stdio` serves one connection on stdin/stdout, in the
 * protocol era the client opens with (stdout then carries protocol messages only; logs go to
 * stderr), and ends with stdin; otherwise it serves Streamable HTTP (both eras on one URL) and
 * prints the URL on stderr. Config edits reload as in `yoke dev`.
 */
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, extname, join } from 'node:path'
import {
  defineCommand,
  errorJson,
  stopSignal,
  formatError,
  printJson,
  waitingLines,
  YokeError,
  type CommandContext,
} from 'yoke/cli'
import type { Composition } from 'yoke'
import type { McpServerApi } from './api.ts'
import { replicaId } from './lifecycle.ts'
import './errors.ts'

const PLUGIN = 'mcp-server'

const serve = defineCommand({
  name: 'serve',
  summary: 'serve the composed tools as an MCP server: Streamable HTTP (default) or --stdio',
  usage: 'yoke serve [--stdio | --http HOST:PORT] [--view NAME] [--oauth ISSUER] [common flags]',
  flags: {
    stdio: {
      type: 'boolean',
      description: 'serve one connection on stdin/stdout (for a client that spawns yoke)',
    },
    http: {
      type: 'string',
      value: 'HOST:PORT',
      description: 'serve Streamable HTTP there (port 0: any free port); default: the config',
    },
    view: {
      type: 'string',
      value: 'NAME',
      description: "serve one of the mcp-server instance's views alone (default: default)",
    },
    oauth: {
      type: 'string',
      value: 'ISSUER',
      description:
        "take OAuth access tokens (JWTs) from ISSUER instead of the bearer token: checked with its keys, aud = the view's URL; the config's oauth.scopes maps scopes to views",
    },
  },
  examples: [
    'yoke serve --stdio --config config/yoke.yaml',
    'yoke serve --http 127.0.0.1:3920 --view readonly',
    'yoke serve --http 127.0.0.1:3920 --oauth https://auth.example.com',
  ],
  async run(args, _, cli) {
    const stdio = Boolean(args.stdio)
    const http = args.http as string | undefined
    if (stdio && http !== undefined)
      throw new YokeError('USAGE', { reason: 'give --stdio or --http HOST:PORT, not both' })
    const listen = http === undefined ? undefined : parseHostPort(http)
    // which instance serves: the configured one (switched on if disabled), else one added for this run
    const key = await serverKey(cli)
    const issuer = args.oauth as string | undefined
    const sets = [...(cli.options.sets ?? []), ...setsFor(key, { stdio, listen, issuer })]
    if (stdio) {
      // stdout is the protocol's: whatever a plugin prints goes to stderr
      for (const method of ['log', 'info', 'debug', 'warn'] as const)
        console[method] = console.error
    }

    // the runtime loads when serving starts, not when --help imports this module
    const { Composition } = await import('yoke')
    const composition = new Composition({ ...cli.options, sets })
    // beside other replicas (YOKE_REPLICA_ID set), each line says whose it is
    const replica = process.env.YOKE_REPLICA_ID?.trim() ? `[${replicaId()}] ` : ''
    composition.kernel.hooks.log.tap('yoke serve', (r) => {
      if (r.level === 'debug') return
      process.stderr.write(
        `${replica}${r.level} ${r.fiber ? `${r.fiber.key}: ` : ''}${r.error instanceof YokeError ? formatError(r.error) : r.message}\n`,
      )
    })
    const signal = stopSignal()
    try {
      const first = await composition.start()
      if (!first.ok) {
        process.stderr.write(first.errors.map((e) => formatError(e)).join('\n') + '\n')
        return 2
      }
      // what waits (for `yoke trust`, a variable) is said before serving: a client sees fewer tools
      for (const line of await waitingLines(composition)) process.stderr.write(`waiting ${line}\n`)
      const service = serving(composition, key.name, Boolean(args.json))
      if (typeof service === 'number') return service
      const view = (args.view as string | undefined) ?? 'default'
      if (!service.views.includes(view))
        throw new YokeError('MCP_VIEW_UNKNOWN', { view, views: service.views.join(', ') })
      await composition.watch()
      const stop = signal.stopped
      if (stdio) return await overStdio(service, view, key.name, stop)
      return await overHttp(service, view, key.name, Boolean(args.json), stop)
    } finally {
      await composition.close()
      signal.dispose()
    }
  },
})

/** The `--set`s that make the instance `key` serve as the flags say. */
function setsFor(
  key: ServerKey,
  flags: { stdio: boolean; listen?: { host: string; port: number }; issuer?: string },
): string[] {
  const at = `plugins.${key.name}`
  return [
    ...(key.add ? [`${at}.use=${PLUGIN}`] : []),
    ...(key.disabled ? [`${at}.enabled=true`] : []),
    ...(flags.stdio ? [`${at}.config.http=false`] : []),
    ...(flags.listen
      ? [`${at}.config.http=${JSON.stringify({ enabled: true, ...flags.listen })}`]
      : []),
    ...(flags.issuer !== undefined
      ? [`${at}.config.oauth.issuer=${JSON.stringify(flags.issuer)}`]
      : []),
  ]
}

/** The running instance's service, or the exit code after saying why it does not run. */
function serving(composition: Composition, name: string, json: boolean): McpServerApi | number {
  const fiber = composition.reconciler.running.get(name)?.fiber
  const service = composition.get('mcpServer')
  if (service && fiber?.state === 'active') return service
  const why =
    fiber?.error ??
    new Error(
      `the ${PLUGIN} instance "${name}" is ${fiber?.state ?? 'not running'}; \`yoke inspect\` says why`,
    )
  if (json) printJson({ ok: false, error: errorJson(why) })
  process.stderr.write(formatError(why) + '\n')
  return 1
}

/** One connection on stdin/stdout, until it ends or a signal stops yoke. */
async function overStdio(
  service: McpServerApi,
  view: string,
  name: string,
  stop: Promise<unknown>,
) {
  process.stderr.write(`yoke serve: MCP over stdio (view ${view})\n`)
  const ended = await Promise.race([
    service.serveStdio(process.stdin, process.stdout, { view }).then(() => 'session' as const),
    stop.then(() => 'signal' as const),
  ])
  // the session also ends when a reload restarts the mcp-server instance itself: say so
  if (ended === 'session' && !process.stdin.readableEnded)
    process.stderr.write(
      `yoke serve: the stdio session ended (the ${PLUGIN} instance "${name}" restarted or stopped); the client has to start a new one\n`,
    )
  return 0
}

/** Says where the endpoint is (and, with --json, prints it), then serves until a signal. */
async function overHttp(
  service: McpServerApi,
  view: string,
  name: string,
  json: boolean,
  stop: Promise<NodeJS.Signals>,
) {
  const url = service.urlOf(view)
  if (!url)
    throw new YokeError('USAGE', {
      reason: `the ${PLUGIN} instance "${name}" has http: false; use --stdio, or --http HOST:PORT`,
    })
  const oauth = service.oauth
  process.stderr.write(
    `yoke serve: MCP endpoint ${url}\n  clients send Authorization: Bearer <token>; the token is ${service.tokenHint}\n${oauth ? `  protected resource metadata: ${oauth.metadataUrlOf(view)}\n` : ''}  views: ${service.views.map((v) => `${v} ${service.urlOf(v)}`).join(', ')}\n  replica ${service.replica}: GET /healthz, /readyz\n  Ctrl-C to stop\n`,
  )
  const each = (of: (v: string) => string | undefined) =>
    Object.fromEntries(service.views.map((v) => [v, of(v)]))
  if (json)
    printJson({
      ok: true,
      url,
      views: each((v) => service.urlOf(v)),
      tokenHint: service.tokenHint,
      replica: service.replica,
      ...(oauth && {
        oauth: {
          issuer: oauth.issuer,
          resources: each((v) => oauth.resourceOf(v)),
          metadata: each((v) => oauth.metadataUrlOf(v)),
        },
      }),
    })
  const signal = await stop
  // a balancer sees /readyz fail and stops sending; the calls in flight finish first
  process.stderr.write(
    `yoke serve: ${signal}: draining (new requests get 503 with Retry-After; the calls in flight may finish; ${signal} again stops at once)\n`,
  )
  const drained = await service.drain()
  process.stderr.write(
    `yoke serve: drained in ${drained.ms} ms: ${drained.finished} finished${drained.cut ? `, ${drained.cut} cut off (http.drainMs bounds the wait)` : ''}${tasksLine(drained.tasks)}\n`,
  )
  return 0
}

/** What a drain did to the MCP tasks this replica ran, when it ran any. */
function tasksLine({ finished, cut }: { finished: number; cut: number }): string {
  if (!finished && !cut) return ''
  return `; MCP tasks: ${finished} ended${cut ? `, ${cut} cancelled (their clients read why with tasks/get)` : ''}`
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

/** This plugin's entry module: an instance is ours when its `use` resolves to it. */
// compared by real path: a linked copy of yoke (npm link, workspaces) names the same file
// (index.ts beside this file in the source, index.js in the build)
const HERE = fileURLToPath(import.meta.url)
const ENTRY = realpathSync(join(dirname(HERE), `index${extname(HERE)}`))
const real = (file: string | undefined) => {
  try {
    return file && realpathSync(file)
  } catch {
    return file
  }
}

/** The instance key of the configured mcp-server, or the key to add one under. */
interface ServerKey {
  name: string
  /** none is configured: one is added for this run */
  add?: boolean
  /** the configured one is disabled: it is switched on for this run */
  disabled?: boolean
}

async function serverKey(cli: CommandContext): Promise<ServerKey> {
  let instances: Awaited<ReturnType<CommandContext['instances']>>
  try {
    instances = await cli.instances()
  } catch {
    return { name: PLUGIN } // the composition reports the config's errors
  }
  const ours = instances.filter((i) => real(i.file) === ENTRY)
  const found = ours.find((i) => i.enabled) ?? ours[0]
  if (found) return { name: found.key, disabled: !found.enabled }
  return { name: instances.some((i) => i.key === PLUGIN) ? 'yoke-serve' : PLUGIN, add: true }
}

export const commands = [serve]
