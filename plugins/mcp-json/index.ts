/**
 * mcp-json: the servers of a `.mcp.json` (Claude Code's format, bare or under `mcpServers`; also
 * claude_desktop_config.json or a Codex config.toml), each run as a child mcp-client instance.
 * The file is watched: an edit restarts only the servers whose entry changed, and a broken file
 * keeps the running servers and reports where it is broken.
 */
import { resolve } from 'node:path'
import { z } from 'zod'
import { definePlugin, interpolate, type ChildHandle } from 'yoke'
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

    async function load() {
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
          children.set(name, {
            spec,
            child: ctx.plugin(mcpClient, JSON.parse(spec), { key: name }),
          })
        } catch (err) {
          ctx.logger.error(`${cfg.file}: server "${name}" was not started`, err)
        }
      }
    }

    await (loading = load())
    if (cfg.watch) ctx.watch(file, () => (loading = loading.then(load)))
  },
})
