/**
 * Floods: tools that write far more than the caps. An exec-tools package whose executable writes
 * 1 GiB to stdout (with and without newlines), 1 GiB to stderr (a blob, and 256 MiB of progress
 * lines), and both at once; an MCP server (bench/soak/flood-server.mjs) that floods its stderr,
 * answers with a message over `maxMessageBytes`, or writes a 20 MiB line of garbage on stdout, or a short line that is not JSON-RPC.
 * Expected: every call ends with one result within its bound (the stdout floods as errors that
 * name the limit, the stderr floods ok), the MCP client reconnects after the oversized message,
 * no process is left (server pids, and anything still running in the project or its work
 * directory, grandchildren included), and this process's memory stays bounded: RSS before, at its peak and after are reported.
 */
import { fileURLToPath } from 'node:url'
import { Composition, type ToolResult } from '../../src/index.ts'
import { tempProject } from '../../test/helpers/project.ts'
import { writePackage } from '../../test/helpers/exec.ts'
import { gc, mib, orphanCheck, reap, sleep, Tracker, until, within, type Report } from './track.ts'

const GIB = 1024 * 1024 * 1024
const SERVER = fileURLToPath(new URL('./flood-server.mjs', import.meta.url))
const EXE = `#!/bin/sh
case "$1" in
  stdout_flood) exec head -c ${GIB} /dev/zero ;;
  stdout_lines) yes 'a line of flood' | head -c ${GIB} ;;
  stderr_flood) head -c ${GIB} /dev/zero >&2; echo '{"output":"flooded","success":true}' ;;
  stderr_lines) yes '{"type":"progress","stage":"flood","pct":50}' | head -c ${GIB / 4} >&2; echo flooded ;;
  both) head -c ${GIB / 2} /dev/zero >&2 & exec head -c ${GIB} /dev/zero ;;
esac
`
const EXEC_TOOLS = ['stdout_flood', 'stdout_lines', 'stderr_flood', 'stderr_lines', 'both']
// what each call must end with; a RegExp is matched against the error message
const EXPECT: Record<
  string,
  { status: string | RegExp; message?: RegExp; ms?: number; spilled?: boolean }
> = {
  stdout_flood: { status: /^(TOOL_ERROR|EXEC_FAILED)$/, message: /output limit/ },
  stdout_lines: { status: /^(TOOL_ERROR|EXEC_FAILED)$/, message: /output limit/ },
  both: { status: /^(TOOL_ERROR|EXEC_FAILED)$/, message: /output limit/ },
  stderr_flood: { status: 'ok' },
  stderr_lines: { status: 'ok' },
  mcp__flood__stderr_flood: { status: 'ok' },
  mcp__flood__stderr_blob: { status: 'ok' },
  mcp__flood__big: { status: 'SERVER_UNAVAILABLE', message: /over 8388608 bytes.*maxMessageBytes/ },
  mcp__flood__big_ok: { status: 'ok', spilled: true },
  mcp__flood__stdout_garbage: {
    status: 'SERVER_UNAVAILABLE',
    message: /over 8388608 bytes.*maxMessageBytes/,
  },
  // a line that is not JSON-RPC fails the call at once (not after callMs) and restarts the server
  mcp__flood__garbage_line: { status: 'SERVER_UNAVAILABLE', ms: 5000 },
  mcp__flood__echo: { status: 'ok' },
}
// memory: what JS holds after a GC must come back near where it was; RSS may keep freed pages
// (the allocator's arenas), so it gets a looser bound, and its peak one more
const HELD_GROWTH_LIMIT = 64 * 1024 * 1024 // after close
const ROUND_GROWTH_LIMIT = 32 * 1024 * 1024 // from the first round of floods to the third
const RSS_GROWTH_LIMIT = 384 * 1024 * 1024
const RSS_PEAK_LIMIT = 768 * 1024 * 1024 // while they run

/** What JS holds (heap and buffers) after a full GC, once timers that hold a buffer have run. */
const held = async () => {
  await sleep(200)
  gc()
  gc()
  const m = process.memoryUsage()
  return m.heapUsed + m.external // external includes arrayBuffers
}

