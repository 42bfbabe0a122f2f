/**
 * A CLI child whose parent dies ends (issue 27: one `yoke dev` ran on 46 minutes at 95 % CPU).
 * Two ways it went wrong, each with a real process tree and a real SIGKILL:
 * - the reader of its output went away: the write's EPIPE asked for exit 141 from the async context
 *   of the plugin whose log line it carried, the plugin guard refused it as the plugin's
 *   process.exit(), the plugin failed, its failure was logged, written, failed… in a loop;
 * - its parent died and nothing was written: it ran on, unseen, for ever.
 * Bounds come from the work: the dev must first be ready (its own time), then end within its
 * shutdown plus the parent check's period, given generously for a loaded machine.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { suiteProjects, YOKE } from './helpers/project.ts'
import { until } from './helpers/until.ts'

const project = suiteProjects()

/** a plugin that logs every 20 ms: the dev writes to its stderr all the time */
const CHATTY = `export default {
  name: 'chatty',
  apply(ctx) {
    let n = 0
    ctx.setInterval(() => ctx.logger.info('tick ' + ++n), 20)
  },
}
`

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** CPU seconds a process used so far (utime + stime from /proc), or undefined once it is gone. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return undefined
  }
}

function chattyProject() {
  return project({
    'chatty.mjs': CHATTY,
    'yoke.config.yaml': 'preset: minimal\nplugins:\n  chatty:\n    use: ./chatty.mjs\n',
  })
}

test('a dev whose output reader is gone ends (exit 141), instead of spinning on EPIPE', async (t) => {
  const p = chattyProject()
  // sh stays alive (the dev's parent), head reads the first lines and goes: stdout is a broken pipe
  const sh = spawn(
    'sh',
    [
      '-c',
      `${JSON.stringify(process.execPath)} ${JSON.stringify(YOKE)} dev 2>&1 | head -c 2000 > /dev/null; echo done`,
    ],
    { cwd: p.dir, env: { ...process.env, NO_COLOR: '1', YOKE_HOME: p.home } },
  )
  // a dev left behind by a failure is ended by its parent's id, before the parent
  t.after(() => {
    spawnSync('pkill', ['-KILL', '-P', String(sh.pid)])
    sh.kill('SIGKILL')
  })
  let out = ''
  sh.stdout.on('data', (d) => (out += d))
  const ended = new Promise<number | null>((resolve) => sh.on('exit', resolve))
  // the dev's composing is the work: its own start bounds the wait (a minute on a loaded machine)
  await until(
    () => `the dev behind the broken pipe to end; sh printed ${JSON.stringify(out)}`,
    () => out.includes('done'),
    { ms: 90_000, every: 100 },
  )
  assert.equal(await ended, 0)
})

test('a dev whose parent is SIGKILLed ends, and does not burn CPU meanwhile', async (t) => {
  const p = chattyProject()
  // the parent: spawns the dev with pipes (as an editor or an agent does), says its pid, waits
  const parentCode = `
    const { spawn } = require('node:child_process')
    const child = spawn(process.execPath, [${JSON.stringify(YOKE)}, 'dev', '--events', 'json'], { stdio: ['pipe', 'pipe', 'pipe'] })
    child.stdout.on('data', (d) => { if (String(d).includes('"ready"')) console.log('child ' + child.pid) })
    child.stderr.on('data', () => {})
    setInterval(() => {}, 1000)
  `
  const parent = spawn(process.execPath, ['-e', parentCode], {
    cwd: p.dir,
    env: { ...process.env, NO_COLOR: '1', YOKE_HOME: p.home },
  })
  let said = ''
  parent.stdout.on('data', (d) => (said += d))
  let child = 0
  t.after(() => {
    parent.kill('SIGKILL')
    if (child && alive(child)) process.kill(child, 'SIGKILL')
  })
  await until(
    () => `the dev to be ready (the parent said ${JSON.stringify(said)})`,
    () => {
      child = Number(/child (\d+)/.exec(said)?.[1] ?? 0)
      return child > 0
    },
    { ms: 90_000, every: 100 },
  )
  const before = cpuSeconds(child)!
  parent.kill('SIGKILL')
  await until(
    `the orphaned dev ${child} to end`,
    () => !alive(child) || cpuSeconds(child) === undefined,
    {
      ms: 60_000,
      every: 100,
    },
  )
  // whatever it did on its way out, it did not spin for the whole wait
  const spent = (cpuSeconds(child) ?? before) - before
  assert.ok(spent < 30, `the orphan used ${spent} s of CPU`)
})
