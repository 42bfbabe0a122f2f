// The state files yoke reads back are read as configs are (a regular file, a size cap) and checked
// entry by entry: the capabilities audit log, metrics-jsonl's file and the trust store. A FIFO in
// their place is refused without blocking (commands run as real processes, bounded), a huge sparse
// file is refused or read by its tail, and a wrongly typed entry costs that entry alone, said with
// file:line. And the trust store keeps a project trusted through six config edits at once.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readAudit } from '../plugins/capabilities/audit.ts'
import { readRows } from '../plugins/metrics-jsonl/index.ts'
import { createYoke } from '../src/index.ts'
import { projectTrust, readTrust, recordTrust, trustState } from '../src/config/trust.ts'
import { runYoke, suiteProjects, type Project } from './helpers/project.ts'

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
const audit = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ at: '2026-01-01T00:00:00Z', who: 'withdraw', id, from: '1', to: null, ...extra })
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

describe('the audit log is read as a checked state file', () => {
  const made = suiteProjects()
  const project = () => made({ 'yoke.config.yaml': 'preset: base\nplugins: {}\n' })
  const yoke = (p: Project, ...args: string[]) =>
    runYoke(args, { cwd: p.dir, home: p.home, timeoutMs: BOUND })

  it('a FIFO: yoke audit and yoke withdraw finish, and say what they could not do', async () => {
    const p = project()
    fifo(p.path('.yoke/audit.jsonl'))
    const listed = await yoke(p, 'audit')
    assert.equal(listed.code, 0, listed.stderr)
    assert.match(listed.stderr, /audit\.jsonl: it is not a regular file \(a FIFO\); it is not read/)
    const withdrew = await yoke(p, 'withdraw', 'x@1', '--why', 'no')
    assert.equal(withdrew.code, 0, withdrew.stderr)
    assert.match(
      withdrew.stderr,
      /warning: the audit log misses this change: .*audit\.jsonl: it is not a regular file \(a FIFO\)/,
    )
    assert.match(
      readFileSync(p.path('yoke.config.yaml'), 'utf8'),
      /id: x/,
      'the withdrawal is made',
    )
  })

  it('wrongly typed and foreign lines cost themselves alone, named by file:line', async () => {
    const p = project()
    p.write(
      '.yoke/audit.jsonl',
      [
        audit('a'),
        audit('b', { at: 5 }),
        'not json',
        audit('c', { to: { nested: true } }),
        JSON.stringify({ id: 'd' }),
        audit('e'),
      ].join('\n') + '\n',
    )
    const problems: string[] = []
    assert.deepEqual(
      readAudit(p.path('.yoke/audit.jsonl'), (x) => problems.push(x)).map((e) => e.id),
      ['a', 'e'],
    )
    const file = p.path('.yoke/audit.jsonl')
    assert.deepEqual(
      problems.map((x) => x.slice(0, x.indexOf(':', file.length + 1))),
      [`${file}:2`, `${file}:3`, `${file}:4`, `${file}:5`],
    )
    assert.match(problems[0]!, /:2: at: .*; that line is skipped/)
    const listed = await yoke(p, 'audit', '--json')
    assert.equal(listed.code, 0, listed.stderr)
    assert.deepEqual(
      (JSON.parse(listed.stdout).entries as Array<{ id: string }>).map((e) => e.id),
      ['a', 'e'],
    )
    assert.match(listed.stderr, /warning: .*audit\.jsonl:3: not JSON/)
  })

  it('a 3 GiB sparse log is read by its last 8 MiB: its whole lines count, the rest is said', async () => {
    const p = project()
    const file = p.path('.yoke/audit.jsonl')
    sparse(file, 3 * GiB)
    const problems: string[] = []
    assert.deepEqual(
      readAudit(file, (x) => problems.push(x)),
      [],
    )
    assert.match(
      problems.join('\n'),
      /its last 8\.00 MiB hold no whole line|its last 8 MiB hold no whole line/,
    )
    appendFileSync(file, '\n' + audit('late') + '\n')
    assert.deepEqual(
      readAudit(file).map((e) => e.id),
      ['late'],
    )
  })
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

describe('the trust store: entries checked one by one, edits keep trust', () => {
  const made = suiteProjects()
  // test/run.js sets YOKE_TRUST=1; these answers come from the store alone
  const where = (p: Project) => ({ home: p.home, env: { YOKE_TRUST: '' } })
  const store = (p: Project) => join(p.home, 'trust.json')

  it("another project's bad entry leaves this one trusted; this one's bad entry costs it alone", async () => {
    const p = made({ 'yoke.config.yaml': 'preset: base\nplugins: {}\n' })
    const own = { dir: p.dir, files: [p.path('yoke.config.yaml')] }
    await recordTrust(own, true, where(p))
    const written = JSON.parse(readFileSync(store(p), 'utf8'))
    written.projects['/elsewhere'] = { trusted: 'yes', at: 5, files: null }
    writeFileSync(store(p), JSON.stringify(written, null, 2))
    const state = trustState(own, where(p))
    assert.equal(state.state, 'trusted')
    assert.equal(state.problems.length, 1)
    assert.match(
      state.problems[0]!,
      /trust\.json:\d+: the entry for \/elsewhere is not a trust record \(trusted: /,
    )

    // this project's own entry broken: it alone counts as never answered, and says why
    const key = Object.keys(written.projects).find((k) => k !== '/elsewhere')!
    written.projects[key].files = null
    writeFileSync(store(p), JSON.stringify(written, null, 2))
    assert.equal(trustState(own, where(p)).state, 'new')
    assert.match(
      String(projectTrust(own, where(p))),
      /the trust store's entry for the project is not valid \(.*trust\.json:\d+: the entry for .* is not a trust record \(files: /,
    )
    // trusting again replaces it; the other bad entry is written back as it was
    await recordTrust(own, true, where(p))
    assert.equal(trustState(own, where(p)).state, 'trusted')
    assert.deepEqual(JSON.parse(readFileSync(store(p), 'utf8')).projects['/elsewhere'], {
      trusted: 'yes',
      at: 5,
      files: null,
    })
    assert.equal(readTrust(where(p)).invalid.size, 1)
  })

  it('a FIFO or a huge sparse store is refused by the reader, named, without blocking', () => {
    const p = made({})
    fifo(store(p))
    assert.throws(() => readTrust(where(p)), /CONFIG_READ_FAILED|not a regular file/)
    const q = made({})
    sparse(join(q.home, 'trust.json'), 3 * GiB)
    assert.throws(
      () => readTrust(where(q)),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CONFIG_TOO_LARGE')
        return true
      },
    )
  })

  it('yoke trust --show with a FIFO as yoke.lock finishes (the lock is read as configs are)', async () => {
    const p = made({ 'yoke.config.yaml': 'preset: base\nplugins: {}\n' })
    fifo(p.path('yoke.lock'))
    const shown = await runYoke(['trust', '--show', '--json'], {
      cwd: p.dir,
      home: p.home,
      env: { YOKE_TRUST: '' },
      timeoutMs: BOUND,
    })
    assert.equal(shown.code, 0, shown.stderr)
    assert.equal(JSON.parse(shown.stdout).state, 'new')
  })

  it('six config edits at once keep a trusted project trusted', async () => {
    const p = made({ 'yoke.config.yaml': 'preset: base\nplugins: {}\n' })
    // test/run.js trusts every project; this one is trusted by the store alone
    const env = { YOKE_TRUST: '' }
    const yoke = (...args: string[]) =>
      runYoke(args, { cwd: p.dir, home: p.home, env, timeoutMs: 180_000 })
    assert.equal((await yoke('trust')).code, 0)
    for (const round of [1, 2]) {
      const runs = await Promise.all(
        [1, 2, 3, 4, 5, 6].map((i) => yoke('withdraw', `r${round}t${i}@1`, '--why', 'no')),
      )
      runs.forEach((r) => assert.equal(r.code, 0, r.stderr))
      const shown = await yoke('trust', '--show', '--json')
      assert.equal(JSON.parse(shown.stdout).state, 'trusted', `round ${round}: ${shown.stdout}`)
    }
  })
})