export async function flood(deadlineMs: number): Promise<Report> {
  const t = new Tracker('floods', 40_000)
  const project = tempProject()
  project.write(
    'yoke.config.yaml',
    `preset: base
runtime: { maxConcurrent: 16, spillDir: ${JSON.stringify(project.path('spill'))} }
plugins:
  packages:
    use: exec-tools
    config: { dirs: [./packages], watch: false }
  flood:
    use: mcp-client
    config:
      serverName: flood
      command: ${JSON.stringify(process.execPath)}
      args: [${JSON.stringify(SERVER)}]
      maxMessageBytes: 8388608
      callMs: 20000
      reconnect: { initialDelayMs: 50, maxDelayMs: 250, maxAttempts: 100 }
`,
  )
  writePackage(project.path('packages'), 'flood', {
    manifest: {
      name: 'flood',
      version: '1.0.0',
      timeout_secs: 60,
      tools: EXEC_TOOLS.map((name) => ({
        name,
        description: `floods (${name})`,
        input_schema: { type: 'object' },
        risk: 'low',
        concurrency_class: 'safe',
      })),
    },
    exe: EXE,
  })
  const composition = new Composition({
    cwd: project.dir,
    home: project.home,
    // the soak wrote this project itself: it trusts its own code, as an application does
    trust: true,
  })
  // measured once the composition is up (its modules loaded, the server connected)
  let before = 0
  let heapBefore = 0
  let peak = 0
  const rounds: number[] = []
  const pids = new Set<number>()
  const poller = setInterval(
    () =>
      composition
        .get('mcp')
        ?.list()
        .forEach((s) => s.pid && pids.add(s.pid)),
    10,
  )
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20)
  try {
    await within('floods', deadlineMs - 10_000, run())
  } catch (err) {
    t.problem(`the scenario did not finish: ${(err as Error).message}`)
  }
  await t.drain(5000)
  try {
    await within('closing the composition', 15_000, composition.close())
  } catch (err) {
    t.problem((err as Error).message)
  }
  clearInterval(sampler)
  clearInterval(poller)
  await orphanCheck(t, pids, project.dir, 5000)
  reap(t.orphans)
  const heapAfter = await held()
  const after = process.memoryUsage().rss
  t.notes.push(
    `rss before ${mib(before)} peak ${mib(peak)} after ${mib(after)}`,
    `heap+buffers before ${mib(heapBefore)} rounds ${rounds.map(mib).join(' ')} after close ${mib(heapAfter)}`,
  )
  t.expect(
    heapAfter - heapBefore < HELD_GROWTH_LIMIT,
    `the JS heap and buffers grew by ${mib(heapAfter - heapBefore)} after the floods (limit ${mib(HELD_GROWTH_LIMIT)})`,
  )
  if (rounds.length === 3)
    t.expect(
      rounds[2]! - rounds[0]! < ROUND_GROWTH_LIMIT,
      `the JS heap and buffers grew by ${mib(rounds[2]! - rounds[0]!)} from the first round of floods to the third`,
    )
  t.expect(
    after - before < RSS_GROWTH_LIMIT,
    `RSS grew by ${mib(after - before)} after the floods (limit ${mib(RSS_GROWTH_LIMIT)})`,
  )
  t.expect(
    peak - before < RSS_PEAK_LIMIT,
    `RSS peaked ${mib(peak - before)} over its start (limit ${mib(RSS_PEAK_LIMIT)})`,
  )
  project.cleanup()
  return t.report()

  async function run() {
    const started = await composition.start()
    t.expect(started.ok, `the first load failed: ${started.errors.map((e) => e.message)}`)
    const rt = composition.runtime!
    const hub = composition.get('mcp')!
    const flood = () => hub.list().find((s) => s.name === 'flood')
    const missing = EXEC_TOOLS.filter((name) => !rt.list().some((tool) => tool.name === name))
    t.expect(!missing.length, `the package's tools did not load: ${missing}`)
    t.expect(
      await until(() => flood()?.state === 'connected', 20_000),
      `the flood server never connected: ${flood()?.detail}`,
    )
    heapBefore = await held()
    before = peak = process.memoryUsage().rss
    const check = (key: string, result: ToolResult | undefined) => {
      const want = EXPECT[key]!
      if (!result) return
      const status =
        typeof want.status === 'string'
          ? result.status === want.status
          : want.status.test(result.status)
      // the error message, and the start of the content (where a tool's own error text is)
      const message = [
        result.error?.message ?? '',
        ...result.content.map((c) => (c.type === 'text' ? c.text.slice(0, 500) : '')),
      ].join(' ')
      t.expect(
        !want.spilled || !!result.truncated?.spilled,
        `${key}: the output over the limit was not spilled to a file`,
      )
      t.expect(
        !want.ms || result.durationMs < want.ms,
        `${key} took ${Math.round(result.durationMs)} ms (at most ${want.ms})`,
      )
      t.expect(
        status && (!want.message || want.message.test(message)),
        `${key} ended ${result.status}${message.trim() ? `: ${message.trim().slice(0, 200)}` : ''}`,
      )
    }
    const call = (key: string, name: string, args: Record<string, unknown> = {}) =>
      t.track(key, () => rt.call(name, args)).then((result) => check(key, result))
    // the executable floods, two at a time (two cores), three rounds
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < EXEC_TOOLS.length; i += 2)
        await Promise.all(EXEC_TOOLS.slice(i, i + 2).map((name) => call(name, name)))
      rounds.push(await held())
    }
    // the MCP server's stderr, while calls go on beside it
    await Promise.all([
      call('mcp__flood__stderr_flood', 'mcp__flood__stderr_flood', { mb: 256 }),
      call('mcp__flood__stderr_blob', 'mcp__flood__stderr_blob', { mb: 256 }),
      ...Array.from({ length: 20 }, (_, i) =>
        call('mcp__flood__echo', 'mcp__flood__echo', { text: String(i) }),
      ),
    ])
    // under the message cap: an ok result, cut to the output limit with the rest spilled
    await call('mcp__flood__big_ok', 'mcp__flood__big', { mb: 4 })
    // over the cap: the connection ends, naming it; then a garbage line; each time it reconnects
    for (const [key, mb] of [
      ['mcp__flood__big', 20],
      ['mcp__flood__stdout_garbage', 20],
      ['mcp__flood__garbage_line', 0],
      ['mcp__flood__big', 64],
    ] as const) {
      const pid = flood()?.pid
      await call(key, key, { mb })
      t.expect(
        await until(() => flood()?.state === 'connected' && flood()?.pid !== pid, 20_000),
        `the flood server did not reconnect after ${key}: ${flood()?.detail}`,
      )
      await call('mcp__flood__echo', 'mcp__flood__echo', { text: 'back' })
    }
  }
}
