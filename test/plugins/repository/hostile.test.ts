// The repository plugin against hostile dynamic plugins, on a real kernel, real worker processes,
// real FIFOs (mkfifo) and real child processes: a start blocked in a syscall, a person who does
// not answer, a stop while a worker is stuck in execSync, a burst of thousands of tools, and
// sessions whose names share a prefix. Each wait on a worker is bounded; a run waiting for a
// person, or for a stuck worker, holds nothing other sessions' calls need.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import {
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { after, describe, it } from 'node:test'
import policy from '../../../plugins/policy/index.ts'
import repository from '../../../plugins/repository/index.ts'
import type { RepositoryApi } from '../../../plugins/repository/api.ts'
import { YokeError, type ApprovalAnswer, type ApprovalRequest } from '../../../src/index.ts'
import { kernelWith } from '../../helpers/kernel.ts'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'yoke-repo-hostile-'))
const fifo = (name: string) => {
  const path = join(dir, name)
  execFileSync('mkfifo', [path])
  return path
}
/**
 * True while some process has the FIFO open for reading (or blocks opening it). It opens the write
 * end and closes it, which ends such a reader's wait: a check for the end, not for the start.
 */
const readerOn = (path: string) => {
  try {
    closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK))
    return true
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENXIO') return false
    throw err
  }
}
/** the pids whose command line holds `marker` (a child process a worker started) */
const processesWith = (marker: string) =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(marker)
      } catch {
        return false
      }
    })
