/**
 * mcp-json: the servers of a `.mcp.json` (Claude Code's format, bare or under `mcpServers`; also
 * claude_desktop_config.json or a Codex config.toml), each run as a child mcp-client instance.
 * The file is watched: an edit restarts only the servers whose entry changed, and a broken file
 * keeps the running servers and reports where it is broken.
 * A file inside the project is the project's: its stdio servers run its commands, so they wait
 * until the project is trusted (`yoke trust`), even for an instance of the user's own layers (one
 * from the project's config waits whole); its URL servers run.
 */
import { isAbsolute, join, relative, resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin, interpolate, YokeError, type ChildHandle } from 'yoke'
import { importFile, mcpClient, type ImportedServer } from '../mcp-client/api.ts'

const config = z
  .object({
    /** relative to the project directory */
    file: z.string().min(1).default('.mcp.json'),
    watch: z.boolean().default(true),
    /** mcp-client settings for every server of the file (its own entries win) */
    defaults: z.record(z.string(), z.unknown()).default({}),
  })
  .strict()

export default definePlugin({
  name: 'mcp-json',
  inject: ['project'],
  config,
  // it starts the stdio servers the project's .mcp.json lists
  runsProjectCode: true,
  async apply(ctx, cfg) {
    const file = resolve(ctx.project.dir, cfg.file)
    const children = new Map<string, { spec: string; child: ChildHandle }>()
    let loading = Promise.resolve()
    const where = relative(ctx.project.dir, file)
    const projects = where !== '' && !where.startsWith('..') && !isAbsolute(where)
    const trusted = () => (projects ? (ctx.project.trusted?.() ?? true) : true)
    let verdict = trusted()

    async function load() {
      verdict = trusted()
      let servers: ImportedServer[]
      try {
        // the file is named in the user's own config: its URLs are theirs (defaults: { ssrfGuard: true } guards them)
        const result = importFile(file, { trustUrls: true })
        for (const warning of result.warnings) ctx.logger.warn(`${cfg.file}: ${warning}`)
        servers = result.servers.filter((s) => s.enabled)
      } catch (err) {
        if ((err as { code?: string }).code === 'CONFIG_NOT_FOUND') servers = []
        else
          return ctx.logger.error(`${cfg.file} was not loaded; the running servers are kept`, err)
      }
      // ${VAR} expands as Claude Code does it: an unset variable is reported and kept as written
      const next = new Map(
        servers.map((s) => {
          const { value, errors } = interpolate(
            { ...cfg.defaults, ...s.config },
            process.env,
            new Map(),
          )
          for (const e of errors)
            ctx.logger.warn(`${cfg.file}: server "${s.serverName}": ${e.message}`)
          const stdio = (value as { command?: unknown }).command !== undefined
          if (stdio && verdict !== true) return [s.serverName, `${WAITS}${verdict}`]
          return [s.serverName, JSON.stringify(value)]
        }),
      )
      for (const [name, { spec, child }] of children) {
        if (next.get(name) === spec) continue
        children.delete(name)
        await child()
      }
      for (const [name, spec] of next) {
        if (children.has(name) || ctx.signal.aborted) continue
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
            : ctx.plugin(mcpClient, JSON.parse(spec), { key: name })
          children.set(name, { spec, child })
        } catch (err) {
          ctx.logger.error(`${cfg.file}: server "${name}" was not started`, err)
        }
      }
    }

    await (loading = load())
    // the trust store too: `yoke trust` starts the servers that waited, `--revoke` stops them
    const store = join(ctx.project.home, 'trust.json')
    if (cfg.watch)
      ctx.watch([file, ...(projects ? [store] : [])], (changes) => {
        const same = JSON.stringify(trusted()) === JSON.stringify(verdict)
        if (!same || changes.some((c) => c.path !== store)) loading = loading.then(load)
      })
  },
})

/** The spec of a server that waits for trust: the verdict follows. */
const WAITS = '\0waits for trust: '

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
