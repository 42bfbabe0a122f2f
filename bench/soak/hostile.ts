/**
 * Hostile files: while a composition runs (watching its files, as `yoke dev` does) and callers
 * keep calling its tool, the project config — and then the user patch — is replaced by a FIFO
 * with no writer, a 1 GiB file, a symlink to /dev/zero, broken YAML, a YAML alias bomb and binary
 * bytes; then the plugin's module is replaced by a FIFO, a 1 GiB file, a syntax error and binary
 * bytes. Expected: each reload ends (bounded) and is rejected with an error, the running
 * generation keeps serving every call (all ok, 0 UNKNOWN_TOOL), and the good config written after
 * each is applied.
 */
import { execFileSync } from 'node:child_process'
import {
  closeSync,
  constants,
  lstatSync,
  openSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { Composition } from '../../src/index.ts'
import { tempProject } from '../../test/helpers/project.ts'
import { mib, probe, sleep, Tracker, within, type Report } from './track.ts'

const PLUGIN = `export default { name: 'echo', inject: ['runtime'], apply(ctx, config) {
  ctx.runtime.register({ name: 'echo', inputSchema: { type: 'object' }, concurrency: 'safe',
    execute: () => new Promise((resolve) => setTimeout(() => resolve('v' + config.version), 2)) })
} }\n`
// what one hostile file may cost this process while it is refused
const LAG_LIMIT_MS = 750
const RSS_LIMIT = 256 * 1024 * 1024

const config = (version: number) =>
  `preset: base\nplugins:\n  echo:\n    use: ./echo.mjs\n    config: { version: ${version} }\n`

// nine levels of nine aliases: 9^9 strings if expanded
const BOMB = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((k, i) => {
    const p = `*${'abcdefghi'[i]}`
    return `${k}: &${k} [${Array(9).fill(p).join(',')}]`
  }),
  'plugins: { echo: { use: ./echo.mjs, config: { version: 1, lol: *i } } }',
].join('\n')

/**
 * Puts what `make` makes at `file` in one rename, as editors save: the watcher never sees the
 * file missing (a deleted project config is a real change, not a rejected one).
 */
function swap(file: string, make: (path: string) => void) {
  const tmp = join(dirname(file), `.soak-${process.pid}.tmp`)
  rmSync(tmp, { force: true })
  make(tmp)
  renameSync(tmp, file)
}
const replace = (file: string, data: string) => swap(file, (path) => writeFileSync(path, data))

/** Each hostile thing, as a function that puts it at `file`. */
const HOSTILE: Array<[string, (file: string) => void]> = [
  ['a FIFO with no writer', (file) => execFileSync('mkfifo', [file])],
  ['a 1 GiB file', (file) => (closeSync(openSync(file, 'w')), truncateSync(file, 1024 ** 3))],
  ['a symlink to /dev/zero', (file) => symlinkSync('/dev/zero', file)],
  [
    'broken YAML',
    (file) =>
      writeFileSync(file, 'preset: base\nplugins:\n  echo: { use: ./echo.mjs, config: [unclosed\n'),
  ],
  ['a YAML alias bomb', (file) => writeFileSync(file, BOMB)],
  ['binary bytes', (file) => writeFileSync(file, Buffer.from([0, 0xff, 0xfe, 7, 0, 1, 2, 0x1b]))],
]

/** Lets a reader stuck opening a FIFO go on (it reads EOF); nothing when none waits. */
function releaseFifo(file: string) {
  try {
    if (!lstatSync(file).isFIFO()) return
    closeSync(openSync(file, constants.O_WRONLY | constants.O_NONBLOCK))
  } catch {}
}

