/**
 * @module cli/context
 * The CommandContext every command's `run` gets: composing once, asking the running dev through
 * the control socket, reading the configured instances, and editing the project config in place.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isMap, parseDocument, type Document } from 'yaml'
import { Composition } from '../config/composer.ts'
import { loadLayers } from '../config/layers.ts'
import { mergeLayers } from '../config/merge.ts'
import { resolveUse } from '../config/modules.ts'
import { baseOf } from '../config/resolve.ts'
import { pathKey } from '../config/yaml.ts'
import { YokeError } from '../errors.ts'
import { composeOptions } from './args.ts'
import type { CommandContext, ConfiguredInstance, ParsedArgs } from './command.ts'
import { ask, socketPath } from './control.ts'
import { errorJson, formatError, printJson, progress } from './output.ts'

export function commandContext(args: ParsedArgs): CommandContext {
  const options = composeOptions(args)
  const json = Boolean(args.json)
  /** the layer flags ask for other layers than a running dev has: it cannot answer for them */
  const otherLayers = Boolean(args.preset || args.patch?.length || args.set?.length)

  const cli: CommandContext = {
    cwd: options.cwd,
    json,
    options,

    async compose(work, { quiet = false, sets = [] } = {}) {
      progress('composing…')
      const composition = new Composition({
        ...options,
        sets: [...(options.sets ?? []), ...sets],
        runMode: 'once',
      })
      composition.kernel.hooks.log.tap('yoke', (r) => {
        if (r.level === 'error' || (r.level === 'warn' && !quiet))
          process.stderr.write(`${r.level} ${r.fiber ? `${r.fiber.key}: ` : ''}${r.message}\n`)
      })
      try {
        const event = await composition.start()
        if (!event.ok) {
          if (json) printJson({ ok: false, errors: event.errors.map(errorJson) })
          else process.stderr.write(event.errors.map((e) => formatError(e)).join('\n') + '\n')
          return 2
        }
        return await work(composition)
      } finally {
        await composition.close()
      }
    },

    async live(name, request = {}) {
      if (otherLayers) return undefined
      const { projectDir } = await loadLayers(options)
      return ask(socketPath(projectDir), { ...request, cmd: name })
    },

    async control(name, request = {}, { fresh = false } = {}) {
      const answer = fresh ? undefined : await cli.live(name, request)
      if (answer !== undefined) return { answer, source: 'live from yoke dev' }
      let reply: { answer: unknown; source: 'composed now' } | undefined
      const code = await cli.compose(
        async (composition) => {
          reply = { answer: await composition.kernel.ask(name, request), source: 'composed now' }
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
      const stack = await loadLayers(options)
      if (stack.errors.length) throw stack.errors[0]
      const merged = mergeLayers(stack.layers)
      const plugins = (merged.value.plugins ?? {}) as Record<string, Record<string, unknown> | null>
      return Object.entries(plugins)
        .filter(([, entry]) => entry && typeof entry.use === 'string')
        .map(([key, entry]): ConfiguredInstance => {
          const use = entry!.use as string
          const origin = merged.origins.get(pathKey(['plugins', key, 'use']))?.file
          let file: string | undefined
          try {
            file = resolveUse(use, baseOf(origin, stack.projectDir), stack.projectDir).file
          } catch {
            file = undefined // composing reports it
          }
          return { key, use, enabled: entry!.enabled !== false, config: entry!.config, file }
        })
    },

    async editConfig(edit) {
      const stack = await loadLayers(options)
      const file =
        stack.layers.find((l) => l.kind === 'project')?.file ??
        join(stack.projectDir, 'yoke.config.yaml')
      if (existsSync(file) && !/\.ya?ml$/.test(file))
        throw new YokeError('USAGE', {
          reason: `only YAML configs are edited; ${file} is not one: add the entry by hand`,
        })
      const doc = parseDocument(existsSync(file) ? readFileSync(file, 'utf8') : '')
      if (doc.errors.length)
        throw new YokeError('CONFIG_SYNTAX', { reason: doc.errors[0]!.message }, { file })
      ensurePlugins(doc)
      const result = edit(doc, file)
      const temp = `${file}.${process.pid}.tmp`
      writeFileSync(temp, doc.toString())
      renameSync(temp, file)
      return { file, ...result }
    },
  }
  return cli
}

/** `plugins:` as a block mapping, so entries added to it read as the rest of the file. */
function ensurePlugins(doc: Document) {
  const plugins = doc.get('plugins')
  if (!isMap(plugins)) doc.set('plugins', doc.createNode({}))
  else if (plugins.flow && !plugins.items.length) plugins.flow = false
}
