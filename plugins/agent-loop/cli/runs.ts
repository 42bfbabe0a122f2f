/**
 * @module agent-loop/cli/runs
 * `yoke runs list` and `yoke runs show ID`: the transcripts agent runs leave under the project's
 * `.yoke/runs/` (JSON lines: start, turn, model, message, tool-call, tool-result, task-done, end).
 * A transcript without an `end` line is a run that is still going, or one that was killed.
 */
import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  defineCommand,
  messageOf,
  on,
  printJson,
  YokeError,
  type CommandContext,
  type Flag,
  type ParsedArgs,
} from 'yoke/cli'
import '../errors.ts'

type TranscriptRecord = Record<string, unknown> & { type: string; at: number }

const RUNS_DIR_FLAG: Flag = {
  type: 'string',
  value: 'DIR',
  description: 'where the transcripts are (default: .yoke/runs in the project)',
}

async function runsDir(args: ParsedArgs, cli: CommandContext): Promise<string> {
  if (args.dir) return resolve(cli.cwd, args.dir as string)
  return join(await cli.projectDir(), '.yoke', 'runs')
}

const MAX_TRANSCRIPT = 64 * 1024 * 1024

/** The records of one transcript; a torn last line (a killed run) is left out. Only regular files are read. */
function readTranscript(file: string): TranscriptRecord[] {
  const stat = lstatSync(file)
  if (!stat.isFile()) throw new Error('not a regular file')
  if (stat.size > MAX_TRANSCRIPT) throw new Error(`over ${MAX_TRANSCRIPT} bytes`)
  const records: TranscriptRecord[] = []
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue
    try {
      records.push(JSON.parse(line))
    } catch {
      // the line a crash cut short
    }
  }
  return records
}

function summarize(id: string, records: TranscriptRecord[]) {
  const start: Partial<TranscriptRecord> = records.find((r) => r.type === 'start') ?? {}
  const end = records.findLast((r) => r.type === 'end')
  return {
    id,
    task: start.task as string | undefined,
    model: start.model as string | undefined,
    startedAt: typeof start.at === 'number' ? new Date(start.at).toISOString() : undefined,
    status: (end?.status as string | undefined) ?? 'unfinished',
    turns: end?.turns as number | undefined,
    tools: records.filter((r) => r.type === 'tool-call').length,
    usage: end?.usage,
    durationMs: end?.durationMs as number | undefined,
  }
}

/** A transcript holds model and tool output: its control characters are shown escaped, never sent to the terminal. */
function printable<T>(value: T): T {
  if (typeof value === 'string')
    return value.replace(
      // eslint-disable-next-line no-control-regex -- these are the characters being escaped
      /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g,
      (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`,
    ) as T
  if (Array.isArray(value)) return value.map(printable) as T
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, printable(v)])) as T
  return value
}

export const runsList = defineCommand({
  name: 'runs list',
  summary: 'agent runs recorded in the project (newest first): task, status, turns, tools',
  usage: 'yoke runs list [--dir DIR] [--json] [common flags]',
  examples: ['yoke runs list', 'yoke runs list --json --dir ./.yoke/runs'],
  flags: { dir: RUNS_DIR_FLAG },
  async run(args, _, cli) {
    const dir = await runsDir(args, cli)
    let files: string[] = []
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'))
    } catch {
      // no runs yet
    }
    const runs = files
      .sort()
      .reverse()
      .map((f) => {
        const id = f.slice(0, -'.jsonl'.length)
        try {
          return summarize(id, readTranscript(join(dir, f)))
        } catch (err) {
          return { ...summarize(id, []), status: `unreadable (${messageOf(err)})` }
        }
      })
    if (args.json) printJson({ ok: true, dir, runs })
    else if (!runs.length)
      process.stdout.write(`no runs in ${dir} yet: \`yoke run "TASK"\` records one\n`)
    else {
      const c = on(process.stdout)
      for (const r of runs) {
        const status =
          r.status === 'done'
            ? c.green(r.status)
            : r.status === 'unfinished'
              ? c.yellow(r.status)
              : c.red(r.status)
        const task = (r.task ?? '').replace(/\s+/g, ' ')
        process.stdout.write(
          `${r.id}  ${status.padEnd(10)} ${c.dim(`${r.turns ?? '?'} turn(s), ${r.tools} tool call(s)`)}  ${printable(task.length > 70 ? task.slice(0, 70) + '…' : task)}\n`,
        )
      }
    }
    return 0
  },
})