export async function hostile(deadlineMs: number): Promise<Report> {
  const t = new Tracker('hostile files', 10_000)
  const project = tempProject({ 'echo.mjs': PLUGIN, 'yoke.config.yaml': config(0) })
  const composition = new Composition({
    cwd: project.dir,
    home: project.home,
    // the soak wrote this project itself: it trusts its own code, as an application does
    trust: true,
    importTimeoutMs: 3000,
  })
  let rejected = 0
  let worstLag = 0
  let worstRss = 0
  let stop = false
  const callers: Promise<void>[] = []
  try {
    await within('hostile files', deadlineMs - 10_000, run())
  } catch (err) {
    t.problem(`the scenario did not finish: ${(err as Error).message}`)
  }
  stop = true
  for (const file of ['yoke.config.yaml', '.home/patch.yaml', 'echo.mjs'].map(project.path))
    releaseFifo(file)
  await within('the callers', 10_000, Promise.all(callers)).catch((err) => t.problem(err.message))
  await t.drain(5000)
  try {
    await within('closing the composition', 10_000, composition.close())
  } catch (err) {
    t.problem((err as Error).message)
  }
  project.cleanup()
  t.notes.push(
    `reloads rejected ${rejected}/${HOSTILE.length * 2 + 4}`,
    `worst event-loop stall ${worstLag} ms`,
    `worst RSS rise ${mib(worstRss)}`,
  )
  return t.report()

  async function run() {
    const started = await composition.start()
    t.expect(started.ok, `the first load failed: ${started.errors.map((e) => e.message)}`)
    await composition.watch()
    const rt = composition.runtime!
    let version = 0
    let stale = 0
    // callers all along: the tool must answer, from whichever good version is running
    for (let i = 0; i < 4; i++)
      callers.push(
        (async () => {
          for (let n = 0; !stop; n++) {
            const result = await t.track(`echo-${i}#${n}`, () => rt.call('echo', {}))
            if (result && !result.ok)
              t.problem(`echo-${i}#${n} ended ${result.status}: ${result.error?.message}`)
            await sleep(5)
          }
        })(),
      )
    // refusing a file must not stall the calls running beside it, nor fill memory
    const cost = (what: string, rss: number, seen: { lagMs: number; rssPeak: number }) => {
      worstLag = Math.max(worstLag, seen.lagMs)
      worstRss = Math.max(worstRss, seen.rssPeak - rss)
      t.expect(
        seen.lagMs < LAG_LIMIT_MS,
        `${what}: the event loop was blocked ${seen.lagMs} ms while it was refused (limit ${LAG_LIMIT_MS})`,
      )
      t.expect(
        seen.rssPeak - rss < RSS_LIMIT,
        `${what}: RSS rose ${mib(seen.rssPeak - rss)} while it was refused (limit ${mib(RSS_LIMIT)})`,
      )
    }
    const answers = async () => {
      const result = await t.track('echo-check', () => rt.call('echo', {}))
      return result?.content[0]?.type === 'text' ? result.content[0].text : result?.status
    }
    for (const [layer, file] of [
      ['project config', project.path('yoke.config.yaml')],
      ['user patch', join(project.home, 'patch.yaml')],
    ] as const) {
      for (const [what, make] of HOSTILE) {
        swap(file, make)
        const rss = process.memoryUsage().rss
        const watching = probe()
        let event
        try {
          event = await within(
            `the reload after ${what} as the ${layer}`,
            10_000,
            composition.reload([file]),
          )
        } catch (err) {
          t.problem((err as Error).message)
          releaseFifo(file)
          continue
        }
        if (!event.ok) rejected++
        cost(`${what} as the ${layer}`, rss, watching())
        if (process.env.SOAK_VERBOSE)
          console.log(
            `  ${what} as the ${layer}: ${event.errors.map((e) => `${e.code} ${e.message}`)}`,
          )
        t.expect(
          !event.ok && event.errors.length > 0,
          `${what} as the ${layer}: the reload was not rejected (ok ${event.ok}, restarted [${event.restarted}], removed [${event.removed}])`,
        )
        const now = await answers()
        if (now !== `v${version}`) stale++
        t.expect(now === `v${version}`, `after ${what} as the ${layer} the tool answers ${now}`)
        // a good file again: applied
        version++
        if (layer === 'project config') replace(file, config(version))
        else {
          replace(project.path('yoke.config.yaml'), config(version))
          replace(file, 'plugins: {}\n')
        }
        const good = await within(
          `the reload after ${what} was fixed`,
          10_000,
          composition.reload([file, project.path('yoke.config.yaml')]),
        ).catch((err) => (t.problem(err.message), undefined))
        t.expect(
          !!good?.ok,
          `the good config after ${what} as the ${layer} was not applied: ${good?.errors.map((e) => e.message)}`,
        )
        // the watcher may still be reloading the same change: wait for it to come round
        for (let i = 0; i < 50 && (await answers()) !== `v${version}`; i++) await sleep(20)
        const fixed = await answers()
        t.expect(fixed === `v${version}`, `after fixing ${what} the tool answers ${fixed}`)
      }
    }
    // the plugin's own module: the changed instance must keep its old code running
    const module = project.path('echo.mjs')
    for (const [what, make] of [
      HOSTILE[0]!,
      HOSTILE[1]!,
      ['a syntax error', (file: string) => writeFileSync(file, 'export default {{{\n')],
      ['binary bytes', HOSTILE[5]![1]],
    ] as Array<[string, (file: string) => void]>) {
      swap(module, make)
      const rss = process.memoryUsage().rss
      const watching = probe()
      const event = await within(
        `the reload after ${what} as the plugin module`,
        15_000,
        composition.reload([module]),
      ).catch((err) => (t.problem(err.message), releaseFifo(module), undefined))
      cost(`${what} as the plugin module`, rss, watching())
      if (event && (!event.ok || event.failed.length)) rejected++
      if (event && process.env.SOAK_VERBOSE)
        console.log(
          `  ${what} as the module: ok ${event.ok} ${[...event.errors, ...event.failed.map((f) => f.error)].map((e) => `${e.code} ${e.message}`)}`,
        )
      t.expect(
        !event || !event.ok || event.failed.length > 0,
        `${what} as the plugin module: the reload did not report a failure`,
      )
      const now = await answers()
      t.expect(now === `v${version}`, `after ${what} as the plugin module the tool answers ${now}`)
      swap(module, (path) => writeFileSync(path, PLUGIN + `// ${what}\n`))
      await within('the reload after the module was fixed', 15_000, composition.reload([module]))
      const fixed = await answers()
      t.expect(fixed === `v${version}`, `after fixing the module the tool answers ${fixed}`)
    }
    t.notes.push(`stale answers ${stale}`)
    t.expect(t.status('UNKNOWN_TOOL') === 0, `${t.status('UNKNOWN_TOOL')} calls saw UNKNOWN_TOOL`)
  }
}
