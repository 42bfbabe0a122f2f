// The process runner and the tool result, given hostile output: 100 MB on stdout is stopped at the
// cap and said as the cap (never as "killed by SIGKILL"), JSON nested past the bound is refused
// before anything recurses into it, and a progress line's JSON hands on scalars only.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { progressOf, resultOf, runProcess } from '../../../plugins/process/api.ts'

const dir = mkdtempSync(join(tmpdir(), 'yoke-run-hostile-'))
const sh = (script: string, maxStdoutBytes = 1024 * 1024) =>
  runProcess({
    file: '/bin/sh',
    args: ['-c', script],
    env: { PATH: process.env.PATH! },
    cwd: dir,
    input: '',
    maxStdoutBytes,
  })
const text = (output: ReturnType<typeof resultOf>) =>
  typeof output === 'string'
    ? output
    : (output as { content: Array<{ text?: string }> }).content.map((c) => c.text ?? '').join('')

describe('exec-tools: the runner and the result, given hostile output', () => {
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('100 MB on stdout: stopped at the cap, and the result says "output over N bytes, stopped"', async () => {
    const r = await sh("head -c 100000000 /dev/zero | tr '\\0' a", 100_000)
    assert.equal(r.flooded, true)
    assert.equal(r.stopped, 'output over 100000 bytes, stopped')
    assert.equal(r.stdout.length, 100_000)
    const out = resultOf(r, 'pkg/flood', dir)
    assert.match(text(out), /output over 100000 bytes, stopped/)
    assert.doesNotMatch(text(out), /killed by SIGKILL/)
    assert.equal((out as { isError?: boolean }).isError, true)
  })

  it('a run that ends by itself says nothing of a stop', async () => {
    const r = await sh('echo fine')
    assert.equal(r.flooded, false)
    assert.equal(r.stopped, undefined)
  })

  it('JSON stdout nested 100,000 deep is a tool error that says so, not a stack overflow', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    writeFileSync(join(dir, 'deep.json'), `{"output":${deep}}`)
    const r = await sh('cat deep.json')
    assert.equal(r.code, 0)
    let out
    assert.doesNotThrow(() => (out = resultOf(r, 'pkg/deep', dir)))
    assert.match(text(out!), /nested deeper than 64 levels/)
    assert.equal((out as unknown as { isError?: boolean }).isError, true)
  })

  it('a progress line with nested values hands on scalars only', () => {
    const deep = '['.repeat(1900) + ']'.repeat(1900)
    const event = progressOf(`{"type":"cost","provider":${deep},"usd":0.5,"input_tokens":3}`)
    assert.deepEqual((event as { cost?: unknown }).cost, {
      provider: undefined,
      inputTokens: 3,
      outputTokens: undefined,
      usd: 0.5,
    })
    assert.doesNotThrow(() => JSON.stringify(event))
    const artifact = progressOf(`{"type":"artifact","kind":"file","path":${deep}}`)
    assert.equal((artifact as { path?: unknown }).path, undefined)
  })
})
