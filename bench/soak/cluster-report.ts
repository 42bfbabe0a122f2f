/**
 * The cluster soak's table: one row per kind of work (made, answered, the expected task failures
 * by replica, failed, crossed, duplicated, lost, hung, retries), the errors its clients retried,
 * and one Report for soak.ts whose problems are every unexpected count.
 *
 *   failed      failed after retries, or a task that ended otherwise than completed or failed by
 *               a SIGKILL of its replica
 *   crossed     an answer naming another call, or an approved tool that ran on an answer its
 *               client gave another question (the tools' log)
 *   duplicated  a unit answered twice, or a label (with its attempt) run twice by the tools
 *   hung        a unit over its 30 s bound, or a task still not ended when its client gave up
 */
import type { Work } from './cluster-work.ts'
import type { Report, Tracker } from './track.ts'

export type Kinds = Record<string, Work>

const KIND_OF: Record<string, string> = { e: 'echo', t: 'task', a: 'approval', l: 'legacy' }

/** Labels run more than once, and denied labels that ran, from the tools' log. */
function readRuns(runs: string, kinds: Kinds) {
  const seen = new Map<string, string[]>()
  for (const line of runs.split('\n')) {
    const [label, replica] = line.split(' ')
    if (!label || !replica) continue
    seen.set(label, [...(seen.get(label) ?? []), replica])
  }
  const twice = new Map<string, number>()
  for (const [label, where] of seen) {
    const work = kinds[KIND_OF[label[0]!] ?? '']
    if (!work) continue
    if (where.length > 1) {
      twice.set(work.kind, (twice.get(work.kind) ?? 0) + 1)
      work.tracker.problem(`${label} ran ${where.length} times (on ${where.join(', ')})`)
    }
    // an approved tool runs only on its own allow: a run on another answer is a crossed answer
    if ((work.kind === 'approval' || work.kind === 'legacy') && !work.allowed.has(label)) {
      work.crossings++
      work.tracker.problem(
        `${label} ran on ${where[0]} though ${work.denied.has(label) ? 'its client denied it' : 'its client never allowed it (its question was not answered)'}`,
      )
    }
  }
  return { twice, runs: seen.size }
}

const count = (statuses: Map<string, number>, pick: (status: string) => boolean) =>
  [...statuses].filter(([s]) => pick(s)).reduce((n, [, k]) => n + k, 0)

/** The soak's Report; prints the table. */
export function report(t: Tracker, kinds: Kinds | undefined, runs: string): Report {
  const base = t.report()
  if (!kinds) return base
  const { twice, runs: distinct } = readRuns(runs, kinds)
  const rows = [
    [
      'kind',
      'made',
      'answered',
      'expected',
      'failed',
      'crossed',
      'duplicated',
      'lost',
      'hung',
      'retries',
    ],
  ]
  const statuses = new Map<string, number>()
  let made = 0
  let lost = 0
  let duplicated = 0
  let hung = 0
  const problems = [...base.problems]
  for (const work of Object.values(kinds)) {
    const r = work.tracker.report()
    const s = r.statuses
    const expected = [...work.expected].map(([replica, n]) => `${n} (${replica})`).join(' ')
    const failed = count(s, (x) => x === 'FAILED' || x.startsWith('UNEXPECTED') || x === 'REJECTED')
    const unended = s.get('UNENDED') ?? 0
    const dup = r.duplicated + (twice.get(work.kind) ?? 0)
    rows.push(
      [
        work.kind,
        r.made,
        s.get('ok') ?? 0,
        expected || 0,
        failed,
        work.crossings,
        dup,
        r.lost,
        r.hung + unended,
        work.retries,
      ].map(String),
    )
    made += r.made
    lost += r.lost
    duplicated += dup
    hung += r.hung + unended
    for (const [status, n] of s) {
      const key = status === 'ok' ? 'ok' : `${work.kind}:${status}`
      statuses.set(key, (statuses.get(key) ?? 0) + n)
    }
    problems.push(...r.problems.map((p) => `[${work.kind}] ${p}`))
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)))
  console.log(
    '       cluster, per kind of work (expected: tasks failed naming a SIGKILLed replica)',
  )
  for (const row of rows)
    console.log(`       ${row.map((v, c) => v.padStart(widths[c]!)).join('  ')}`)
  for (const work of Object.values(kinds)) {
    const late = work.late ? `; ${work.late} late questions for calls given up on` : ''
    const errors = [...work.errors]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([e, n]) => `${n}× ${e}`)
    if (errors.length || late)
      console.log(`       ${work.kind} retried: ${errors.join(' | ')}${late}`)
  }
  return {
    ...base,
    made,
    statuses,
    lost,
    duplicated,
    hung,
    problems,
    notes: [...base.notes, `${distinct} runs logged by the tools`],
  }
}
