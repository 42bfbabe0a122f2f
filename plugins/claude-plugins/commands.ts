/**
 * @module claude-plugins/commands
 * `yoke claude-plugins list`: the plugin folders in use, what each brought, and what was not used.
 */
import { color, defineCommand, displayPath, printJson, YokeError } from 'yoke/cli'

const claudePluginsList = defineCommand({
  name: 'claude-plugins list',
  summary:
    'Claude Code / Codex plugin folders in use: skills, commands, agents, hooks, MCP servers, and what was not used',
  usage: 'yoke claude-plugins list [--fresh] [--json] [common flags]',
  flags: {
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
  },
  examples: ['yoke claude-plugins list', 'yoke claude-plugins list --json --fresh'],
  async run(args, _, cli) {
    let reply
    try {
      reply = await cli.control('claude-plugins/list', {}, { fresh: Boolean(args.fresh) })
    } catch (err) {
      if (err instanceof YokeError && err.code === 'CONTROL_UNKNOWN')
        throw new YokeError('USAGE', {
          reason:
            'no claude-plugins instance is running: add `claude-plugins: { use: claude-plugins, config: { dirs: [DIR] } }` to the config',
        })
      throw err
    }
    if (typeof reply === 'number') return reply
    const { plugins } = reply.answer
    if (args.json) {
      printJson({ ok: true, plugins })
      return 0
    }
    if (!plugins.length) process.stdout.write('no plugin folders\n')
    const cwd = args.cwd ?? process.cwd()
    for (const p of plugins) {
      const parts = Object.entries(p.parts)
        .filter(([, names]) => names.length)
        .map(([kind, names]) => `${names.length} ${kind}`)
      process.stdout.write(
        `${color.bold(p.name)}${p.version ? ` ${p.version}` : ''} ${color.dim(`(${p.manifest} manifest, ${p.source})`)}\n  ${color.dim(displayPath(p.dir, cwd))}\n  ${parts.join(', ') || 'nothing in it'}\n`,
      )
      for (const line of p.problems) process.stdout.write(`  ${color.yellow('problem')} ${line}\n`)
      for (const line of p.notes) process.stdout.write(`  ${color.dim(`note: ${line}`)}\n`)
    }
    return 0
  },
})

export const commands = [claudePluginsList]
