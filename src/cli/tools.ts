/**
 * @module cli/tools
 * `yoke tools list` shows the tools a scope sees; `yoke tools call NAME --args JSON` runs one call
 * through the whole pipeline (policy, approval on the terminal, hooks, limits) and prints the result.
 * Both act on the running `yoke dev` of the project when there is one (the call runs there, its
 * approvals are asked on this terminal, its progress shown here); `--fresh`, a layer flag or no dev:
 * a composition made for the command.
 */
import type { Composition } from '../config/composer.ts'
import { YokeError } from '../errors.ts'
import { partText } from '../content.ts'
import type { ApprovalAnswer, Asker } from '../runtime/approval.ts'
import type { ProgressEvent, ToolCall, ToolResult } from '../runtime/types.ts'
import type { ToolRuntime } from '../runtime/runtime.ts'
import { promptBridge } from './approval-prompt.ts'
import { defineCommand, type Flag } from './command.ts'
import type { ControlSession } from './control.ts'
import { contributions } from './contributions.ts'
import { color, printJson, progress } from './output.ts'
import { waitingInstances, waitingJson } from './waiting.ts'

const FRESH: Flag = {
  type: 'boolean',
  description: 'compose now even when a yoke dev is running (its state is not seen)',
}

export interface ToolRow {
  name: string
  description?: string
  source: string
  risk: string
  concurrency: string
  owner: string
  scope: 'global'
  inputSchema: unknown
  /** the columns plugins contribute (`<plugin>/tool-columns`): column → this tool's cell */
  [column: string]: unknown
}

const OWN_COLUMNS = new Set([
  'name',
  'description',
  'source',
  'risk',
  'concurrency',
  'owner',
  'scope',
  'inputSchema',
])

/** The global scope's tools, as `tools list` shows them (the dev's answer to `tools-list`). */
export async function toolRows(composition: Composition): Promise<ToolRow[]> {
  const columns = new Map<string, Record<string, string>>()
  const check = (answer: unknown) =>
    (answer && typeof answer === 'object' ? answer : {}) as Record<string, Record<string, string>>
  for (const { plugin, answer, error } of await contributions(
    composition.kernel,
    'tool-columns',
    check,
  )) {
    if (error)
      process.stderr.write(
        `${color.yellow('warn', process.stderr)} ${plugin}: its tool columns could not be read (${error})\n`,
      )
    for (const [column, cells] of Object.entries(answer ?? {}))
      if (!OWN_COLUMNS.has(column)) columns.set(column, cells)
  }
  return composition.runtime!.list().map((t) => ({
    name: t.name,
    description: t.description,
    source: t.source,
    risk: t.risk,
    concurrency: t.concurrency,
    owner: t.owner,
    scope: 'global',
    ...Object.fromEntries([...columns].map(([column, cells]) => [column, cells[t.name]])),
    inputSchema: t.inputSchema,
  }))
}

export const toolsList = defineCommand({
  name: 'tools list',
  summary: 'the tools a scope sees: name, source, risk, concurrency, owner',
  usage: 'yoke tools list [--fresh] [--json] [common flags]',
  flags: { fresh: FRESH },
  examples: ['yoke tools list', 'yoke tools list --json --fresh'],
  async run(args, _, cli) {
    const live = args.fresh ? undefined : ((await cli.live('tools-list')) as ToolRow[] | undefined)
    if (live) {
      // what waits in the dev is said here too (a dev from before `waiting` answers nothing)
      const waits = (await cli.live('waiting').catch(() => undefined)) as LiveWaiting | undefined
      for (const line of waits?.lines ?? [])
        process.stderr.write(`${color.yellow('waiting', process.stderr)} ${line}\n`)
      const code = printTools(live, Boolean(args.json), waits?.waiting ?? [])
      return waits?.waiting.some((w) => w.trust) ? Math.max(code, 1) : code
    }
    // strict: exit 1 when an instance failed or waits for trust (the list is partial)
    return cli.compose(
      async (composition) =>
        printTools(
          await toolRows(composition),
          Boolean(args.json),
          waitingJson(waitingInstances(composition)),
        ),
      { strict: true },
    )
  },
})

/** The dev's answer to `waiting`: the lines it prints, and the instances (cli/waiting). */
export interface LiveWaiting {
  lines: string[]
  waiting: ReturnType<typeof waitingJson>
}

function printTools(tools: ToolRow[], json: boolean, waiting: LiveWaiting['waiting']): number {
  if (json) {
    printJson({ ok: true, tools, ...(waiting.length && { waiting }) })
    return 0
  }
  if (!tools.length)
    process.stdout.write(color.dim('no tools: add a plugin that registers some to the preset\n'))
  const width = Math.max(...tools.map((t) => t.name.length), 4) + 2
  const sourceWidth = Math.max(...tools.map((t) => t.source.length), 12) + 2
  for (const t of tools) {
    const risk = t.risk === 'low' ? color.dim('low') : color.yellow(t.risk)
    process.stdout.write(
      `${t.name.padEnd(width)}${t.source.padEnd(sourceWidth)}${risk.padEnd(t.risk === 'low' ? 3 : 4)} ${color.dim([t.concurrency, t.owner, ...cellsOf(t)].join(' · '))}\n${t.description ? `  ${color.dim(t.description.split('\n')[0])}\n` : ''}`,
    )
  }
  return 0
}

