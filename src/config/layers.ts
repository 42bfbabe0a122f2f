/**
 * @module config/layers
 * Finds and reads the config layers, lowest first:
 *   the extends chain → the preset → the project config → $YOKE_HOME/patch.yaml
 *   → each --patch FILE → each --set path=value.
 * The preset is --preset, else the project config's `preset:`, else `base`.
 * The project config is searched for by name (the places and the `project` strategy cosmiconfig
 * uses), without reading any candidate: every file is read by the defensive reader of yaml.ts.
 */
import { existsSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { messageOf, YokeError } from '../errors.ts'
import { interpolate, type MissingVar } from './interpolate.ts'
import type { LayerValue } from './merge.ts'
import type { checkLayer as CheckLayer } from './shape.ts'
import {
  parseConfigText,
  pathKey,
  readConfigFile,
  readConfigText,
  type ParsedFile,
  type Position,
} from './yaml.ts'

import { BUILTIN_PRESETS } from '../roots.ts'

/** A config name in each format yoke reads. */
function formats(name: string): string[] {
  return ['.yaml', '.yml', '.json'].map((ext) => name + ext)
}

/**
 * Where the project config is looked for, in order, in cwd and then each parent up to the first
 * directory with a package.json (cosmiconfig's names, then config/yoke.*; YAML and JSON only:
 * they hot-reload).
 */
export const PROJECT_CONFIG_PLACES = [
  ...formats('yoke.config'),
  '.yokerc',
  ...formats('.yokerc'),
  ...formats('.config/yoke'),
  '.config/yokerc',
  ...formats('.config/yokerc'),
  // a project that keeps its configuration in config/ (as this repository does)
  ...formats('config/yoke'),
  'package.json',
]

/** The project whose trust is asked: its directory and its own config files. */
export interface ProjectConfig {
  dir: string
  files: string[]
}

/** `true`, or why the project is not trusted (a waiting instance shows it). */
export type TrustVerdict = true | string

/** `true` trusts, `false` never runs project code, a function decides; default: the store. */
export type TrustOption = boolean | ((project: ProjectConfig) => TrustVerdict)

export interface LoadOptions {
  cwd: string
  /** --preset NAME|PATH */
  preset?: string
  /** --config FILE: the project config, instead of searching for one */
  configFile?: string
  patches?: readonly string[]
  sets?: readonly string[]
  /** $YOKE_HOME (default ~/.yoke) */
  home?: string
  env?: NodeJS.ProcessEnv
  /** false: the layers are read, not checked (finding commands; composing reports a bad layer) */
  check?: boolean
  /** whether the project's own code may run (src/config/trust.ts); default: $YOKE_HOME/trust.json */
  trust?: TrustOption
}

/** No shape errors: for a read that does not check (zod, which checks, takes long to load). */
const unchecked: typeof CheckLayer = () => []

export type LayerKind = 'preset' | 'project' | 'user' | 'patch' | 'set'

export interface Layer extends LayerValue {
  kind: LayerKind
  file: string
}

export interface LayerStack {
  layers: Layer[]
  preset: string
  /** the project's directory: where the project config is, else cwd */
  projectDir: string
  /** the project config file found (or named by --config), even when it could not be read */
  projectFile?: string
  /** files whose change means a reload, existing or not (the user patch may appear later) */
  watchFiles: string[]
  errors: YokeError[]
  /**
   * `${VAR}`s with no value inside an instance's entry (`plugins.<key>.…`): not config errors, the
   * instance waits for them (see resolve.ts); one anywhere else is in `errors` (CONFIG_ENV_MISSING)
   */
  missing: MissingVar[]
}

export function yokeHome(options: Pick<LoadOptions, 'home' | 'env'>): string {
  return options.home ?? options.env?.YOKE_HOME ?? process.env.YOKE_HOME ?? join(homedir(), '.yoke')
}

export async function loadLayers(options: LoadOptions): Promise<LayerStack> {
  const checkLayer = options.check === false ? unchecked : (await import('./shape.ts')).checkLayer
  const env = options.env ?? process.env
  const cwd = resolve(options.cwd)
  const reader = new LayerReader(env, checkLayer)
  const { errors, layers, watchFiles } = reader

  // the project config comes first: it may choose the preset
  const projectFile = options.configFile
    ? resolve(cwd, options.configFile)
    : await findProjectConfig(cwd)
  const projectDir = projectFile ? projectDirOf(projectFile) : cwd
  if (!projectFile)
    for (const place of PROJECT_CONFIG_PLACES.slice(0, -1)) watchFiles.add(join(cwd, place))
  const project = projectFile
    ? reader.read(
        'project',
        projectFile,
        basename(projectFile) === 'package.json' ? 'yoke' : undefined,
      )
    : undefined

  const chosen = options.preset ?? (project?.value.preset as string | undefined) ?? 'base'
  const base = options.preset ? cwd : project ? dirname(project.file) : cwd
  const presetFile = findPreset(chosen, base, projectDir)
  if (!presetFile) {
    errors.push(
      new YokeError(
        'CONFIG_NOT_FOUND',
        { kind: 'preset', name: chosen },
        project && !options.preset ? { ...project.positions.get(pathKey(['preset'])) } : {},
      ),
    )
  } else {
    reader.collectPreset(presetFile, projectDir, [], new Set())
  }
  if (project) layers.push(project)

  const userPatch = join(yokeHome({ ...options, env }), 'patch.yaml')
  watchFiles.add(userPatch)
  if (existsSync(userPatch)) reader.push(reader.read('user', userPatch))
  for (const patch of options.patches ?? []) reader.push(reader.read('patch', resolve(cwd, patch)))
  for (const set of options.sets ?? []) reader.push(parseSet(set, errors, checkLayer))

  return {
    layers,
    preset: presetFile ?? chosen,
    projectDir,
    projectFile,
    watchFiles: [...watchFiles],
    errors,
    missing: reader.missing,
  }
}

/** One load's reading of layers: what it read, in order, and what went wrong, as fields. */
class LayerReader {
  readonly errors: YokeError[] = []
  /** the `${VAR}`s without a value inside instances' entries (those instances wait) */
  readonly missing: MissingVar[] = []
  readonly layers: Layer[] = []
  readonly watchFiles = new Set<string>()

  constructor(
    private readonly env: NodeJS.ProcessEnv,
    private readonly checkLayer: typeof CheckLayer,
  ) {}

  push(layer: Layer | undefined) {
    if (layer) this.layers.push(layer)
  }

  /** A layer read, interpolated and checked; undefined (its errors kept) when it is not usable. */
  read(kind: LayerKind, file: string, pick?: string): Layer | undefined {
    this.watchFiles.add(file)
    try {
      const parsed = pickKey(readConfigFile(file), pick)
      const interpolated = interpolate(parsed.value, this.env, parsed.positions)
      const { value, fromEnv } = interpolated
      const shapeErrors = this.checkLayer(value, parsed.positions, file, parsed.keys, kind)
      this.errors.push(...shapeErrors)
      if (shapeErrors.length) return undefined
      for (const m of interpolated.missing) {
        const [top, key, field] = m.path
        if (top === 'plugins' && key !== undefined && field !== undefined) this.missing.push(m)
        // x-… keys only hold anchors: a variable there counts where an alias uses it
        else if (!String(top).startsWith('x-'))
          this.errors.push(new YokeError('CONFIG_ENV_MISSING', { name: m.name }, { ...m.at }))
      }
      return {
        kind,
        file,
        value: value as Record<string, unknown>,
        positions: parsed.positions,
        fromEnv,
      }
    } catch (err) {
      this.errors.push(
        err instanceof YokeError
          ? err
          : new YokeError(
              'CONFIG_READ_FAILED',
              { file, reason: messageOf(err) },
              { file, cause: err },
            ),
      )
      return undefined
    }
  }

  /** Depth first: each extends entry's own chain, in order, then the preset itself; a file joins once. */
  collectPreset(
    file: string,
    projectDir: string,
    stack: string[],
    seen: Set<string>,
    from?: Position,
  ) {
    if (stack.includes(file)) {
      const chain = [...stack.slice(stack.indexOf(file)), file].map((f) => basename(f)).join(' → ')
      this.errors.push(new YokeError('CONFIG_EXTENDS_CYCLE', { chain }, { ...from }))
      return
    }
    if (seen.has(file)) return
    const layer = this.read('preset', file)
    if (!layer) return
    const parents = [layer.value.extends ?? []].flat() as string[]
    parents.forEach((name, i) => {
      const at =
        layer.positions.get(pathKey(['extends', i])) ?? layer.positions.get(pathKey(['extends']))
      const parent = findPreset(name, dirname(file), projectDir)
      if (!parent)
        this.errors.push(new YokeError('CONFIG_NOT_FOUND', { kind: 'preset', name }, { ...at }))
      else this.collectPreset(parent, projectDir, [...stack, file], seen, at)
    })
    if (!seen.has(file)) {
      seen.add(file)
      this.layers.push(layer)
    }
  }
}

/** A bare name is looked up beside `base`, in the project's presets/, then among the built-ins. */
export function findPreset(name: string, base: string, projectDir: string): string | undefined {
  const isPath = isAbsolute(name) || name.startsWith('.') || /\.(ya?ml|json)$/.test(name)
  if (isPath) {
    const file = resolve(base, name)
    return existsSync(file) ? file : undefined
  }
  for (const dir of [base, join(projectDir, 'presets'), BUILTIN_PRESETS]) {
    for (const ext of ['.yaml', '.yml']) {
      const file = join(dir, name + ext)
      if (existsSync(file)) return file
    }
  }
  return undefined
}

/**
 * The project config: the first of PROJECT_CONFIG_PLACES that exists in cwd, then in each parent
 * up to the first directory with a package.json (or package.yaml), as cosmiconfig's `project`
 * strategy searches. Finding a file reads nothing: a candidate is recognised by stat alone, so a
 * FIFO, a device or a huge file is returned and then refused, named, by the defensive reader. Only
 * package.json is read here (through that reader) to see whether it has a `yoke` key.
 */
async function findProjectConfig(cwd: string): Promise<string | undefined> {
  for (let dir = cwd; ; dir = dirname(dir)) {
    for (const place of PROJECT_CONFIG_PLACES) {
      const file = join(dir, place)
      const stat = statOf(file)
      if (!stat || stat === 'directory') continue
      if (place !== 'package.json' || hasYokeKey(file)) return file
    }
    const top = dirname(dir) === dir
    if (top || ['package.json', 'package.yaml'].some((f) => statOf(join(dir, f)))) return undefined
  }
}

/** undefined when nothing is there (or a parent is not a directory); 'directory'; else 'other'. */
function statOf(file: string): 'directory' | 'other' | undefined {
  try {
    const stat = statSync(file, { throwIfNoEntry: false })
    return !stat ? undefined : stat.isDirectory() ? 'directory' : 'other'
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    // ENOTDIR: a parent is a file; anything else (EACCES, ELOOP…): there is something the reader names
    return code === 'ENOTDIR' ? undefined : 'other'
  }
}

/**
 * Whether package.json has a `yoke` key. One that cannot be read safely (not a regular file, over
 * the size cap) counts as having one, so the reader reports it instead of the search going past it.
 */
function hasYokeKey(file: string): boolean {
  let text: string
  try {
    text = readConfigText(file)
  } catch {
    return true
  }
  const json = safeJson(text) as Record<string, unknown> | undefined
  return Boolean(json && typeof json === 'object' && json.yoke !== undefined && json.yoke !== null)
}

function projectDirOf(file: string) {
  const dir = dirname(file)
  return basename(dir) === '.config' ? dirname(dir) : dir
}

function safeJson(text: string) {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** package.json keeps yoke's config under its `yoke` key: re-root values and positions there. */
function pickKey(parsed: ParsedFile, key: string | undefined): ParsedFile {
  if (!key) return parsed
  const prefix = key + '\u001f'
  const positions = new Map(
    [...parsed.positions]
      .filter(([k]) => k.startsWith(prefix))
      .map(([k, v]) => [k.slice(prefix.length), v]),
  )
  const keys = new Map(
    [...parsed.keys]
      .filter(([k]) => k.startsWith(prefix))
      .map(([k, v]) => [k.slice(prefix.length), v]),
  )
  return {
    ...parsed,
    value: (parsed.value as Record<string, unknown>)?.[key] ?? {},
    positions,
    keys,
  }
}

/** `--set plugins.agent.enabled=true`: the value is YAML, so numbers, booleans and lists work. */
function parseSet(arg: string, errors: YokeError[], check: typeof CheckLayer): Layer | undefined {
  const eq = arg.indexOf('=')
  const path = eq > 0 ? arg.slice(0, eq).split('.') : []
  if (eq <= 0 || path.some((p) => !p)) {
    errors.push(new YokeError('CONFIG_SET_INVALID', { arg, reason: 'expected path=value' }))
    return undefined
  }
  let value: unknown
  try {
    // the same defensive reader as files: aliases, nesting and size are bounded
    const raw = arg.slice(eq + 1) || '""'
    value = parseConfigText(`v:\n${raw.replace(/^/gm, '  ')}\n`, `--set ${arg}`).value
    value = (value as { v: unknown }).v
  } catch (err) {
    errors.push(new YokeError('CONFIG_SET_INVALID', { arg, reason: (err as Error).message }))
    return undefined
  }
  const file = `--set ${arg}`
  const root: Record<string, unknown> = {}
  let node = root
  path.slice(0, -1).forEach((k) => (node = node[k] = {}))
  node[path.at(-1)!] = value
  const positions = new Map<string, Position>()
  path.forEach((_, i) => positions.set(pathKey(path.slice(0, i + 1)), { file, line: 0, col: 0 }))
  const shapeErrors = check(root, positions, file, positions, 'set')
  if (shapeErrors.length) {
    errors.push(
      ...shapeErrors.map((e) => new YokeError('CONFIG_SET_INVALID', { arg, reason: e.message })),
    )
    return undefined
  }
  return { kind: 'set', file, value: root, positions, fromEnv: new Set() }
}
