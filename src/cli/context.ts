/**
 * @module cli/context
 * The CommandContext every command's `run` gets: composing once, asking the running dev through
 * the control socket, reading the configured instances, and editing the project config in place.
 */
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Composition } from '../config/composer.ts'
import type { ControlAnswer } from '../kernel/types.ts'
import { loadLayers } from '../config/layers.ts'
import { mergeLayers } from '../config/merge.ts'
import { baseOf, resolveUse } from '../config/modules.ts'
import { trustGate } from '../config/trust.ts'
import { pathKey } from '../config/yaml.ts'
import { YokeError } from '../errors.ts'
import { composeOptions } from './args.ts'
import type { CommandContext, ConfiguredInstance, LiveOptions, ParsedArgs } from './command.ts'
import { ask, socketPath, type Reply } from './control.ts'
import { logLevelOf, passes } from './logs.ts'
import { color, errorJson, formatError, logLine, printJson, progress } from './output.ts'
import { waitingInstances, waitingLines } from './waiting.ts'

export function commandContext(args: ParsedArgs): CommandContext {
  const options = composeOptions(args)
  const json = Boolean(args.json)
  /** the layer flags ask for other layers than a running dev has: it cannot answer for them */
  const otherLayers = Boolean(args.preset || args.patch?.length || args.set?.length)

  /** The dev running this project's layers, asked for `name`; `none` for other layers or no dev. */
  const askDev = async (
    name: string,
    request: Record<string, unknown>,
    conversation: LiveOptions = {},
  ): Promise<Reply> => {
    if (otherLayers) return { status: 'none' }
    const { projectDir, projectFile } = await loadLayers(options)
    return ask(socketPath(projectDir, projectFile), { ...request, cmd: name }, conversation)
  }

  const cli: CommandContext = {
    cwd: options.cwd,
    json,
    options,

    async compose(work, { quiet = false, sets = [], strict = false } = {}) {
      progress('composing…')
      const { Composition } = await import('../config/composer.ts')
      const composition = new Composition({
        ...options,
        sets: [...(options.sets ?? []), ...sets],
        runMode: 'once',
      })
      const threshold = logLevelOf(args['log-level'], quiet ? 'error' : 'warn')
      composition.kernel.hooks.log.tap('yoke', (r) => {
        if (passes(r.level, threshold)) process.stderr.write(logLine(r))
      })
      try {
        const event = await composition.start()
        if (!event.ok) {
          if (json) printJson({ ok: false, errors: event.errors.map(errorJson) })
          else process.stderr.write(event.errors.map((e) => formatError(e)).join('\n') + '\n')
          return 2
        }
        // an instance that failed or waits is said on stderr, whatever the command prints on stdout
        const failed = failures(composition)
        for (const error of failed) process.stderr.write(formatError(error) + '\n')
        const waiting = waitingInstances(composition)
        for (const line of waitingLines(composition, waiting))
          process.stderr.write(`${color.yellow('waiting', process.stderr)} ${line}\n`)
        const code = await work(composition)
        // strict: the answer is incomplete when an instance failed, or waits for trust (what
        // waits for trust is the project's own tools: local plugins, packages, servers)
        const incomplete = failed.length || waiting.some((w) => w.trust)
        return strict && incomplete ? Math.max(code, 1) : code
      } finally {
        await composition.close()
      }
    },

    async live(name, request, conversation) {
      const reply = await askDev(name, (request ?? {}) as Record<string, unknown>, conversation)
      if (reply.status === 'error') throw reply.error
      // the answer of the plugin that declares the control's type (unknown for an undeclared one)
      return reply.status === 'ok' ? (reply.answer as ControlAnswer<typeof name>) : undefined
    },

    async control(name, request, { fresh = false } = {}) {
      const asked = (request ?? {}) as Record<string, unknown>
      const live: Reply = fresh ? { status: 'none' } : await askDev(name, asked)
      if (live.status === 'error') throw live.error // the dev answered: its error is the answer
      // an answer crossed the socket or came from the plugin that declares the control's type
      type Answer = ControlAnswer<typeof name>
      if (live.status === 'ok')
        return { answer: live.answer as Answer, source: 'live from yoke dev' }
      let reply: { answer: Answer; source: 'composed now' } | undefined
      const code = await cli.compose(
        async (composition) => {
          const answer = (await composition.kernel.ask(name, asked)) as Answer
          reply = { answer, source: 'composed now' }
          return 0
        },
        { quiet: true },
      )
      return reply ?? code
    },

    async projectDir() {
      return (await loadLayers(options)).projectDir
    },

    async instances() {
      const stack = await loadLayers({ ...options, check: false })
      if (stack.errors.length) throw stack.errors[0]
      const merged = mergeLayers(stack.layers)
      const plugins = (merged.value.plugins ?? {}) as Record<string, Record<string, unknown> | null>
      const untrusted = trustGate(options, stack, merged)
      return Object.entries(plugins)
        .filter(([, entry]) => entry && typeof entry.use === 'string')
        .map(([key, entry]): ConfiguredInstance => {
          const use = entry!.use as string
          const origin = merged.origins.get(pathKey(['plugins', key, 'use']))?.file
          let target: ReturnType<typeof resolveUse> | undefined
          try {
            target = resolveUse(use, baseOf(origin, stack.projectDir), stack.projectDir)
          } catch {
            target = undefined // composing reports it
          }
          const enabled = entry!.enabled !== false
          const instance = { key, use, enabled, config: entry!.config, file: target?.file }
          // a local module or a package the untrusted project brings is not imported (src/config/trust.ts)
          const local = target?.kind === 'local'
          const spec = { key, use, enabled, raw: {}, site: {}, local }
          if (target && target.kind !== 'builtin' && untrusted(spec, local))
            return { ...instance, untrusted: true }
          return instance
        })
    },

    async editConfig(edit) {
      const stack = await loadLayers(options)
      // the file that was found, even when it did not load: a new one beside it would shadow it
      const projectDir = stack.projectFile ? stack.projectDir : packageRoot(stack.projectDir)
      const file = stack.projectFile ?? join(projectDir, 'yoke.config.yaml')
      // .yokerc and the like are read as YAML; a .json one would not survive a YAML edit
      if (/\.json$/.test(file))
        throw new YokeError('USAGE', {
          reason: `only YAML configs are edited; ${file} is not one: add the entry by hand`,
        })
      const { editYamlFile } = await import('./edit.ts') // proper-lockfile, write-file-atomic, yaml
      const { keepingTrust } = await import('./trust.ts')
      // the user's own edit (yoke mcp add, pin, withdraw…): a trusted project stays trusted
      const { result } = await keepingTrust(
        options,
        () => editYamlFile(file, (doc, target) => edit(doc, target, projectDir)),
        [file],
      )
      return result
    },
  }
  return cli
}

/**
 * Where a new project config goes: the nearest directory up with a package.json (where the search
 * for one stops, so a dev anywhere in the package finds it), else `dir` itself.
 */
function packageRoot(dir: string): string {
  for (let at = dir; at !== dirname(at); at = dirname(at))
    if (['package.json', 'package.yaml'].some((f) => existsSync(join(at, f)))) return at
  return dir
}

/** The configured instances that failed to start (a module that did not load, an apply that threw). */
function failures(composition: Composition): YokeError[] {
  return [...composition.reconciler.running.values()].flatMap(({ spec, fiber }) => {
    if (!spec.enabled) return []
    const error = fiber ? (fiber.state === 'failed' ? fiber.error : undefined) : spec.error
    return error ? [error] : []
  })
}
