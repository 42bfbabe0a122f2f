/**
 * One running mcp-json instance: the file it reads, the trust verdict it last saw, and one child
 * mcp-client instance per server of the file, each known by the spec it was started with. What
 * a server's entry becomes (`specOf`) and which children a new reading of the file stops and
 * starts (`plan`) are pure functions.
 */
import { isAbsolute, join, relative, resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin, interpolate, YokeError, type ChildHandle, type InjectedContext } from 'yoke'
import { importFile, type ImportedServer } from '../mcp-client/api.ts'

export const mcpJsonConfig = z
  .object({
    /** relative to the project directory */
    file: z.string().min(1).default('.mcp.json'),
    watch: z.boolean().default(true),
    /** mcp-client settings for every server of the file (its own entries win) */
    defaults: z.record(z.string(), z.unknown()).default({}),
  })
  .strict()

export type McpJsonConfig = z.output<typeof mcpJsonConfig>

/** The spec of a server that waits for trust: the verdict follows. */
export const WAITS = '\0waits for trust: '

/** A trust verdict: true, or why not. */
type Verdict = true | string

/**
 * What one server of the file runs as: its mcp-client config as JSON (the defaults under its own
 * entry, `${VAR}` expanded as Claude Code does it: an unset variable is reported and kept as
 * written), or, for a stdio server while the project is not trusted, WAITS and the verdict.
 */
export function specOf(
  server: ImportedServer,
  defaults: Record<string, unknown>,
  verdict: Verdict,
  env: Record<string, string | undefined>,
  warn: (message: string) => void,
): string {
  const { value, errors } = interpolate({ ...defaults, ...server.config }, env, new Map())
  for (const e of errors) warn(`server "${server.serverName}": ${e.message}`)
  const stdio = (value as { command?: unknown }).command !== undefined
  if (stdio && verdict !== true) return `${WAITS}${verdict}`
  return JSON.stringify(value)
}

/** Which servers a new reading stops (gone or changed) and starts (new or changed). */
export function plan(
  running: ReadonlyMap<string, string>,
  next: ReadonlyMap<string, string>,
): { stop: string[]; start: string[] } {
  const stop = [...running].filter(([name, spec]) => next.get(name) !== spec).map(([n]) => n)
  const start = [...next.keys()].filter((name) => !running.has(name) || stop.includes(name))
  return { stop, start }
}

export class McpJsonServers {
  /** the file, absolute */
  readonly file: string
  /** the file is inside the project: its stdio servers wait for trust */
  readonly projects: boolean
  /** the children, by server name, with the spec each was started with */
  readonly #children = new Map<string, { spec: string; child: ChildHandle }>()
  /** the reading under way: the next one queues behind it */
  #loading: Promise<void> = Promise.resolve()
  /** the trust verdict the last reading used */
  #verdict: Verdict

  constructor(
    private readonly ctx: InjectedContext<['project']>,
    readonly cfg: McpJsonConfig,
  ) {
    this.file = resolve(ctx.project.dir, cfg.file)
    const where = relative(ctx.project.dir, this.file)
    this.projects = where !== '' && !where.startsWith('..') && !isAbsolute(where)
    this.#verdict = this.#trusted()
  }

  /** Reads the file and starts its servers; then watches it (and the trust store) if asked to. */
  async start(): Promise<void> {
    await (this.#loading = this.load())
    if (!this.cfg.watch) return
    // the trust store too: `yoke trust` starts the servers that waited, `--revoke` stops them
    const store = join(this.ctx.project.home, 'trust.json')
    this.ctx.watch([this.file, ...(this.projects ? [store] : [])], (changes) => {
      const same = JSON.stringify(this.#trusted()) === JSON.stringify(this.#verdict)
      if (!same || changes.some((c) => c.path !== store))
        this.#loading = this.#loading.then(() => this.load())
    })
  }

  /** One reading of the file: the children whose spec changed are stopped, the new ones started. */
  async load(): Promise<void> {
    this.#verdict = this.#trusted()
    const servers = this.#read()
    if (!servers) return
    const next = new Map(
      servers.map((s) => [
        s.serverName,
        specOf(s, this.cfg.defaults, this.#verdict, process.env, (m) => this.#warn(m)),
      ]),
    )
    const running = new Map([...this.#children].map(([name, { spec }]) => [name, spec]))
    const { stop, start } = plan(running, next)
    for (const name of stop) {
      const { child } = this.#children.get(name)!
      this.#children.delete(name)
      await child()
    }
    for (const name of start) if (!this.ctx.signal.aborted) this.#start(name, next.get(name)!)
  }

  /** The file's enabled servers; none when it is not there; undefined when it cannot be read. */
  #read(): ImportedServer[] | undefined {
    try {
      // the file is named in the user's own config: its URLs are theirs (defaults: { ssrfGuard: true } guards them)
      const result = importFile(this.file, { trustUrls: true })
      for (const warning of result.warnings) this.#warn(warning)
      return result.servers.filter((s) => s.enabled)
    } catch (err) {
      if ((err as { code?: string }).code === 'CONFIG_NOT_FOUND') return []
      this.ctx.logger.error(`${this.cfg.file} was not loaded; the running servers are kept`, err)
      return undefined
    }
  }

  #start(name: string, spec: string): void {
    const { ctx, cfg } = this
    try {
      const child = spec.startsWith(WAITS)
        ? ctx.plugin(
            waitingServer(
              `${ctx.key}/${name}`,
              cfg.file,
              spec.slice(WAITS.length),
              ctx.project.dir,
            ),
            {},
            { key: name },
          )
        : ctx.plugin('mcp-client', JSON.parse(spec), { key: name })
      this.#children.set(name, { spec, child })
    } catch (err) {
      ctx.logger.error(`${cfg.file}: server "${name}" was not started`, err)
    }
  }

  #trusted(): Verdict {
    return this.projects ? (this.ctx.project.trusted?.() ?? true) : true
  }

  #warn(message: string): void {
    this.ctx.logger.warn(`${this.cfg.file}: ${message}`)
  }
}

/** A stdio server of an untrusted project's file: pending, saying why and naming `yoke trust`. */
const waitingServer = (name: string, file: string, reason: string, dir: string) =>
  definePlugin({
    name: 'mcp-client',
    apply() {
      throw new YokeError('PLUGIN_WAITING', {
        instance: name,
        reason: `${reason}, and ${file} runs this server's command (a stdio server of the project)`,
        what: `review ${file}, then run \`yoke trust\` in ${dir} (a running yoke dev starts it then); --trust or YOKE_TRUST=1 trusts one run`,
      })
    },
  })
