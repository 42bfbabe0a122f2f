/**
 * @module cli/dev
 * `yoke dev`: runs the composed harness with hot reload; prints what loaded, a summary once it is
 * ready (cli/summary), and every reload; `--events json` writes one JSON object per line (loaded,
 * reload, error, state, log, ready, stopped) instead.
 * It answers `yoke inspect` and every control plugins register (`ctx.control`) on a control socket,
 * and shuts down cleanly on SIGINT/SIGTERM.
 */
import type { Composition, ReloadEvent, ReloadOptions } from '../config/composer.ts'
import { YokeError } from '../errors.ts'
import type { FiberInfo } from '../kernel/types.ts'
import type { LogRecord } from '../kernel/kernel.ts'
import { composeOptions } from './args.ts'
import { defineCommand } from './command.ts'
import { listen, socketPath } from './control.ts'
import { pluginChecks } from './doctor.ts'
import { inspectSections } from './inspect.ts'
import { color, displayPath, errorJson, formatError, printJson } from './output.ts'
import { stopSignal } from './signals.ts'
import { summary } from './summary.ts'
import { offerTrust } from './trust.ts'
import { liveCall, toolRows } from './tools.ts'
import { waitingInstances, waitingJson, waitingLines } from './waiting.ts'
import { logFileOf, logLevelOf, logWriter, passes } from './logs.ts'

export const dev = defineCommand({
  name: 'dev',
  summary: 'run the composed harness with hot reload; --events json streams JSON lines',
  usage: 'yoke dev [--events json|text] [common flags]',
  flags: {
    events: {
      type: 'string',
      value: 'json|text',
      description: 'how events are printed (default text; --json means json)',
    },
  },
  examples: ['yoke dev --config config/yoke.yaml', 'yoke dev --events json | jq .type'],
  async run(args) {
    const format = args.events ?? (args.json ? 'json' : 'text')
    if (format !== 'json' && format !== 'text')
      throw new YokeError('USAGE', { reason: `--events takes json or text, not "${format}"` })
    const json = format === 'json'
    const cwd = args.cwd ?? process.cwd()
    const [{ Composition }, { snapshot }] = await Promise.all([
      import('../config/composer.ts'),
      import('./snapshot.ts'),
    ])
    const composition = new Composition({ ...composeOptions(args), command: 'dev' })
    const { kernel } = composition
    const time = () => color.dim(new Date().toTimeString().slice(0, 8))

    // events as JSON carry every record unless told otherwise; the terminal shows info and up
    const threshold = logLevelOf(args['log-level'], json ? 'debug' : 'info')
    // every record also goes to the project's log file, which yoke logs reads
    const writeLog = logWriter(
      () => logFileOf(composition.project.dir),
      (message) => process.stderr.write(`${color.yellow('warn', process.stderr)} ${message}\n`),
    )
    kernel.hooks.log.tap('yoke dev', (record: LogRecord) => {
      writeLog(record)
      if (!passes(record.level, threshold)) return
      if (json)
        return printJson({
          type: 'log',
          level: record.level,
          instance: record.fiber?.key,
          message: record.message,
          error: record.error ? errorJson(record.error) : undefined,
        })
      const who = record.fiber ? `${record.fiber.key}: ` : ''
      const text =
        record.error instanceof YokeError ? formatError(record.error) : `${who}${record.message}`
      process.stderr.write(
        `${time()} ${record.level === 'error' ? color.red('error', process.stderr) : record.level === 'warn' ? color.yellow('warn', process.stderr) : record.level} ${text}\n`,
      )
    })
    kernel.hooks.state.tap('yoke dev', (fiber: FiberInfo) => {
      if (json)
        printJson({
          type: 'state',
          instance: fiber.key,
          plugin: fiber.plugin.name,
          fiber: fiber.id,
          state: fiber.state,
          error: fiber.error ? errorJson(fiber.error) : undefined,
        })
    })
    composition.hooks.reload.tap('yoke dev', (event: ReloadEvent) => {
      if (json) {
        const { errors, failed, ...rest } = event
        printJson({
          ...rest,
          errors: errors.map(errorJson),
          failed: failed.map((f) => ({ instance: f.instance, error: errorJson(f.error) })),
          instances: instanceStates(composition),
        })
        for (const error of [...errors, ...failed.map((f) => f.error)])
          printJson({ type: 'error', ...errorJson(error) })
        return
      }
      printReload(composition, event, cwd, time())
    })

    // signals are heard from here on, whatever a plugin's summary section does
    const signal = stopSignal()
    const stop = signal.stopped.then(() => undefined)
    try {
      const first = await composition.start()
      await composition.watch()
      // on a terminal, a project whose own code waits for trust is asked about once
      if (!json && first.ok && process.stdin.isTTY && process.stderr.isTTY)
        await Promise.race([offerTrust(composition), stop])
      if (!first.ok && json) printJson({ type: 'waiting', reason: 'the config does not load' })
      if (!first.ok && !(await fixed(composition, stop))) {
        await composition.close()
        return 2
      }
      const { stack } = composition.current!
      const stopControl = await listen(
        socketPath(stack.projectDir, stack.projectFile),
        async ({ cmd, ...request }, session) => {
          if (cmd === 'inspect')
            return {
              ...(await snapshot(composition)),
              sections: await inspectSections(composition),
            }
          if (cmd === 'reload') return reloadControl(composition, request)
          if (cmd === 'tools-list') return toolRows(composition)
          if (cmd === 'doctor') return pluginChecks(composition)
          if (cmd === 'waiting') {
            const waiting = waitingInstances(composition)
            return { lines: waitingLines(composition, waiting), waiting: waitingJson(waiting) }
          }
          if (cmd === 'tools-call') return liveCall(composition, request, session)
          return kernel.ask(cmd, request)
        },
      ).catch((err) => {
        // no socket (another dev holds it, a read-only tmp): this dev runs on; commands compose their own copy
        process.stderr.write(
          `${color.yellow('warn', process.stderr)} commands cannot reach this dev: ${err instanceof YokeError && err.code === 'CONTROL_CONFLICT' ? 'another yoke dev runs this project and answers them' : (err as Error).message}\n`,
        )
        return undefined
      })
      if (!json) {
        process.stdout.write(await summary(composition, await snapshot(composition), cwd))
        process.stdout.write(
          `${time()} ${color.green('ready')} in ${(performance.now() / 1000).toFixed(1)} s ${color.dim('· watching for changes · yoke inspect shows more · Ctrl-C to stop')}\n`,
        )
      } else printJson({ type: 'ready', pid: process.pid })

      await stop
      await stopControl?.()
      try {
        await composition.close()
      } catch (err) {
        if (json) printJson({ type: 'error', ...errorJson(err) })
        else process.stderr.write(formatError(err) + '\n')
        return 1
      }
      if (json) printJson({ type: 'stopped' })
      return 0
    } finally {
      signal.dispose()
    }
  },
})

