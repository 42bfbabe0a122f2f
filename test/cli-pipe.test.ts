/**
 * A command's output sent to a pipe arrives whole: `yoke tools list --json | wc -c` once gave
 * 131,072 of 398,028 bytes, because bin/yoke.js ended the process before stdout drained (a pipe
 * takes 64 KiB at a time). Tested with a real pipe, more than 1 MB of JSON, and a shell reader
 * that reads late (`sleep` before `wc`), with a plugin that leaves a timer open besides: the
 * finished command must still end.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { test } from 'node:test'
import { suiteProjects, YOKE } from './helpers/project.ts'

const project = suiteProjects()

/** 300 tools with 4 KB descriptions: `tools list --json` prints about 1.3 MB. */
const WIDE = `export default {
  name: 'wide',
  inject: ['runtime'],
  apply(ctx) {
    for (let i = 0; i < 300; i++)
      ctx.runtime.register({ name: 'wide_' + i, description: 'w'.repeat(4096), execute: () => 'ok' })
    // an open handle nobody closes: it must not keep the finished command alive
    setInterval(() => {}, 1000)
  },
}
`

/** Runs `sh -c SCRIPT` and collects its stdout; fails after `ms`. */
function sh(
  script: string,
  cwd: string,
  ms: number,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], {
      cwd,
      env: { ...process.env, NO_COLOR: '1', YOKE_HOME: join(cwd, '.home') },
    })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`sh -c ${script} did not end in ${ms} ms\n${err}`))
    }, ms)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, out, err })
    })
  })
}

test('tools list --json through a pipe to a late reader arrives whole (> 1 MB)', async () => {
  const p = project({
    'wide.mjs': WIDE,
    'yoke.config.yaml': 'preset: minimal\nplugins:\n  wide:\n    use: ./wide.mjs\n',
  })
  const bin = JSON.stringify(process.execPath)
  // the whole output to a file, for the size; then the same through a pipe whose reader starts late
  const whole = await sh(
    `${bin} ${JSON.stringify(YOKE)} tools list --json > all.json; echo $?`,
    p.dir,
    60_000,
  )
  assert.equal(whole.out.trim(), '0', whole.err)
  const { statSync, readFileSync } = await import('node:fs')
  const size = statSync(p.path('all.json')).size
  assert.ok(size > 1_000_000, `the output is ${size} bytes`)
  assert.equal(
    (JSON.parse(readFileSync(p.path('all.json'), 'utf8')) as { tools: unknown[] }).tools.length,
    300,
  )
  const piped = await sh(
    `${bin} ${JSON.stringify(YOKE)} tools list --json | (sleep 1; wc -c)`,
    p.dir,
    60_000,
  )
  assert.equal(
    Number(piped.out.trim()),
    size,
    `a pipe got ${piped.out.trim()} of ${size} bytes\n${piped.err}`,
  )
})

test('a reader that goes away early ends the command (141, as SIGPIPE would), not a hang', async () => {
  const p = project({
    'wide.mjs': WIDE,
    'yoke.config.yaml': 'preset: minimal\nplugins:\n  wide:\n    use: ./wide.mjs\n',
  })
  const bin = JSON.stringify(process.execPath)
  const r = await sh(
    `${bin} ${JSON.stringify(YOKE)} tools list --json | head -c 100 > /dev/null`,
    p.dir,
    60_000,
  )
  assert.doesNotMatch(r.err, /EPIPE|Unhandled/, r.err)
})
