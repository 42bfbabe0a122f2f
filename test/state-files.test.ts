// The trust store is read as configs are (a regular file, a size cap) and checked entry by entry:
// a FIFO in its place is refused without blocking (commands run as real processes, bounded), a huge
// sparse store is refused, and a wrongly typed entry costs that entry alone, said with file:line.
// And the trust store keeps a project trusted through six config edits at once. (The audit log's
// and metrics-jsonl's checks moved beside their plugins' tests: test/plugins/capabilities/
// audit-file.test.ts, test/plugins/metrics-jsonl/state-file.test.ts.)
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
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
