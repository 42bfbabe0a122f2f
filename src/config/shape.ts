/**
 * @module config/shape
 * The shape of a layer (preset, project config, patch) and of the merged result, checked with
 * zod; each issue becomes a CONFIG_SHAPE error at the file:line:col of the offending key.
 */
import { z } from 'zod'
import { YokeError } from '../errors.ts'
import { didYouMean } from '../suggest.ts'
import { locate, pathKey, type Path, type Position } from './yaml.ts'

/** Instance keys are also path segments in `--set plugins.<key>…`, so no dots. */
export const INSTANCE_KEY = /^[A-Za-z0-9_-]{1,64}$/

const instance = z
  .object({
    use: z.string().min(1, 'use must name a plugin').optional(),
    config: z.record(z.string(), z.unknown()).nullable().optional(),
    enabled: z.boolean().optional(),
  })
  .strict()
  .nullable()

const layer = z
  .object({
    extends: z.union([z.string().min(1), z.array(z.string().min(1))]).optional(),
    preset: z.string().min(1).optional(),
    /** settings of the core tool runtime (timeouts, concurrency, output limits) */
    runtime: z.record(z.string(), z.unknown()).nullable().optional(),
    plugins: z
      .record(
        z.string().regex(INSTANCE_KEY, 'instance keys are 1-64 letters, digits, _ or -'),
        instance,
      )
      .nullable()
      .optional(),
  })
  .strict()

export type LayerDocument = z.infer<typeof layer>
export type InstanceEntry = NonNullable<z.infer<typeof instance>>

const KNOWN: Record<string, string[]> = {
  '': ['extends', 'preset', 'runtime', 'plugins'],
  instance: ['use', 'config', 'enabled'],
}

/** Keys that only some layers may hold: anywhere else they would be silently ignored. */
const ONLY_IN: Record<string, { kinds: string[]; reason: string }> = {
  extends: {
    kinds: ['preset'],
    reason: 'extends belongs in a preset; the project config chooses its preset with preset:',
  },
  preset: {
    kinds: ['project'],
    reason: 'preset: is read from the project config only; elsewhere use --preset',
  },
}

/** Checks one layer of the given kind; returns its errors located in its file. */
export function checkLayer(
  value: unknown,
  positions: Map<string, Position>,
  file: string,
  keys = positions,
  kind = 'preset',
): YokeError[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [
      new YokeError(
        'CONFIG_SHAPE',
        {
          reason: `a config layer must be a mapping (it is ${Array.isArray(value) ? 'a list' : typeof value})`,
        },
        { file, line: 1, col: 1 },
      ),
    ]
  }
  // x-… keys hold YAML anchors for reuse (as in docker compose); they are not config
  const result = layer.safeParse(
    Object.fromEntries(Object.entries(value).filter(([k]) => !k.startsWith('x-'))),
  )
  if (result.success) {
    return Object.entries(ONLY_IN)
      .filter(([key, rule]) => key in value && !rule.kinds.includes(kind))
      .map(
        ([key, rule]) =>
          new YokeError(
            'CONFIG_SHAPE',
            { reason: rule.reason },
            { ...(keys.get(pathKey([key])) ?? { file, line: 1, col: 1 }) },
          ),
      )
  }
  return result.error.issues.map((issue) => {
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))
    let reason = `${describe(path)}: ${issue.message}`
    let at = locate(positions, path)
    if (issue.code === 'unrecognized_keys') {
      const key = issue.keys[0]
      at = keys.get(pathKey([...path, key])) ?? locate(positions, [...path, key])
      const known = KNOWN[path.length === 0 ? '' : 'instance']
      reason = `unknown key "${key}" in ${path.length ? describe(path) : 'the layer'}${didYouMean(key, known ?? [])}`
    }
    return new YokeError(
      'CONFIG_SHAPE',
      { reason },
      {
        ...(at ?? { file, line: 1, col: 1 }),
        instance: path[0] === 'plugins' ? String(path[1] ?? '') || undefined : undefined,
      },
    )
  })
}

/**
 * In the merged config every enabled instance needs `use`; returns errors for those that lack it.
 * `elsewhere(key)` says which preset defines such a key: the layer was written for that one.
 */
export function checkInstances(
  plugins: Record<string, InstanceEntry>,
  origins: Map<string, Position>,
  elsewhere: (key: string) => string = () => '',
): YokeError[] {
  return Object.entries(plugins)
    .filter(([, entry]) => entry.enabled !== false && !entry.use)
    .map(
      ([key]) =>
        new YokeError(
          'CONFIG_SHAPE',
          { reason: `instance "${key}" has no use: (which plugin runs it?)${elsewhere(key)}` },
          { ...origins.get(pathKey(['plugins', key])), instance: key },
        ),
    )
}

function describe(path: Path): string {
  return path.length ? path.join('.') : 'the layer'
}
