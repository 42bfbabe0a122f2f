/**
 * @module tool-search/commands
 * `yoke tools search QUERY`: what `tool_search` would answer a model, from the running dev (its
 * tools as they are now) or a composition made for the command.
 */
import { color, defineCommand, printJson, YokeError } from 'yoke/cli'

const toolsSearch = defineCommand({
  name: 'tools search',
  summary: 'search the tools as tool_search does for a model: best candidates, why, or no match',
  usage: 'yoke tools search QUERY [--limit N] [--fresh] [--json] [common flags]',
  positionals: 1,
  flags: {
    limit: {
      type: 'string',
      value: 'N',
      description: 'how many candidates (default: the plugin’s limit, 5)',
    },
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
  },
  examples: [
    'yoke tools search "open an issue on github"',
    'yoke tools search create_issue --json',
  ],
  async run(args, [query], cli) {
    if (!query) throw new YokeError('USAGE', { reason: 'yoke tools search needs a query' })
    const limit = args.limit === undefined ? undefined : Number(args.limit)
    if (limit !== undefined && !(Number.isInteger(limit) && limit > 0))
      throw new YokeError('USAGE', { reason: `--limit takes a whole number, not "${args.limit}"` })
    const reply = await cli.control(
      'tool-search/search',
      { query, limit },
      { fresh: Boolean(args.fresh) },
    )
    if (typeof reply === 'number') return reply
    const found = reply.answer
    if (args.json) printJson({ ok: true, query, source: reply.source, ...found })
    else if (found.noMatch) process.stdout.write(`no tool matches "${query}"\n`)
    else {
      for (const c of found.candidates)
        process.stdout.write(
          `${c.name}  ${color.dim(`${c.source} · ${c.version} · ${c.risk} · ${c.score === null ? 'exact' : c.score.toFixed(2)} · ${c.why}`)}\n  ${c.description}\n`,
        )
      const arms =
        found.arms === 'hybrid' ? 'words and meaning' : `words only (semantic: ${found.semantic})`
      process.stdout.write(color.dim(`ranked by ${arms}\n`))
    }
    return found.noMatch ? 1 : 0
  },
})

export const commands = [toolsSearch]
