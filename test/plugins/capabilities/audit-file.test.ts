// The capabilities audit log is read as configs are (a regular file, its last 8 MiB) and checked
// entry by entry: a FIFO in its place is refused without blocking (commands run as real processes,
// bounded), a huge sparse log is read by its tail, and a wrongly typed entry costs that entry
// alone, said with file:line. (Moved from test/state-files.test.ts, which keeps the trust store's.)
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { appendFileSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { readAudit } from '../../../plugins/capabilities/audit.ts'
import { runYoke, suiteProjects, type Project } from '../../helpers/project.ts'

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
