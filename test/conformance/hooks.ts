/**
 * The hook-adapter conformance suite. Every hook format yoke reads (octos-style shell hooks declared
 * in the config or in a package manifest; Claude Code's hooks.json later) runs it: an adapter
 * installs a real hook program, with one of a few behaviours, for one tool, the way its format
 * declares hooks; every call goes through the real ToolRuntime. A new format is one more adapter.
 */
import assert from 'node:assert/strict'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, afterEach, before, describe, it } from 'node:test'
import {
  Composition,
  tapHook,
  tapsOf,
  type LogRecord,
  type ToolResult,
  type ToolRuntime,
} from '../../src/index.ts'
import { alive } from '../helpers/mcp.ts'
import type { Project } from '../helpers/project.ts'
import { until } from '../helpers/until.ts'

/**
 * What an installed hook does, in the format's own terms:
 * - allow:   lets the call through unchanged
 * - deny:    blocks it with `reason` (the reason the model must see)
 * - rewrite: replaces the arguments with `args`
 * - observe: runs after the call (post-execute) and only records what it saw
 * - hang:    does not answer for HANG_MS (the adapter must cut it off at its timeout)
 * - crash:   dies in a way the format gives no meaning to
 * - garbage: answers with output the format cannot parse
 * - missing: its program does not exist
 */
export type HookBehaviour =
  | { kind: 'allow' }
  | { kind: 'deny'; reason: string }
  | { kind: 'rewrite'; args: Record<string, unknown> }
  | { kind: 'observe' }
  | { kind: 'hang' }
  | { kind: 'crash' }
  | { kind: 'garbage' }
  | { kind: 'missing' }

export type HookFailure = 'hang' | 'crash' | 'garbage' | 'missing'

/** How long a call may take before the suite fails it (a hook that holds the call must not hang the suite). */
const CALL_MS = 20_000
/**
 * How long a hanging hook's program sleeps: far beyond its timeout, and past CALL_MS, but bounded,
 * so that when an adapter fails to cut it off the file still ends instead of waiting on the process.
 */
export const HANG_MS = 45_000
const FAILURES: HookFailure[] = ['hang', 'crash', 'garbage', 'missing']

/** One run of a hook as the suite compares it; each adapter maps its format's payload to this. */
export interface HookRun {
  tool: string
  /** the arguments it was shown (pre-execute) */
  args?: unknown
  /** the result's text it was shown (post-execute) */
  result?: string
}

export interface InstalledHook {
  /** a string every error about this hook contains: its program as the format declares it */
  name: string
  /** what it received so far, one entry per run */
  runs(): HookRun[]
  /** the pid of each run's process */
  pids(): number[]
  /** removes the hook the way its format does (its instance or package goes); idempotent */
  dispose(): Promise<void>
}

export interface HookAdapter {
  /** the runtime the hooks apply to */
  runtime: ToolRuntime
  /** every log record so far (where a fail-open hook's error is reported) */
  logs: readonly LogRecord[]
  /**
   * How the format treats each failure, as its docs say: `open` lets the call run (the error is
   * logged, naming the hook), `closed` refuses it (the call's error names the hook).
   */
  failures: Record<HookFailure, 'open' | 'closed'>
  /** installs a hook with `behaviour` that applies to `tool` only; resolves once it is in force */
  install(
    tool: string,
    behaviour: HookBehaviour,
    options?: { timeoutMs?: number },
  ): Promise<InstalledHook>
  close(): Promise<void>
}

/**
 * A hook program for an adapter to declare: a sh script that records its stdin (one JSON payload
 * per line in `<file>.log`) and its pid (`<file>.pids`), then runs `body`. With no body nothing is
 * written: the program is missing.
 */
/**
 * A composition of a temporary project whose config `writeConfig` writes: started, its logs
 * kept, and `reload` (write the config again, reload, wait until it settles) for each install.
 */
export async function composedProject(project: Project, writeConfig: () => void) {
  writeConfig()
  const composition = new Composition({ cwd: project.dir, home: project.home })
  const logs: LogRecord[] = []
  composition.kernel.hooks.log.tap('conformance', (r) => void logs.push(r))
  const first = await composition.start()
  assert.ok(first.ok, JSON.stringify(first.errors))
  const reload = async () => {
    writeConfig()
    const event = await composition.reload()
    assert.ok(event.ok && !event.failed.length, JSON.stringify([...event.errors, ...event.failed]))
    await composition.kernel.settled()
  }
  return { composition, logs, reload }
}