/** The contributed cells of a row, in column order: what follows the owner on its line. */
function cellsOf(row: ToolRow): string[] {
  return Object.entries(row)
    .filter(([column, cell]) => !OWN_COLUMNS.has(column) && typeof cell === 'string' && cell)
    .map(([, cell]) => cell as string)
}

export const toolsCall = defineCommand({
  name: 'tools call',
  summary: 'one call through the full pipeline (approval asked on the terminal); exit 0 when ok',
  usage: 'yoke tools call NAME [--args JSON] [--fresh] [--json] [common flags]',
  flags: {
    args: {
      type: 'string',
      value: 'JSON',
      description: "the tool's arguments, a JSON object (default {})",
    },
    fresh: FRESH,
  },
  positionals: 1,
  examples: [
    `yoke tools call note_add --args '{"text":"hi"}'`,
    'yoke tools call mcp__workspace__list_files --json --fresh',
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
    const bridge = promptBridge()
    const abort = new AbortController()
    const onSigint = () => abort.abort()
    process.once('SIGINT', onSigint)
    try {
      let result: ToolResult | undefined
      if (!args.fresh) {
        try {
          result = (await cli.live(
            'tools-call',
            { name, args: toolArgs },
            {
              // the call runs in the dev; its approvals are this terminal's to answer
              onAsk: (question, withdrawn) => {
                const { call, reason } = question as { call: ToolCall; reason: string }
                // withdrawn: the browser (or another racer) answered first; the prompt says who
                const signal = AbortSignal.any([abort.signal, withdrawn])
                return bridge.ask({ call, reason, signal })
              },
              onTell: (note) => showProgress(note as ProgressEvent),
              signal: abort.signal,
              answerMs: Infinity, // the call is bounded by its own timeout in the dev
            },
          )) as ToolResult | undefined
        } catch (err) {
          if (abort.signal.aborted) return 130 // Ctrl-C: the dev cancelled the call
          throw err
        }
      }
      if (result) return printResult(result, Boolean(args.json), abort.signal.aborted)
      return await cli.compose(async (composition) => {
        // the terminal answers for this call (and the calls it makes): it travels with the call,
        // and stands as the bridge for what no call carries (a server's question about no call)
        const off = composition.runtime!.approvals.register(bridge)
        try {
          const done = await callTool(composition.runtime!, 'cli', name, toolArgs, {
            signal: abort.signal,
            asker: bridge,
          })
          return printResult(done, Boolean(args.json), abort.signal.aborted)
        } finally {
          off()
        }
      })
    } finally {
      process.off('SIGINT', onSigint)
      bridge.close()
    }
  },
})

let liveCalls = 0

/**
 * The dev's side of a `tools call` from another terminal: the call carries that terminal as its
 * asker, so its approvals go back there (and to no one else's), and its progress too.
 */
export async function liveCall(
  composition: Composition,
  request: Record<string, unknown>,
  session: ControlSession,
): Promise<ToolResult> {
  const asker: Asker = {
    name: 'yoke tools call',
    ask: async ({ call, reason, signal }) =>
      (await session.ask(
        { call: { name: call.name, args: call.args }, reason },
        signal,
      )) as ApprovalAnswer,
  }
  return callTool(
    composition.runtime!,
    `cli:live:${++liveCalls}`,
    String(request.name),
    request.args,
    {
      signal: session.signal,
      asker,
      onProgress: (e) => session.tell(e),
    },
  )
}

/** One call; a background task (spawnOnly) is waited for, and cancelled with the signal. */
async function callTool(
  rt: ToolRuntime,
  caller: string,
  name: string,
  args: unknown,
  options: { signal: AbortSignal; asker: Asker; onProgress?: (event: ProgressEvent) => void },
): Promise<ToolResult> {
  const { signal, onProgress = showProgress } = options
  const { hostTrack, runtimeView } = await import('../runtime/index.ts') // loaded by then: the composition uses it
  const view = runtimeView(rt, caller, hostTrack)
  const result = await view.call(name, args, { signal, onProgress, asker: options.asker })
  if (!result.task) return result
  // a one-shot command waits for a background task's end (Ctrl-C cancels it)
  onProgress({
    message: `${result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')}; waiting for it…`,
  })
  signal.addEventListener('abort', () => rt.tasks.cancel(result.task!), { once: true })
  return (await rt.tasks.wait(result.task))?.result ?? result
}

function showProgress(e: ProgressEvent) {
  progress(`  ${e.message ?? ''}${e.total ? ` ${e.progress}/${e.total}` : ''}`)
}

/** Prints the result; 0 ok, 1 not, 130 when Ctrl-C ended it (as a Unix tool stopped by SIGINT). */
function printResult(result: ToolResult, json: boolean, interrupted: boolean): number {
  if (json) printJson(result)
  else {
    const text = result.content.map(partText).join('\n')
    if (text) (result.ok ? process.stdout : process.stderr).write(text + '\n')
    process.stderr.write(
      color.dim(
        `${result.ok ? color.green('ok', process.stderr) : color.red(result.status, process.stderr)} · ${result.durationMs} ms${result.truncated ? ` · truncated, whole output in ${result.truncated.spilled}` : ''}`,
        process.stderr,
      ) + '\n',
    )
  }
  return interrupted ? 130 : result.ok ? 0 : 1
}
