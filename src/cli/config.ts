/**
 * @module cli/config
 * `yoke config print [--explain]` shows the effective config (values from the environment
 * redacted), with --explain the file:line:col that set each value; `yoke config validate`
 * resolves everything a run would (plugins imported, configs checked) and lists every error.
 */
import type { ResolvedConfig } from '../config/resolve.ts'
import type { Position } from '../config/yaml.ts'
import type { YokeError } from '../errors.ts'
import { composeOptions, type ParsedArgs } from './args.ts'
import { defineCommand } from './command.ts'
import { color, displayPath, errorJson, formatError, printJson } from './output.ts'

// the config machinery loads when a command runs, not for `yoke --help`
async function resolveFor(args: ParsedArgs): Promise<ResolvedConfig> {
  const [{ Composition }, { resolveConfig }] = await Promise.all([
    import('../config/composer.ts'),
    import('../config/resolve.ts'),
  ])
  const composition = new Composition(composeOptions(args))
  return resolveConfig(composition.options, composition.loader)
}

function reportErrors(args: ParsedArgs, errors: YokeError[]): number {
  if (args.json) printJson({ ok: false, errors: errors.map(errorJson) })
  else
    process.stderr.write(
      errors.map((e) => formatError(e)).join('\n') +
        `\n${errors.length} error${errors.length > 1 ? 's' : ''}\n`,
    )
  return 2
}

export const configPrint = defineCommand({
  name: 'config print',
  summary: 'print the effective config; --explain shows where each value came from',
  usage: 'yoke config print [--explain] [common flags]',
  flags: {
    explain: { type: 'boolean', description: 'say beside each value which layer and line set it' },
  },
  examples: ['yoke config print --explain', 'yoke config print --set plugins.agent.enabled=true'],
  async run(args) {
    const resolved = await resolveFor(args)
    if (resolved.errors.length) return reportErrors(args, resolved.errors)
    const [{ pathKey }, { stringify }, { explainConfig }] = await Promise.all([
      import('../config/yaml.ts'),
      import('yaml'),
      import('../config/explain.ts'),
    ])
    const { origins } = resolved.merged
    const cwd = args.cwd ?? process.cwd()
    const where = (pos?: Position) =>
      pos
        ? pos.line
          ? `${displayPath(pos.file, cwd)}:${pos.line}:${pos.col}`
          : pos.file
        : undefined
    const explained = explainConfig(resolved, (file) => displayPath(file, cwd))
    if (args.json) {
      printJson({
        ok: true,
        preset: explained.preset,
        layers: explained.layers,
        config: explained.value,
        origins: args.explain ? explained.origins : undefined,
      })
      return 0
    }
    const lines = render(
      explained.value,
      [],
      args.explain ? (path) => where(origins.get(pathKey(path))) : () => undefined,
      (v) => stringify(v, { lineWidth: 0 }).trimEnd(),
    )
    if (args.explain) {
      const layers = resolved.stack.layers.map(
        (l, i) => `#   ${i + 1}. ${l.kind.padEnd(7)} ${displayPath(l.file, cwd)}`,
      )
      process.stdout.write(color.dim(['# layers, lowest first:', ...layers].join('\n')) + '\n')
    }
    process.stdout.write(lines.join('\n') + '\n')
    return 0
  },
})

export const configValidate = defineCommand({
  name: 'config validate',
  summary: 'check every layer, plugin and plugin config; list all errors with file:line:col',
  usage: 'yoke config validate [common flags]',
  examples: ['yoke config validate', 'yoke config validate --json --patch ./staging.yaml'],
  async run(args) {
    const resolved = await resolveFor(args)
    const errors = [
      ...resolved.errors,
      ...resolved.instances.flatMap((s) => (s.error ? [s.error] : [])),
    ]
    if (errors.length) return reportErrors(args, errors)
    const enabled = resolved.instances.filter((s) => s.enabled).length
    // valid, and still not all of it runs: what waits (for trust, a variable) is said on stderr
    const waiting = resolved.instances.filter((s) => s.enabled && s.waiting)
    const trust = waiting.filter((s) => s.untrusted)
    const notes = [
      ...(trust.length
        ? [
            `${trust.length === 1 ? '1 instance waits' : `${trust.length} instances wait`} for trust: ${trust.map((s) => s.key).join(', ')}; ${trust[0]!.waiting!.hint}`,
          ]
        : []),
      ...waiting
        .filter((s) => !s.untrusted)
        .map((s) => `${s.waiting!.message}; ${s.waiting!.hint}`),
    ]
    for (const note of notes)
      process.stderr.write(`${color.yellow('waiting', process.stderr)} ${note}\n`)
    if (args.json)
      printJson({
        ok: true,
        preset: resolved.stack.preset,
        layers: resolved.stack.layers.length,
        instances: resolved.instances.length,
        enabled,
        ...(waiting.length && {
          waiting: waiting.map((s) => ({
            instance: s.key,
            trust: s.untrusted === true,
            ...errorJson(s.waiting),
          })),
        }),
      })
    else
      process.stdout.write(
        `${color.green('valid')}: ${enabled} of ${resolved.instances.length} instances enabled, ${resolved.stack.layers.length} layers (preset ${displayPath(resolved.stack.preset, args.cwd ?? process.cwd())})\n`,
      )
    return 0
  },
})

/** Block YAML, one leaf per line so each can carry its origin as a comment. */
function render(
  value: unknown,
  path: Array<string | number>,
  origin: (path: Array<string | number>) => string | undefined,
  yamlScalar: (v: unknown) => string,
  indent = '',
): string[] {
  const scalar = (v: unknown) =>
    typeof v === 'string' && v.includes('\n') ? JSON.stringify(v) : yamlScalar(v)
  const note = (p: Array<string | number>) => {
    const o = origin(p)
    return o ? `  ${color.dim('# ' + o)}` : ''
  }
  const lines: string[] = []
  const entries: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : Object.entries(value as object)
  for (const [key, v] of entries) {
    const p = [...path, key]
    const head = Array.isArray(value) ? `${indent}-` : `${indent}${scalar(key)}:`
    const isEmpty = v && typeof v === 'object' && Object.keys(v).length === 0
    if (v && typeof v === 'object' && !isEmpty) {
      lines.push(head + note(p), ...render(v, p, origin, yamlScalar, indent + '  '))
    } else {
      lines.push(`${head} ${scalar(v)}${note(p)}`)
    }
  }
  return lines
}
