// metrics-jsonl's file is read as configs are (a regular file, at most maxBytes) and checked line
// by line: a FIFO in its place is refused without blocking (commands run as real processes,
// bounded), a huge sparse file is over the cap and left alone, and a wrongly typed row costs its
// line alone, said with file:line. (Moved from test/state-files.test.ts, which keeps the trust store's.)
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readRows } from '../../../plugins/metrics-jsonl/index.ts'
import { createYoke } from '../../../src/index.ts'
import { runYoke, suiteProjects } from '../../helpers/project.ts'

const GiB = 1024 * 1024 * 1024
// a FIFO nobody writes to: a read that opens it blocks forever, so each command is bounded
const BOUND = 90_000
const fifo = (path: string) => {
  mkdirSync(join(path, '..'), { recursive: true })
  execFileSync('mkfifo', [path])
}
const sparse = (path: string, size: number) => {
  mkdirSync(join(path, '..'), { recursive: true })
  writeFileSync(path, '')
  truncateSync(path, size) // no block is written: the file reads as zeros
}
const row = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  hash: 'sha256:0123456789ab',
  source: 'native',
  offered: 1,
  found: 0,
  called: 2,
  ok: 2,
  errors: {},
  firstAt: '2026-01-01T00:00:00Z',
  lastAt: '2026-01-01T00:00:01Z',
  latencies: [5, 7],
  ...extra,
})

describe('the metrics file is read as a checked state file', () => {
  const made = suiteProjects()
  const project = () => made({ 'yoke.config.yaml': 'preset: default\nplugins: {}\n' })

  it('a FIFO: yoke stats finishes, says the file is not read, and leaves it alone', async () => {
    const p = project()
    fifo(p.path('.yoke/metrics.jsonl'))
    const r = await runYoke(['stats', '--json', '--log-level', 'warn'], {
      cwd: p.dir,
      home: p.home,
      timeoutMs: BOUND,
    })
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /metrics\.jsonl: it is not a regular file \(a FIFO\); it is not read/)
    assert.ok(statSync(p.path('.yoke/metrics.jsonl')).isFIFO())
  })

  it('a 3 GiB sparse file is over the cap: not read, not compacted, said; the composition runs', async () => {
    const p = project()
    const file = p.path('.yoke/metrics.jsonl')
    sparse(file, 3 * GiB)
    const logs: string[] = []
    const yoke = createYoke({
      cwd: p.dir,
      home: p.home,
      env: { ...process.env, YOKE_TRUST: '1' },
      onLog: (r) => void logs.push(`${r.level} ${r.message}`),
    })
    try {
      await yoke.ready
      assert.match(
        logs.join('\n'),
        /warn .*metrics\.jsonl: it is 3072 MiB, over the 64 MiB yoke reads/,
      )
      assert.match(logs.join('\n'), /metrics are kept in memory only/)
      assert.equal(statSync(file).size, 3 * GiB, 'not compacted, not appended to')
    } finally {
      await yoke.close()
    }
  })

  it('wrongly typed rows cost their line alone, named by file:line; the good rows sum', () => {
    const p = project()
    const file = p.write(
      '.yoke/metrics.jsonl',
      [
        JSON.stringify({ row: row('a') }),
        JSON.stringify({ add: row('a', { ok: '1' }) }), // would concatenate: "2" + "1"
        JSON.stringify({ add: row('a', { errors: null }) }),
        JSON.stringify({ add: row('a', { latencies: 'fast' }) }),
        JSON.stringify({ add: row('b', { offered: -3 }) }),
        JSON.stringify({ neither: true }),
        JSON.stringify({ add: row('a') }),
      ].join('\n') + '\n',
    )
    const problems: string[] = []
    const rows = readRows(file, (x) => problems.push(x))
    assert.deepEqual(
      rows.map((r) => [r.id, r.offered, r.called, r.ok]),
      [['a', 2, 4, 4]],
    )
    assert.deepEqual(
      problems.map((x) => /:(\d+): /.exec(x.slice(file.length))?.[1]),
      ['2', '3', '4', '5', '6'],
    )
    assert.match(problems[0]!, /:2: add\.ok: .*; that line is skipped/)
  })
})
