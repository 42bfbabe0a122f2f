// The process runner alone (runProcess, on execa): the result at the program's exit, its process
// group ended with it (at the exit, a timeout, a kill, a flood), bounded output on both streams.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { runProcess, type ProcessSpec } from '../../../plugins/process/api.ts'
import { alive } from '../../helpers/mcp.ts'
import { until } from '../../helpers/until.ts'

const dir = mkdtempSync(join(tmpdir(), 'yoke-run-'))
const sh = (script: string, more: Partial<ProcessSpec> = {}) =>
  runProcess({
    file: '/bin/sh',
    args: ['-c', script],
    env: { PATH: process.env.PATH! },
    cwd: dir,
    input: '',
    maxStdoutBytes: 1024 * 1024,
    ...more,
  })
const pidIn = (file: string) => Number(readFileSync(join(dir, file), 'utf8'))

describe('exec-tools: the process runner', () => {
  const escaped: number[] = []
  after(() => {
    for (const pid of escaped) if (alive(pid)) process.kill(pid, 'SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })

  it('gives the exit code, stdout whole, the input on stdin, and stderr line by line (blank lines skipped, long ones cut, the last 50 kept)', async () => {
    const lines: string[] = []
    const r = await sh(
      `read -r x; printf '%s' "$x"; printf 'one\\n\\n   \\ntwo\\n' >&2; head -c 5000 /dev/zero | tr '\\0' a >&2; printf '\\n' >&2; i=0; while [ $i -lt 60 ]; do echo "n$i" >&2; i=$((i+1)); done; printf 'no newline' >&2; exit 3`,
      { input: 'hello', onStderrLine: (l) => lines.push(l) },
    )
    assert.equal(r.code, 3)
    assert.equal(r.signal, null)
    assert.equal(r.stdout, 'hello')
    assert.equal(r.flooded, false)
    assert.equal(r.timedOut, false)
    assert.deepEqual(lines.slice(0, 3), ['one', 'two', 'a'.repeat(4000)])
    assert.equal(lines.length, 64)
    assert.equal(lines.at(-1), 'no newline', 'the unterminated last line is reported at the end')
    assert.equal(r.stderr.length, 50)
    assert.deepEqual(r.stderr.slice(-2), ['n59', 'no newline'])
  })

  it('ends what the program left in its group at its exit, without waiting for it to close the output it holds', async () => {
    const started = Date.now()
    const r = await sh('sleep 30 & echo $! > bg.pid; echo done')
    assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`)
    assert.equal(r.code, 0)
    assert.equal(r.stdout, 'done\n')
    const bg = pidIn('bg.pid')
    await until(`the background sleep ${bg} to end with the run`, () => !alive(bg), { ms: 3000 })
  })

  it('does not wait for a process that escaped the group (setsid) and holds stdout', async () => {
    const started = Date.now()
    const r = await sh('setsid sleep 30 & echo $! > escaped.pid; echo out; echo err >&2')
    escaped.push(pidIn('escaped.pid'))
    assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`)
    assert.equal(r.code, 0)
    assert.equal(r.stdout, 'out\n', 'what the program wrote before its exit is kept')
    assert.deepEqual(r.stderr, ['err'])
  })

  it('at the timeout, kills the group (grandchild included) and says timedOut', async () => {
    const started = Date.now()
    const r = await sh('sleep 30 & echo $! > timeout.pid; sleep 30', { timeoutMs: 300 })
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`)
    assert.equal(r.timedOut, true)
    assert.equal(r.signal, 'SIGKILL')
    assert.equal(r.code, null)
    const bg = pidIn('timeout.pid')
    await until(`grandchild ${bg} to end at the timeout`, () => !alive(bg), { ms: 3000 })
  })

  it('a kill from outside (onKill) ends the group; a kill after the end does nothing', async () => {
    let kill: (() => void) | undefined
    const run = sh('sleep 30 & echo $! > kill.pid; sleep 30', { onKill: (k) => (kill = k) })
    assert.ok(kill, 'onKill received the kill at once')
    await until('the program to start', () => existsSync(join(dir, 'kill.pid')), { ms: 3000 })
    kill()
    const r = await run
    assert.equal(r.signal, 'SIGKILL')
    assert.equal(r.timedOut, false)
    const bg = pidIn('kill.pid')
    await until(`grandchild ${bg} to end with the kill`, () => !alive(bg), { ms: 3000 })
    kill()
  })

  it('stops the group when stdout passes the cap, even a program that ignores SIGPIPE, and keeps exactly the cap', async () => {
    const started = Date.now()
    const r = await sh("trap '' PIPE; head -c 50000000 /dev/zero; sleep 30", {
      maxStdoutBytes: 100_000,
    })
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`)
    assert.equal(r.flooded, true)
    assert.equal(r.stdout.length, 100_000)
    assert.equal(r.signal, 'SIGKILL')
  })

  it('a stderr flood without newlines costs bounded memory; the program runs on to its end', async () => {
    const rss = process.memoryUsage().rss
    const lines: string[] = []
    const r = await sh('head -c 67108864 /dev/zero >&2; echo finished', {
      onStderrLine: (l) => lines.push(l),
    })
    assert.equal(r.code, 0)
    assert.equal(r.stdout, 'finished\n')
    assert.ok(
      process.memoryUsage().rss - rss < 150 * 1024 * 1024,
      `rss grew by ${(process.memoryUsage().rss - rss) >> 20} MiB`,
    )
    assert.ok(r.stderr.every((l) => l.length <= 4000))
    assert.ok(lines.length <= 1)
  })

  it('a program that never reads a large input still gives its result', async () => {
    const r = await sh('echo ignored', { input: 'x'.repeat(4 * 1024 * 1024) })
    assert.equal(r.code, 0)
    assert.equal(r.stdout, 'ignored\n')
  })

  it('a program that cannot start rejects with the spawn error (ENOENT, EACCES)', async () => {
    await assert.rejects(sh('', { file: join(dir, 'missing') }), { code: 'ENOENT' })
    writeFileSync(join(dir, 'not-executable'), 'echo hi\n', { mode: 0o644 })
    await assert.rejects(sh('', { file: join(dir, 'not-executable') }), { code: 'EACCES' })
  })
})
