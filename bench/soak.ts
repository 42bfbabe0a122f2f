/**
 * npm run soak: the soak and fault suite (issue 14, item 14). Not part of `npm test`: it takes a
 * few minutes and loads the machine. Loopback only: every peer is a local process or file.
 *
 *   1. reload storm       1,000 calls in flight across 50 reloads of the tool's instance
 *   2. kill -9 loop       stdio MCP servers (the test fixture and server-everything) killed over
 *                         and over with calls in flight; the client reconnects; no process left
 *   3. floods             executables and MCP servers that write far past the output caps
 *   4. hostile files      the config, the user patch and a plugin module replaced by a FIFO, a
 *                         1 GiB file, /dev/zero, broken YAML, an alias bomb, binary bytes: each
 *                         reload rejected, cheaply, and the running generation serving
 *   5. crash under dev    `yoke dev` with a plugin that throws from a timer and leaves a stray
 *                         rejection: dev stays up, the healthy tool answers, SIGTERM exits 0
 *   6. cluster            (by name: `npm run soak -- cluster`) three `yoke serve` replicas behind
 *                         HAProxy sharing a redis-server: throughput through 1, 2 and 3; then
 *                         echo, tasks, approvals and 2025-era sessions under SIGKILLs, a drain and
 *                         a Redis restart (SOAK_CLUSTER_MS, default 60 s); skipped, saying which,
 *                         without haproxy or redis-server
 *
 * One line per scenario (calls made, ok, each error status, lost, duplicated, hung, orphans), then
 * a total; the exit code is 1 on any lost, duplicated or hung call, any orphan process, or a
 * scenario's own failed expectation (listed under its line). Each scenario has its own deadline and
 * the whole run a watchdog (4 minutes; it takes about one). Anything that escapes yoke into this
 * process (an unhandled rejection, an uncaught exception) fails the scenario it happened in.
 * `node --import tsx bench/soak.ts [storm|kill|flood|hostile|dev …]` runs some of them;
 * SOAK_VERBOSE=1 prints each hostile file's rejection.
 */
import { cluster } from './soak/cluster.ts'
import { crash } from './soak/dev.ts'
import { flood } from './soak/flood.ts'
import { hostile } from './soak/hostile.ts'
import { kill } from './soak/kill.ts'
import { storm } from './soak/storm.ts'
import { children, reap, type Report } from './soak/track.ts'

const SCENARIOS: Record<
  string,
  { run: (deadlineMs: number) => Promise<Report>; ms: number; byName?: true }
> = {
  storm: { run: storm, ms: 60_000 },
  kill: { run: kill, ms: 75_000 },
  flood: { run: flood, ms: 60_000 },
  hostile: { run: hostile, ms: 45_000 },
  dev: { run: crash, ms: 60_000 },
  // minutes, and HAProxy: run by name only (`npm run soak -- cluster`)
  cluster: {
    run: cluster,
    ms: 180_000 + Number(process.env.SOAK_CLUSTER_MS ?? 60_000),
    byName: true,
  },
}

const picked = process.argv.slice(2).length
  ? process.argv.slice(2)
  : Object.keys(SCENARIOS).filter((name) => !SCENARIOS[name]!.byName)
for (const name of picked)
  if (!SCENARIOS[name]) {
    console.error(`unknown scenario "${name}"; the scenarios: ${Object.keys(SCENARIOS).join(', ')}`)
    process.exit(2)
  }

// anything that escapes yoke into this process is a finding: yoke must keep its faults inside
const strays: string[] = []
process.on('unhandledRejection', (err) => void strays.push(`unhandled rejection: ${describe(err)}`))
process.on('uncaughtException', (err) => void strays.push(`uncaught exception: ${describe(err)}`))
function describe(err: unknown) {
  return (err as Error)?.stack?.split('\n').slice(0, 3).join(' | ') ?? String(err)
}

const WATCHDOG_MS = Math.max(
  240_000,
  picked.reduce((ms, name) => ms + (SCENARIOS[name]?.ms ?? 0), 60_000),
)
const watchdog = setTimeout(() => {
  console.log(`soak: the whole run passed its ${WATCHDOG_MS / 1000} s watchdog; failing`)
  reap(children().map((c) => c.pid))
  process.exit(1)
}, WATCHDOG_MS)
watchdog.unref()

console.log(`soak: node ${process.version}, ${new Date().toISOString()}, pid ${process.pid}`)
const reports: Report[] = []
for (const name of picked) {
  const { run, ms } = SCENARIOS[name]!
  const before = strays.length
  let report: Report
  try {
    report = await run(ms)
  } catch (err) {
    report = {
      name,
      made: 0,
      statuses: new Map(),
      lost: 0,
      duplicated: 0,
      hung: 0,
      orphans: [],
      problems: [`the scenario threw: ${describe(err)}`],
      notes: [],
      ms: 0,
    }
  }
  for (const stray of strays.slice(before)) report.problems.push(stray)
  // a scenario's leftovers must not spoil the next one's orphan check
  const left = children()
  if (left.length) {
    report.problems.push(`left children: ${left.map((c) => `${c.pid} ${c.command}`).join('; ')}`)
    for (const c of left) if (!report.orphans.includes(c.pid)) report.orphans.push(c.pid)
    reap(left.map((c) => c.pid))
  }
  reports.push(report)
  print(report)
}

const total: Report = {
  name: 'TOTAL',
  made: 0,
  statuses: new Map(),
  lost: 0,
  duplicated: 0,
  hung: 0,
  orphans: [],
  problems: [],
  notes: [],
  ms: 0,
}
for (const r of reports) {
  total.made += r.made
  total.lost += r.lost
  total.duplicated += r.duplicated
  total.hung += r.hung
  total.orphans.push(...r.orphans)
  total.ms += r.ms
  for (const [status, n] of r.statuses)
    total.statuses.set(status, (total.statuses.get(status) ?? 0) + n)
}
const failed = reports.filter(failing)
total.notes.push(
  failed.length ? `FAILED: ${failed.map((r) => r.name).join(', ')}` : 'every scenario passed',
)
print(total, false)
process.exit(failed.length ? 1 : 0)

function failing(r: Report) {
  return (
    r.lost > 0 || r.duplicated > 0 || r.hung > 0 || r.orphans.length > 0 || r.problems.length > 0
  )
}

function print(r: Report, withProblems = true) {
  const ok = r.statuses.get('ok') ?? 0
  const errors = [...r.statuses]
    .filter(([status]) => status !== 'ok')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${status} ${n}`)
  const verdict =
    r.name === 'TOTAL' ? (failed.length ? 'FAIL' : 'PASS') : failing(r) ? 'FAIL' : 'ok'
  console.log(
    [
      `${verdict.padEnd(4)} ${r.name.padEnd(16)}`,
      `calls ${r.made}`,
      `ok ${ok}`,
      errors.length ? errors.join(' ') : 'no errors',
      `lost ${r.lost}`,
      `duplicated ${r.duplicated}`,
      `hung ${r.hung}`,
      `orphans ${r.orphans.length}`,
      ...r.notes,
      `${(r.ms / 1000).toFixed(1)} s`,
    ].join(' | '),
  )
  if (withProblems) for (const p of r.problems) console.log(`       ! ${p}`)
}