export const runsShow = defineCommand({
  name: 'runs show',
  summary: 'one run: the conversation, each tool call and result, timings and usage',
  usage: 'yoke runs show ID [--dir DIR] [--json] [common flags]',
  examples: ['yoke runs show 2026-12-01T10-00-00-abc123', 'yoke runs show <id> --json'],
  flags: { dir: RUNS_DIR_FLAG },
  positionals: 1,
  async run(args, positionals, cli) {
    const [id] = positionals
    if (!id)
      throw new YokeError('USAGE', {
        reason: 'yoke runs show needs a run id (`yoke runs list` shows them)',
      })
    const dir = await runsDir(args, cli)
    const file = join(dir, `${id}.jsonl`)
    if (!/^[\w.-]+$/.test(id) || !statSync(file, { throwIfNoEntry: false })?.isFile())
      throw new YokeError('RUN_NOT_FOUND', { id, dir })
    let records: TranscriptRecord[]
    try {
      records = readTranscript(file)
    } catch (err) {
      throw new YokeError('RUN_NOT_FOUND', { id: `${id} (${messageOf(err)})`, dir })
    }
    if (args.json) {
      printJson({ ok: true, ...summarize(id, records), records })
      return 0
    }
    const c = on(process.stdout)
    const out = (line: string) => process.stdout.write(line + '\n')
    for (const r of records.map(printable)) {
      if (r.type === 'start')
        out(
          `${c.bold(`run ${id}`)} ${c.dim(`${r.provider} ${r.model} · lane ${r.lane} · scope ${r.scope}`)}`,
        )
      else if (r.type === 'turn') out(c.dim(`— turn ${r.turn} (${r.tools} tools offered)`))
      else if (r.type === 'message') {
        const m = r.message as { role: string; content: string; toolCalls?: unknown[] }
        if (m.role === 'user') out(`${c.cyan('user')} ${m.content}`)
        else if (m.role === 'assistant' && m.content) out(`${c.green('assistant')} ${m.content}`)
      } else if (r.type === 'model')
        out(c.dim(`  model ${r.latencyMs} ms, ${JSON.stringify(r.usage)}, ${r.stopReason}`))
      else if (r.type === 'tool-call')
        out(
          `  ${c.cyan('→')} ${r.name} ${c.dim(JSON.stringify(r.args))}${r.tool ? c.dim(` [${(r.tool as { source: string; hash: string }).source} ${(r.tool as { hash: string }).hash}]`) : ''}`,
        )
      else if (r.type === 'tool-result')
        out(
          `  ${r.ok ? c.green('✓') : c.red('✗')} ${r.name} ${r.ok ? '' : `${r.status} `}${c.dim(`${r.durationMs} ms`)}`,
        )
      else if (r.type === 'task-done')
        out(c.dim(`  background task ${r.task} (${r.tool}) ${r.status}`))
      else if (r.type === 'end')
        out(
          `${r.status === 'done' ? c.green('done') : c.red(String(r.status))}${r.reason ? `: ${r.reason}` : ''} ${c.dim(`${r.turns} turn(s), ${r.durationMs} ms, ${JSON.stringify(r.usage)}`)}`,
        )
    }
    if (!records.some((r) => r.type === 'end'))
      out(c.yellow('unfinished: the run is still going, or it was killed'))
    return 0
  },
})
