/**
 * @module cli/tools
 * `yoke tools list` shows the tools a scope sees; `yoke tools call NAME --args JSON` runs one call
 * through the whole pipeline (policy, approval on the terminal, hooks, limits) and prints the result.
 */
import { YokeError } from '../errors.ts'
import { hostTrack, runtimeView } from '../runtime/index.ts'
import type { ToolResult } from '../runtime/types.ts'
import { promptBridge } from './approval-prompt.ts'
import { defineCommand } from './command.ts'
import { color, printJson, progress } from './output.ts'

export const toolsList = defineCommand({
  name: 'tools list',
  summary: 'the tools a scope sees: name, source, risk, concurrency, owner',
  usage: 'yoke tools list [--json] [common flags]',
  examples: ['yoke tools list', 'yoke tools list --json --config config/yoke.yaml'],
  run: (args, _, cli) =>
    cli.compose(
      async (composition) => {
        const tools = composition.runtime!.list()
        if (args.json) {
          printJson({
            ok: true,
            tools: tools.map((t) => ({
              name: t.name,
              description: t.description,
              source: t.source,
              risk: t.risk,
              concurrency: t.concurrency,
              owner: t.owner,
              scope: 'global',
              inputSchema: t.inputSchema,
            })),
          })
          return 0
        }
        if (!tools.length)
          process.stdout.write(
            color.dim('no tools: add a plugin that registers some to the preset\n'),
          )
        const width = Math.max(...tools.map((t) => t.name.length), 4) + 2
        const sourceWidth = Math.max(...tools.map((t) => t.source.length), 12) + 2
        for (const t of tools) {
          const risk = t.risk === 'low' ? color.dim('low') : color.yellow(t.risk)
          process.stdout.write(
            `${t.name.padEnd(width)}${t.source.padEnd(sourceWidth)}${risk.padEnd(t.risk === 'low' ? 3 : 4)} ${color.dim(`${t.concurrency} · ${t.owner}`)}\n${t.description ? `  ${color.dim(t.description.split('\n')[0])}\n` : ''}`,
          )
        }
        return 0
      },
      { strict: true },
    ),
})

export const toolsCall = defineCommand({
  name: 'tools call',
  summary: 'one call through the full pipeline (approval asked on the terminal); exit 0 when ok',
  usage: 'yoke tools call NAME [--args JSON] [--json] [common flags]',
  flags: {
    args: {
      type: 'string',
      value: 'JSON',
      description: "the tool's arguments, a JSON object (default {})",
    },
  },
  positionals: 1,
  examples: [
    `yoke tools call note_add --args '{"text":"hi"}'`,
    'yoke tools call mcp__workspace__list_files --json',
  ],
  async run(args, positionals, cli) {
    const [name] = positionals
    if (!name) throw new YokeError('USAGE', { reason: 'yoke tools call needs the tool name' })
    let toolArgs: unknown = {}
    try {
      toolArgs = JSON.parse((args.args as string | undefined) ?? '{}')
    } catch (err) {
      throw new YokeError('USAGE', { reason: `--args is not JSON: ${(err as Error).message}` })
    }
    return cli.compose(async (composition) => {
      const rt = composition.runtime!
      const bridge = promptBridge()
      const view = runtimeView(rt, 'cli', hostTrack)
      const off = rt.approvals.register(bridge)
      const abort = new AbortController()
      const onSigint = () => abort.abort()
      process.once('SIGINT', onSigint)
      let result: ToolResult
      try {
        result = await view.call(name, toolArgs, {
          signal: abort.signal,
          onProgress: (e) =>
            progress(`  ${e.message ?? ''}${e.total ? ` ${e.progress}/${e.total}` : ''}`),
        })
        if (result.task) {
          // a one-shot command waits for a background task's end (Ctrl-C cancels it)
          progress(
            `${result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')}; waiting for it…`,
          )
          abort.signal.addEventListener('abort', () => rt.tasks.cancel(result.task!), {
            once: true,
          })
          result = (await rt.tasks.wait(result.task))?.result ?? result
        }
      } finally {
        process.off('SIGINT', onSigint)
        off()
        bridge.close()
      }
      if (args.json) printJson(result)
      else {
        const text = result.content
          .map((c) => (c.type === 'text' ? c.text : `[${c.type}]`))
          .join('\n')
        if (text) (result.ok ? process.stdout : process.stderr).write(text + '\n')
        process.stderr.write(
          color.dim(
            `${result.ok ? color.green('ok', process.stderr) : color.red(result.status, process.stderr)} · ${result.durationMs} ms${result.truncated ? ` · truncated, whole output in ${result.truncated.spilled}` : ''}`,
            process.stderr,
          ) + '\n',
        )
      }
      // interrupted (Ctrl-C): 130, as a Unix tool stopped by SIGINT
      return abort.signal.aborted ? 130 : result.ok ? 0 : 1
    })
  },
})
