/**
 * Reading agent-run transcripts for the Runs view, bounded: a run's row comes from its first line
 * (`start`) and its last (`end`), read from the file's two ends (a transcript can be huge); one
 * run's steps from at most `maxBytes` of it, every unreadable line named `file:line`. And the
 * comparison of two runs' steps: where a replay or fork first does something else.
 */
import { closeSync, openSync, readSync, statSync, type Stats } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import type { ChatMessage } from '../models/api.ts'
import type { Departure, RunDetail, RunRow, RunStep } from './protocol.ts'

/** A transcript line: `{ type, at, … }` (plugins/agent-loop/transcript.ts). */
export type Record_ = Record<string, unknown> & { type: string; at?: number; turn?: number }

/** How much of each end of a file a row reads. */
const EDGE = 256 * 1024
/** A step's text beyond this is cut (the transcript keeps it whole). */
const STEP_TEXT = 4000

/** A run id is a file name in the runs folder and nothing else. */
export const validRunId = (id: string) => /^[\w][\w.-]{0,127}$/.test(id) && !id.includes('..')

export const transcriptOf = (dir: string, id: string) => join(dir, `${id}.jsonl`)

function readRange(file: string, start: number, length: number): string {
  const fd = openSync(file, 'r')
  try {
    const buffer = Buffer.alloc(length)
    const n = readSync(fd, buffer, 0, length, start)
    return buffer.subarray(0, n).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

const parse = (line: string): Record_ | undefined => {
  try {
    const value = JSON.parse(line)
    return value && typeof value === 'object' && typeof value.type === 'string' ? value : undefined
  } catch {
    return undefined
  }
}

/** One run's row from its transcript's two ends. */
export function runRow(dir: string, id: string, stat: Stats, projectDir: string): RunRow {
  const file = transcriptOf(dir, id)
  const row: RunRow = { id, status: 'unfinished', bytes: stat.size }
  try {
    const head = readRange(file, 0, Math.min(EDGE, stat.size))
    const start = parse(head.split('\n', 1)[0]!)
    const tailFrom = Math.max(0, stat.size - EDGE)
    const tail = tailFrom ? readRange(file, tailFrom, stat.size - tailFrom) : head
    const end = tail
      .split('\n')
      .reverse()
      .map((l) => (l.startsWith('{"type":"end"') ? parse(l) : undefined))
      .find(Boolean)
    if (start?.type === 'start') fillStart(row, start, projectDir)
    else row.problem = `${file}:1: not a transcript's start line`
    if (end) fillEnd(row, end)
  } catch (err) {
    row.problem = `${file}: ${(err as Error).message}`
  }
  return row
}

function fillStart(row: RunRow, start: Record_, projectDir: string) {
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined)
  Object.assign(row, {
    ...(str(start.task) !== undefined && { task: str(start.task) }),
    ...(str(start.provider) && { provider: str(start.provider) }),
    ...(str(start.model) && { model: str(start.model) }),
    ...(str(start.lane) && { lane: str(start.lane) }),
    ...(typeof start.at === 'number' && { at: start.at }),
    ...(typeof start.origin === 'object' &&
      start.origin !== null && { origin: start.origin as RunRow['origin'] }),
  })
  const history = typeof start.history === 'number' ? start.history : 0
  const record = str(start.record)
  if (history) {
    const why = `it went on from a conversation of ${history} earlier message(s) (a chat) that its transcript does not hold`
    row.noReplay = row.noFork = why
  } else if (!record)
    row.noReplay =
      row.lane && row.lane !== 'main'
        ? `no recording of its own: a subagent's exchanges are in its parent run's cassette (replay the parent)`
        : 'no recording to replay: run it with `yoke run --record FILE "TASK"` to keep its model exchanges'
  else {
    const cassette = isAbsolute(record) ? record : resolve(projectDir, record)
    row.cassette = cassette
    if (!statSync(cassette, { throwIfNoEntry: false })?.isFile())
      row.noReplay = `no recording to replay: its cassette ${cassette} is gone; record the run again with \`yoke run --record FILE\``
  }
}

function fillEnd(row: RunRow, end: Record_) {
  row.status = typeof end.status === 'string' ? end.status : 'ended'
  if (typeof end.reason === 'string') row.reason = end.reason
  if (typeof end.turns === 'number') row.turns = end.turns
  if (typeof end.durationMs === 'number') row.durationMs = end.durationMs
}

/** A transcript's records from at most `maxBytes` of it; each unreadable line is a problem. */
export function readRecords(
  file: string,
  maxBytes: number,
): { records: Record_[]; problems: string[]; truncated?: string } {
  const size = statSync(file).size
  const text = readRange(file, 0, Math.min(size, maxBytes))
  const lines = text.split('\n')
  let truncated: string | undefined
  if (size > maxBytes) {
    lines.pop() // cut at the limit, mid-line
    truncated = `the transcript is ${size} bytes; the console reads its first ${maxBytes} (console config maxRunBytes): \`yoke runs show ID\` prints it all`
  }
  const records: Record_[] = []
  const problems: string[] = []
  lines.forEach((line, i) => {
    if (!line.trim()) return
    const record = parse(line)
    if (record) records.push(record)
    else
      problems.push(
        `${file}:${i + 1}: ${i === lines.length - 1 ? 'cut short (the run was stopped while writing it)' : 'not a transcript line (not JSON, or no type)'}`,
      )
  })
  return { records, problems, ...(truncated && { truncated }) }
}

const cut = (text: string): Pick<RunStep, 'text' | 'cut'> =>
  text.length > STEP_TEXT
    ? { text: text.slice(0, STEP_TEXT), cut: text.length - STEP_TEXT }
    : { text }

/** The steps a view shows: user messages, the model's text, tool calls and results, notes. */
export function stepsOf(records: Record_[]): RunStep[] {
  const steps: RunStep[] = []
  let last = 0
  for (const r of records) {
    // the lines with no turn (end, task-done) belong to the turn before them
    const turn = (last = typeof r.turn === 'number' ? r.turn : last)
    if (r.type === 'message') {
      const m = r.message as ChatMessage | undefined
      if (m?.role === 'user') steps.push({ turn, kind: 'user', ...cut(String(m.content)) })
      else if (m?.role === 'assistant' && m.content)
        steps.push({ turn, kind: 'text', ...cut(String(m.content)) })
      else if (m?.role === 'assistant' && turn === 0)
        for (const c of m.toolCalls ?? [])
          steps.push({ turn, kind: 'tool-call', name: c.name, args: c.args })
      else if (m?.role === 'tool' && turn === 0)
        steps.push({ turn, kind: 'tool-result', name: m.name, ok: !m.isError, ...cut(m.content) })
    } else if (r.type === 'tool-call')
      steps.push({ turn, kind: 'tool-call', name: String(r.name), args: r.args })
    else if (r.type === 'tool-result')
      steps.push({
        turn,
        kind: 'tool-result',
        name: String(r.name),
        status: String(r.status),
        ok: r.ok === true,
        ...(typeof r.durationMs === 'number' && { durationMs: r.durationMs }),
        ...cut(String(r.text ?? '')),
      })
    else if (r.type === 'task-done')
      steps.push({ turn, kind: 'note', text: `background task ${r.task} (${r.tool}) ${r.status}` })
    else if (r.type === 'end')
      steps.push({
        turn,
        kind: 'note',
        text: `${r.status}${r.reason ? `: ${r.reason}` : ''}`,
        status: String(r.status),
      })
  }
  return steps
}

/** The conversation before turn `turn`'s model request: what a fork at that step goes on from. */
export function messagesBefore(records: Record_[], turn: number): ChatMessage[] {
  return records
    .filter((r) => r.type === 'message' && typeof r.turn === 'number' && r.turn < turn)
    .map((r) => r.message as ChatMessage)
}

export function detail(row: RunRow, file: string, maxBytes: number): RunDetail {
  const { records, problems, truncated } = readRecords(file, maxBytes)
  return { run: row, file, steps: stepsOf(records), problems, ...(truncated && { truncated }) }
}

/** What is compared of a step: its kind and content, not its ids or timings. */
const essence = (s: RunStep) =>
  s.kind === 'tool-call'
    ? { kind: s.kind, name: s.name, args: s.args }
    : s.kind === 'tool-result'
      ? { kind: s.kind, name: s.name, status: s.status, text: s.text }
      : { kind: s.kind, text: s.text }

const what = (s: RunStep | undefined) =>
  !s
    ? 'end'
    : s.kind === 'tool-call'
      ? `tool call ${s.name}`
      : s.kind === 'tool-result'
        ? `tool result ${s.name}`
        : s.kind === 'note'
          ? 'end'
          : s.kind

/**
 * Where `now` first departs from `old` (both from the step they share a start at), with the
 * difference as replay words it; undefined when they did the same.
 */
export function departure(
  old: RunStep[],
  now: RunStep[],
  differ: (a: unknown, b: unknown, path: string) => string | undefined,
): Departure | undefined {
  for (let i = 0; i < Math.max(old.length, now.length); i++) {
    const a = old[i]
    const b = now[i]
    const difference =
      a && b
        ? differ(essence(a), essence(b), what(a))
        : `${a ? `the old run went on (${what(a)})` : 'the old run ended here'}, ${b ? `the new one went on (${what(b)})` : 'the new one ended here'}`
    if (difference)
      return {
        index: i,
        ...(a && { oldTurn: a.turn }),
        ...(b && { newTurn: b.turn }),
        what: what(a ?? b),
        difference,
      }
  }
  return undefined
}