const until = async (what: string, ok: () => boolean, ms = 60_000) => {
  const deadline = performance.now() + ms
  while (!ok()) {
    assert.ok(performance.now() < deadline, `waited ${ms} ms for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
const tool = (name: string, body = `'ok'`) =>
  `ctx.runtime.register({ name: '${name}', inputSchema: { type: 'object' }, execute: () => ${body} })`
const module = (name: string, apply: string, imports = '') =>
  `${imports}\nexport default { name: '${name}', inject: ['runtime'], async apply(ctx) {\n${apply}\n} }\n`

/** A kernel whose approval bridge answers per scope: a scope in `held` waits for the test. */
async function compose(settings: Record<string, unknown> = {}) {
  const { kernel, rt } = await kernelWith([
    ['policy', policy],
    ['repository', repository, settings],
  ])
  const held = new Map<string, (answer: ApprovalAnswer) => void>()
  const holdIn = new Set<string>()
  const asked: ApprovalRequest[] = []
  rt.approvals.register({
    name: 'test',
    ask: (request) => {
      asked.push(request)
      if (!holdIn.has(request.call.scope)) return Promise.resolve('allow-once')
      return new Promise((resolve) => held.set(request.call.scope, resolve))
    },
  })
  const call = async (name: string, args: Record<string, unknown> = {}, scope = 'global') => {
    const r = await rt.call(name, args, { scope, caller: 'test' })
    return { ...r, text: r.content.map((c) => (c as { text: string }).text).join('\n') }
  }
  const repo = kernel.services.get('repository')!.value as RepositoryApi
  return { kernel, rt, call, repo, held, holdIn, asked, close: () => kernel.dispose() }
}

// The cases share nothing (each composes its own kernel, FIFO and sleep marker) and most of their
// time is a wait for a bound to run out (initTimeoutMs, a stuck worker's stop): they run at once.
describe('repository against hostile plugins', { concurrency: true }, () => {
  const open: Array<() => Promise<void>> = []
  after(async () => {
    await Promise.all(open.map((c) => c()))
    rmSync(dir, { recursive: true, force: true })
  })

  it(
    'a start blocked reading a FIFO ends with a code naming the plugin; other sessions run meanwhile',
    { timeout: 120_000 },
    async () => {
      // long enough for the other session's work to finish well inside it, even on a busy machine
      const y = await compose({ initTimeoutMs: 10_000 })
      open.push(y.close)
      for (const s of ['s1', 's2']) y.rt.registry.createScope(s)
      const path = fifo('start')
      const marker = join(dir, 'start-reached')
      const source = module(
        'reader',
        `writeFileSync(${JSON.stringify(marker)}, '')\nreadFileSync(${JSON.stringify(path)})\n${tool('read_it')}`,
        `import { readFileSync, writeFileSync } from 'node:fs'`,
      )
      assert.equal(
        (await y.call('repository_define', { name: 'reader', purpose: 'p', source }, 's1')).status,
        'ok',
      )
      let ended = false
      const stuck = y
        .call('repository_run', { plugin: 'reader' }, 's1')
        .finally(() => (ended = true))
      await until('the worker to reach the FIFO', () => existsSync(marker))
      // meanwhile another session lists, defines, runs and calls its own plugin
      assert.equal((await y.call('repository_list', {}, 's2')).status, 'ok')
      const fine = module('fine', tool('fine_tool', `'fine'`))
      assert.equal(
        (await y.call('repository_define', { name: 'fine', purpose: 'p', source: fine }, 's2'))
          .status,
        'ok',
      )
      assert.equal((await y.call('repository_run', { plugin: 'fine' }, 's2')).status, 'ok')
      assert.equal((await y.call('fine_tool', {}, 's2')).text, 'fine')
      assert.equal(ended, false, 'the stuck run was still waiting meanwhile')
      const r = await stuck
      assert.equal(r.status, 'TOOL_ERROR', r.text)
      assert.match(r.text, /REPOSITORY_RUN_FAILED/)
      assert.match(
        r.text,
        /repo:reader@1 did not start: .*did not finish within 10000 ms \(initTimeoutMs\)/,
      )
      assert.equal((r.structured as { code: string }).code, 'REPOSITORY_RUN_FAILED')
      await until('no process left reading the FIFO', () => !readerOn(path), 10_000)
      assert.equal(y.repo.plugins('s1')[0]!.state, 'defined')
    },
  )

  it(
    'a run waiting for a person holds nothing: another session defines, runs and calls meanwhile',
    { timeout: 120_000 },
    async () => {
      const y = await compose()
      open.push(y.close)
      for (const s of ['s1', 's2']) y.rt.registry.createScope(s)
      y.holdIn.add('s1')
      const a = module('alpha', tool('alpha_tool', `'alpha'`))
      await y.call('repository_define', { name: 'alpha', purpose: 'p', source: a }, 's1')
      const waiting = y.call('repository_run', { plugin: 'alpha' }, 's1')
      await until('the question to reach the person', () => y.held.has('s1'))
      // exclusive calls of another session (define is exclusive) run while the person thinks
      const b = module('beta', tool('beta_tool', `'beta'`))
      assert.equal(
        (await y.call('repository_define', { name: 'beta', purpose: 'p', source: b }, 's2')).status,
        'ok',
      )
      assert.equal((await y.call('repository_run', { plugin: 'beta' }, 's2')).status, 'ok')
      assert.equal((await y.call('beta_tool', {}, 's2')).text, 'beta')
      assert.equal((await y.call('repository_self', {}, 's2')).status, 'ok')
      // and the same session's reads too
      assert.equal((await y.call('repository_self', {}, 's1')).status, 'ok')
      y.held.get('s1')!('allow-once')
      const r = await waiting
      assert.equal(r.status, 'ok', r.text)
      assert.equal((await y.call('alpha_tool', {}, 's1')).text, 'alpha')
      assert.deepEqual(
        y.asked.map((q) => q.call.scope),
        ['s1', 's2'],
      )
    },
  )

  it(
    'a call abandoned while its approval waits withdraws the question',
    { timeout: 60_000 },
    async () => {
      const y = await compose()
      open.push(y.close)
      y.rt.registry.createScope('s1')
      y.holdIn.add('s1')
      await y.call(
        'repository_define',
        { name: 'alpha', purpose: 'p', source: module('alpha', tool('a1')) },
        's1',
      )
      const abort = new AbortController()
      const waiting = y.rt.call(
        'repository_run',
        { plugin: 'alpha' },
        { scope: 's1', caller: 'test', signal: abort.signal },
      )
      await until('the question to reach the person', () => y.held.has('s1'))
      abort.abort()
      assert.equal((await waiting).status, 'ABORTED')
      await until('the question to be withdrawn', () => y.asked[0]!.signal.aborted, 10_000)
      assert.equal(y.repo.plugins('s1')[0]!.state, 'defined')
    },
  )

  it(
    'a start stuck in execSync is terminated with its child process; a stop of a stuck call is bounded',
    { timeout: 120_000 },
    async () => {
      const y = await compose({ initTimeoutMs: 8_000, callTimeoutMs: 600_000 })
      open.push(y.close)
      // `1000.<pid>4…` is no prefix of the other case's `1000.<pid>7`, nor it of this (they run at once)
      const seconds = `1000.${process.pid}4${Date.now() % 1000}`
      const source = module(
        'sleeper',
        `execSync('sleep ${seconds}')`,
        `import { execSync } from 'node:child_process'`,
      )
      await y.call('repository_define', { name: 'sleeper', purpose: 'p', source })
      const run = y.call('repository_run', { plugin: 'sleeper' })
      await until('the sleep to start', () => processesWith(seconds).length > 0)
      const r = await run
      assert.equal(r.status, 'TOOL_ERROR')
      assert.match(r.text, /repo:sleeper@1 did not start/)
      await until(
        'the sleep to be killed with its worker',
        () => processesWith(seconds).length === 0,
        10_000,
      )

      // a tool stuck in execSync, then undefine: the stop is bounded and the sleep dies
      const late = `${seconds}1`
      const body = `(execSync('sleep ${late}'), 'woke')`
      const stuckTool = module(
        'stuck',
        // safe: the model can still reach repository_undefine while it runs
        `ctx.runtime.register({ name: 'stuck_tool', concurrency: 'safe', execute: () => ${body} })`,
        `import { execSync } from 'node:child_process'`,
      )
      await y.call('repository_define', { name: 'stuck', purpose: 'p', source: stuckTool })
      assert.equal((await y.call('repository_run', { plugin: 'stuck' })).status, 'ok')
      const pending = y.call('stuck_tool')
      await until('the tool’s sleep to start', () => processesWith(late).length > 0)
      const removed = await y.call('repository_undefine', { plugin: 'stuck' })
      assert.equal(removed.status, 'ok', removed.text)
      assert.notEqual((await pending).status, 'ok')
      await until('the tool’s sleep to be killed', () => processesWith(late).length === 0, 10_000)
    },
  )

  it(
    'a process whose dynamic plugin is stuck in a syscall can still exit',
    { timeout: 120_000 },
    async () => {
      const path = fifo('exit')
      const script = join(dir, 'stuck-exit.mts')
      const seconds = `1000.${process.pid}7`
      writeFileSync(
        script,
        `import policy from ${JSON.stringify(join(ROOT, 'plugins/policy/index.ts'))}
import repository from ${JSON.stringify(join(ROOT, 'plugins/repository/index.ts'))}
import { kernelWith } from ${JSON.stringify(join(ROOT, 'test/helpers/kernel.ts'))}
const { kernel, rt } = await kernelWith([['policy', policy], ['repository', repository, { initTimeoutMs: 600000 }]])
rt.approvals.register({ name: 'yes', ask: async () => 'allow-once' })
const src = (name, body) => "import { readFileSync } from 'node:fs'\\nimport { execSync } from 'node:child_process'\\nexport default { name: '" + name + "', apply() { " + body + " } }"
await rt.call('repository_define', { name: 'fifo', purpose: 'p', source: src('fifo', ${JSON.stringify(`readFileSync(${JSON.stringify(path)})`)}) })
await rt.call('repository_define', { name: 'sleep', purpose: 'p', source: src('sleep', ${JSON.stringify(`execSync('sleep ${seconds}')`)}) })
void rt.call('repository_run', { plugin: 'fifo' })
void rt.call('repository_run', { plugin: 'sleep' })
const until = async (ok) => { while (!ok()) await new Promise((r) => setTimeout(r, 20)) }
const { readdirSync, readFileSync } = await import('node:fs')
await until(() => readdirSync('/proc').some((p) => { try { return readFileSync('/proc/' + p + '/cmdline', 'utf8').includes(${JSON.stringify(seconds)}) } catch { return false } }))
console.log('stuck')
await kernel.dispose()
console.log('disposed')
`,
      )
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', '--conditions=yoke-source', script],
        {
          cwd: ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      let out = ''
      child.stdout.on('data', (d) => (out += d))
      child.stderr.on('data', (d) => (out += d))
      const exited = new Promise<number | null>((resolve) =>
        child.on('exit', (code) => resolve(code)),
      )
      let timer: NodeJS.Timeout | undefined
      const code = await Promise.race([
        exited,
        new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 90_000))),
      ])
      // the bound's timer would keep this file's process alive for the rest of its 90 s
      clearTimeout(timer)
      if (code === 'hung') child.kill('SIGKILL')
      assert.equal(code, 0, out)
      assert.match(out, /stuck\n[\s\S]*disposed/)
      assert.equal(processesWith(seconds).length, 0, 'the sleep died with it')
      assert.equal(readerOn(path), false, 'nothing reads the FIFO any more')
    },
  )

  it(
    'tools per dynamic plugin are capped, and a burst is registered without stalling the host',
    { timeout: 120_000 },
    async () => {
      const y = await compose({ initTimeoutMs: 60_000 })
      open.push(y.close)
      const burst = (name: string, n: number) =>
        module(
          name,
          `for (let i = 0; i < ${n}; i++) ctx.runtime.register({ name: '${name}_' + i, inputSchema: { type: 'object' }, execute: () => i })`,
        )
      await y.call('repository_define', {
        name: 'many',
        purpose: 'p',
        source: burst('many', 4_000),
      })
      const r = await y.call('repository_run', { plugin: 'many' })
      assert.equal(r.status, 'TOOL_ERROR')
      assert.match(r.text, /REPOSITORY_TOO_MANY_TOOLS/)
      assert.match(r.text, /repo:many@1 .*more than 256 tools/)
      assert.match(r.text, /maxToolsPerPlugin/)
      assert.ok(!y.rt.list().some((t) => t.name.startsWith('many_')), 'none of them stays')

      await y.call('repository_define', { name: 'fits', purpose: 'p', source: burst('fits', 256) })
      const delay = monitorEventLoopDelay({ resolution: 10 })
      delay.enable()
      const ok = await y.call('repository_run', { plugin: 'fits' })
      delay.disable()
      assert.equal(ok.status, 'ok', ok.text)
      assert.equal(y.rt.list().filter((t) => t.name.startsWith('fits_')).length, 256)
      console.log(
        `# 256 tools registered; the host's event loop delay: max ${(delay.max / 1e6).toFixed(1)} ms, p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
      )

      const capped = await compose({ maxToolsPerPlugin: 1_000, initTimeoutMs: 60_000 })
      open.push(capped.close)
      await capped.call('repository_define', {
        name: 'many',
        purpose: 'p',
        source: burst('many', 1_000),
      })
      assert.equal((await capped.call('repository_run', { plugin: 'many' })).status, 'ok')
    },
  )

  it(
    'sessions whose names share a prefix see nothing of each other’s dynamic instances',
    { timeout: 60_000 },
    async () => {
      const y = await compose()
      open.push(y.close)
      for (const s of ['s1', 's10', 's1/sess-1', 's1/spawn-1']) y.rt.registry.createScope(s)
      await y.call(
        'repository_define',
        { name: 'weather', purpose: 'p', source: module('weather', tool('get_weather')) },
        's1',
      )
      assert.equal((await y.call('repository_run', { plugin: 'weather' }, 's1')).status, 'ok')
      const key = y.repo.plugins('s1')[0] && 'repository/s1/weather'
      const listed = async (scope: string) =>
        (
          (await y.call('repository_list', {}, scope)).structured as {
            instances: Array<{ key: string }>
          }
        ).instances.map((i) => i.key)
      assert.ok((await listed('s1')).includes(key))
      assert.ok((await listed('s1/spawn-1')).includes(key), 'its subagent sees it')
      for (const other of ['s10', 's1/sess-1', 'global']) {
        assert.ok(!(await listed(other)).includes(key), `listed in ${other}`)
        const q = await y.call('repository_query', { instance: key }, other)
        assert.notEqual(q.status, 'ok', `queried from ${other}`)
        assert.doesNotMatch(q.text, /get_weather/)
      }
      assert.equal((await y.call('repository_query', { instance: key }, 's1')).status, 'ok')
    },
  )

  it('its tools throw coded errors: an unknown plugin is REPOSITORY_UNKNOWN, an unknown instance REPOSITORY_INSTANCE_UNKNOWN', async () => {
    const y = await compose()
    open.push(y.close)
    const codeOf = async (name: string, args: Record<string, unknown>) => {
      const t = y.rt.registry.resolve(name)!
      const ctx = {
        signal: new AbortController().signal,
        progress() {},
        onEnd() {},
        call: { scope: 'global', caller: 'test', id: 'x', name, args },
      }
      try {
        await t.execute(args, ctx as never)
      } catch (err) {
        assert.ok(err instanceof YokeError, `${name} threw ${String(err)}`)
        return err.code
      }
      return 'no error'
    }
    for (const name of [
      'repository_run',
      'repository_stop',
      'repository_undefine',
      'repository_self',
    ])
      assert.equal(await codeOf(name, { plugin: 'nope' }), 'REPOSITORY_UNKNOWN', name)
    assert.equal(
      await codeOf('repository_query', { instance: 'nope' }),
      'REPOSITORY_INSTANCE_UNKNOWN',
    )
  })
})