export function hookProgram(dir: string, name: string, body?: string) {
  const file = join(dir, name)
  const log = `${file}.log`
  const pidLog = `${file}.pids`
  if (body !== undefined) {
    mkdirSync(dir, { recursive: true })
    writeFileSync(
      file,
      `#!/bin/sh\npayload=$(cat)\nprintf '%s\\n' "$payload" >> '${log}'\necho $$ >> '${pidLog}'\n${body}\n`,
    )
    chmodSync(file, 0o755)
  }
  const lines = (path: string) =>
    existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : []
  return {
    file,
    payloads: () => lines(log).map((l) => JSON.parse(l) as Record<string, unknown>),
    pids: () => lines(pidLog).map(Number),
  }
}

/** `text` as one sh word. */
export const shQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')

/** Waits for `promise`, failing after `ms`. */
async function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  let done = false
  const out = promise.finally(() => (done = true))
  out.catch(() => {}) // awaited below; a late rejection after a timeout is not unhandled
  await until(what, () => done, { ms })
  return out
}

export function runHookConformance(format: string, open: () => Promise<HookAdapter>) {
  describe(`hook conformance: ${format}`, () => {
    let adapter: HookAdapter
    let rt: ToolRuntime
    /** the arguments each tool's body ran with */
    const bodies = new Map<string, unknown[]>()
    const unregister: Array<() => Promise<void>> = []
    const installed: InstalledHook[] = []
    let tools = 0

    /** A fresh native tool: each case hooks its own, so no case sees another's hooks. */
    const tool = () => {
      const name = `hooked_${++tools}`
      const ran: unknown[] = []
      bodies.set(name, ran)
      unregister.push(
        rt.register({
          name,
          inputSchema: { type: 'object', properties: { msg: { type: 'string' } } },
          execute: (args) => {
            ran.push(args)
            return `${name}: ${String(args.msg ?? '')}`
          },
        }),
      )
      return name
    }
    const install = async (...args: Parameters<HookAdapter['install']>) => {
      const hook = await adapter.install(...args)
      installed.push(hook)
      return hook
    }
    const call = (name: string, msg: string) =>
      within(`the call of ${name}`, rt.call(name, { msg }), CALL_MS)
    const namedInLogs = (hook: InstalledHook) =>
      adapter.logs.some((l) => ['warn', 'error'].includes(l.level) && l.message.includes(hook.name))

    before(async () => {
      adapter = await open()
      rt = adapter.runtime
    })
    afterEach(async () => {
      for (const hook of installed.splice(0)) await hook.dispose()
    })
    after(async () => {
      for (const off of unregister) await off()
      await adapter?.close()
    })

    it('allow: the call goes through, and the hook is shown the tool and its arguments', async () => {
      const t = tool()
      const hook = await install(t, { kind: 'allow' })
      const r = await call(t, 'hi')
      assert.equal(r.status, 'ok', text(r))
      assert.equal(text(r), `${t}: hi`)
      assert.deepEqual(bodies.get(t), [{ msg: 'hi' }])
      assert.deepEqual(
        hook.runs().map((run) => [run.tool, run.args]),
        [[t, { msg: 'hi' }]],
      )
    })

    it('a hook applies to its tool only', async () => {
      const t = tool()
      const other = tool()
      const hook = await install(t, { kind: 'deny', reason: 'not for this tool' })
      assert.equal((await call(other, 'x')).status, 'ok')
      assert.deepEqual(hook.runs(), [], 'the hook did not run for another tool')
      assert.equal((await call(t, 'x')).status, 'DENIED')
    })

    it("deny: the call is refused with the hook's reason, and the body never runs", async () => {
      const t = tool()
      const reason = "no deploys on Fridays (it's policy)"
      await install(t, { kind: 'deny', reason })
      const r = await call(t, 'deploy')
      assert.equal(r.status, 'DENIED')
      assert.ok(r.error?.message.includes(reason), r.error?.message)
      assert.ok(text(r).includes(reason), 'the reason is in what the model sees')
      assert.deepEqual(bodies.get(t), [])
    })

    it('rewrite: the body runs with the arguments the hook returned', async () => {
      const t = tool()
      const hook = await install(t, { kind: 'rewrite', args: { msg: 'rewritten by the hook' } })
      const r = await call(t, 'original')
      assert.equal(r.status, 'ok', text(r))
      assert.equal(text(r), `${t}: rewritten by the hook`)
      assert.deepEqual(bodies.get(t), [{ msg: 'rewritten by the hook' }])
      assert.deepEqual(hook.runs()[0]?.args, { msg: 'original' }, 'the hook saw the call as made')
    })

    it("an allow does not override another hook's deny", async () => {
      const t = tool()
      await install(t, { kind: 'allow' })
      await install(t, { kind: 'deny', reason: 'the second hook says no' })
      const r = await call(t, 'x')
      assert.equal(r.status, 'DENIED')
      assert.match(r.error!.message, /the second hook says no/)
      assert.deepEqual(bodies.get(t), [])
    })

    it('post-execute: the hook sees the result of the call', async () => {
      const t = tool()
      const hook = await install(t, { kind: 'observe' })
      assert.equal((await call(t, 'look at me')).status, 'ok')
      await until('the post-execute hook to run', () => hook.runs().length > 0)
      assert.deepEqual(
        hook.runs().map((run) => [run.tool, run.result]),
        [[t, `${t}: look at me`]],
      )
    })

    for (const failure of FAILURES) {
      it(`${failure}: cut off or failed as the format documents, with an error naming the hook, and exactly one result`, async () => {
        const t = tool()
        const results: string[] = []
        const untap = tapHook(rt.hooks.result, 'conformance: count', async (c, r) => {
          if (c.name === t) results.push(r.status)
        })
        try {
          const hook = await install(t, { kind: failure }, { timeoutMs: 500 })
          const r = await call(t, 'x')
          if (adapter.failures[failure] === 'open') {
            assert.equal(r.status, 'ok', text(r))
            assert.deepEqual(bodies.get(t), [{ msg: 'x' }], 'the call ran with its own arguments')
            await until(`a warning or error naming ${hook.name}`, () => namedInLogs(hook))
          } else {
            assert.notEqual(r.status, 'ok')
            assert.deepEqual(bodies.get(t), [])
            assert.ok(r.error?.message.includes(hook.name), r.error?.message)
          }
          if (failure === 'missing') assert.deepEqual(hook.runs(), [])
          else assert.equal(hook.runs().length, 1, 'the hook ran once')
          if (failure === 'hang') {
            const [pid] = hook.pids()
            await until(`the hung hook's process ${pid} to be killed`, () => !alive(pid!))
          }
          await until('the result hook to see the call', () => results.length > 0)
          assert.deepEqual(results, [r.status], 'exactly one result')
        } finally {
          untap()
        }
      })
    }

    it('disposing a hook removes its taps: it never runs again', async () => {
      const t = tool()
      const taps = () => [...tapsOf(rt.hooks.preExecute), ...tapsOf(rt.hooks.result)]
      const before = taps()
      const guard = await install(t, { kind: 'deny', reason: 'denied until disposed' })
      const watcher = await install(t, { kind: 'observe' })
      assert.ok(taps().length > before.length, 'the hooks tap the runtime')
      assert.equal((await call(t, 'one')).status, 'DENIED')
      await guard.dispose()
      assert.equal((await call(t, 'two')).status, 'ok')
      await until('the post-execute hook to see the allowed call', () =>
        watcher.runs().some((run) => run.result === `${t}: two`),
      )
      await watcher.dispose()
      assert.deepEqual(taps(), before, 'no tap of theirs is left')
      // a fresh observer sees the next call; the disposed ones do not
      const sentinel = await install(t, { kind: 'observe' })
      assert.equal((await call(t, 'three')).status, 'ok')
      await until('a fresh post-execute hook to see the call', () =>
        sentinel.runs().some((run) => run.result === `${t}: three`),
      )
      assert.deepEqual(
        guard.runs().map((run) => run.args),
        [{ msg: 'one' }],
        'the disposed pre-execute hook ran for the first call only',
      )
      assert.ok(
        !watcher.runs().some((run) => run.result === `${t}: three`),
        'the disposed post-execute hook did not see the last call',
      )
      assert.deepEqual(bodies.get(t), [{ msg: 'two' }, { msg: 'three' }])
    })
  })
}