/** The first load failed: its files are watched; true once an edit fixes it, false on a signal. */
/**
 * The reload control (`{ cmd: 'reload', holdOnCacheImpact?, refuseIfBusy?, addPlugins? }`): the
 * reload's event with the `capabilities` a caller tests; a refusal (RELOAD_BUSY) is its error.
 */
async function reloadControl(composition: Composition, request: Record<string, unknown>) {
  const flag = (name: 'holdOnCacheImpact' | 'refuseIfBusy') => {
    const value = request[name]
    if (value === undefined || typeof value === 'boolean') return value
    throw new YokeError('USAGE', { reason: `reload: ${name} is true or false, not ${value}` })
  }
  const add = request.addPlugins
  if (add !== undefined && (typeof add !== 'object' || add === null || Array.isArray(add)))
    throw new YokeError('USAGE', { reason: 'reload: addPlugins maps instance keys to entries' })
  const options: ReloadOptions = {
    holdOnCacheImpact: flag('holdOnCacheImpact'),
    refuseIfBusy: flag('refuseIfBusy'),
    addPlugins: add as ReloadOptions['addPlugins'],
  }
  const event = await composition.reload(['(requested)'], options)
  if (!event.ok && event.busy) throw event.errors[0]
  return { ...event, capabilities: composition.reloadCapabilities }
}

function fixed(composition: Composition, stop: Promise<void>): Promise<boolean> {
  const loaded = new Promise<boolean>((resolve) =>
    composition.hooks.reload.tap('yoke dev: waiting for a fix', (event) => {
      if (event.ok) resolve(true)
    }),
  )
  return Promise.race([loaded, stop.then(() => false)])
}

function instanceStates(composition: Composition) {
  return [...composition.reconciler.running].map(([key, { spec, fiber }]) => ({
    key,
    plugin: spec.module?.plugin.name,
    state: !spec.enabled ? 'disabled' : (fiber?.state ?? 'failed'),
    fiber: fiber?.id,
  }))
}

function printReload(composition: Composition, event: ReloadEvent, cwd: string, time: string) {
  const out = event.ok ? process.stdout : process.stderr
  const files = event.trigger.map((f) => displayPath(f, cwd)).join(', ')
  if (!event.ok) {
    out.write(
      `${time} ${color.red(event.type === 'loaded' ? 'config invalid' : 'reload rejected', out)}${files ? ` (${files})` : ''}: ${event.type === 'loaded' || !composition.current ? 'waiting for a fix (Ctrl-C to stop)' : 'the running generation is kept'}\n`,
    )
    for (const error of event.errors) out.write(formatError(error, out) + '\n')
    return
  }
  const head = event.type === 'loaded' ? 'loaded' : `reload${files ? ` (${files})` : ''}`
  if (event.held) {
    const impact = (event.cacheImpact ?? []).map((i) => `${i.instance} (${i.why})`).join(', ')
    const busy = event.busy?.join(', ') || 'the turns in flight'
    out.write(
      `${time} ${color.yellow(head, out)}: held until ${busy} end${impact ? `: it would alter the model's cached prompt: ${impact}` : ''}\n`,
    )
    return
  }
  const parts = [
    event.added.length && `added ${event.added.join(', ')}`,
    event.removed.length && `removed ${event.removed.join(', ')}`,
    event.restarted.length && `restarted ${event.restarted.join(', ')}`,
    event.failed.length && color.red(`failed ${event.failed.map((f) => f.instance).join(', ')}`),
  ].filter(Boolean)
  out.write(
    `${time} ${color.cyan(head)}: ${parts.join(' · ') || 'nothing changed'} ${color.dim(`· ${event.durationMs} ms`)}\n`,
  )
  for (const { error } of event.failed) process.stderr.write(formatError(error) + '\n')
}
