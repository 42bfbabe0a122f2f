/**
 * @module config/trust
 * Project trust (DESIGN §9): what a project's own config would run — a local plugin, or an
 * instance of a plugin that declares `runsProjectCode` (exec packages, shell hooks, a stdio MCP
 * server) — waits, pending, until the project is trusted; so do a package the project brings (in
 * its own node_modules, whoever names it) and an instance whose config from the project takes a
 * `${VAR}` of the user's environment (it could send the value anywhere). The config's resolver asks trustGate
 * about each instance; whether the project is trusted is `LoadOptions.trust`, by default the store.
 *
 * The store: $YOKE_HOME/trust.json remembers, per project (its real path), whether its
 * owner trusted it to run its own code, and the sha256 of each of the project's config files at
 * that moment. A file that changed since (or one added or gone) means the project is asked
 * about again. Reading is plain and cheap (every composition of a project that brings code does
 * it); writing takes a lock and replaces the file atomically.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path'
import { z } from 'zod'
import {
  yokeHome,
  type LayerStack,
  type LoadOptions,
  type ProjectConfig,
  type TrustVerdict,
} from './layers.ts'
import type { Merged } from './merge.ts'
import type { LoadedModule } from './modules.ts'
import { pathKey, readConfigText } from './yaml.ts'
import { validateConfig } from '../kernel/plugin.ts'
import { messageOf, YokeError, type ErrorSite } from '../errors.ts'
import { BUILTIN_ENTRY, BUILTIN_PLUGINS, BUILTIN_PRESETS } from '../roots.ts'

export const TRUST_FILE = 'trust.json'

/**
 * The files beside a project's config in which plugins keep digests of what they run (the lock of
 * what `yoke add` installed holds each tree's sha256): by convention `yoke.<word>` at the project's
 * root, not a config format. Trust covers each as it covers the config, so a plugin declares its
 * file by its name and the kernel names none of them.
 */
const STATE_FILE = /^yoke\.(?!(?:ya?ml|json)$)[a-z][a-z0-9-]*$/

/** The project's state files (STATE_FILE) that exist, sorted: a directory is none. */
export function stateFiles(projectDir: string): string[] {
  try {
    return readdirSync(projectDir, { withFileTypes: true })
      .filter((d) => STATE_FILE.test(d.name) && !d.isDirectory())
      .map((d) => join(projectDir, d.name))
      .sort()
  } catch {
    return [] // no project directory (yet): nothing kept in it
  }
}

/** One project's entry: the answer, when it was given, and the config files it covered. */
export interface TrustRecord {
  trusted: boolean
  at: string
  /** each config file, relative to the project directory → its sha256 (hex) */
  files: Record<string, string>
}

interface TrustStore {
  version: 1
  /** the entries that are records */
  projects: Record<string, TrustRecord>
  /** the entries that are not (as written, kept when the store is written again), by project */
  invalid: Map<string, { entry: unknown; why: string }>
}

/** One entry of the store, as recordTrust writes it. */
const trustRecord = z.object({
  trusted: z.boolean(),
  at: z.string().max(64),
  files: z.record(z.string().max(4096), z.string().max(128)),
})

interface Where {
  home?: string | undefined
  env?: NodeJS.ProcessEnv | undefined
}

// the options' types live with LoadOptions (config/layers), which the gate reads: no cycle back
export type { ProjectConfig, TrustOption, TrustVerdict } from './layers.ts'

/**
 * What the gate reads and marks of an instance; config/resolve's GatedInstance extends it (the
 * resolver asks the gate, so the gate does not import the resolver).
 */
export interface GatedInstance {
  key: string
  use: string
  /** the instance's config as merged, before the plugin's schema */
  raw: unknown
  /** the validated config handed to apply */
  config?: unknown
  module?: LoadedModule
  local?: boolean
  /** it waits because the project is not trusted */
  untrusted?: boolean
  site: ErrorSite
}

const inside = (dir: string, file: string) => {
  const rel = relative(dir, file)
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)
}

/**
 * The project's own config files: its config, the presets it brings (not built in; a preset
 * chosen by --preset from outside the project is the user's), and its state files (stateFiles).
 * The user patch, --patch and --set are the user's own.
 */
export function projectFiles(stack: LayerStack, options: Pick<LoadOptions, 'preset'>): string[] {
  const own = stack.layers.filter(
    (l) =>
      l.kind === 'project' ||
      (l.kind === 'preset' &&
        !inside(BUILTIN_PRESETS, l.file) &&
        (!options.preset || inside(stack.projectDir, l.file))),
  )
  const files = own.map((l) => l.file)
  return [...files, ...stateFiles(stack.projectDir).filter((f) => !files.includes(f))]
}

/** Whether the project's own code may run, by `options.trust` (default: the store), as of now. */
export function projectVerdict(options: LoadOptions, stack: LayerStack): TrustVerdict {
  const files = projectFiles(stack, options)
  const trust = options.trust ?? ((project: ProjectConfig) => projectTrust(project, options))
  if (typeof trust === 'function') return trust({ dir: stack.projectDir, files })
  return trust || 'project code is off for this composition (trust: false)'
}

/**
 * A composition's trust (config/composer): the verdict as of now, for plugins that run project
 * content themselves (`ctx.project.trusted()`: installs, mcp-json); the files it depends on besides
 * the layers (the store, the state files), to watch; and which of their changes call for a reload: only
 * those that change this project's verdict (`yoke trust` anywhere writes the store every dev
 * watches, and `yoke add` writes the lock, which the installs plugin follows by itself).
 */
export function trustTracker(options: LoadOptions) {
  let stack: LayerStack | undefined
  let seen: string | undefined
  const verdict = (): TrustVerdict =>
    stack ? projectVerdict(options, stack) : 'the project config is not read yet'
  const mark = () => {
    try {
      return JSON.stringify(verdict())
    } catch (err) {
      return `failed: ${messageOf(err)}` // a trust function that throws: its message is the mark
    }
  }
  const watched = () => (stack ? [trustFile(options), ...stateFiles(stack.projectDir)] : [])
  return {
    verdict,
    watched,
    /** after each resolve: the layers as they are now, and the verdict they give */
    read(next: LayerStack) {
      stack = next
      seen = mark()
    },
    /** Of the files that changed, those that call for a reload. */
    relevant(files: string[]): string[] {
      const own = new Set(watched())
      const others = files.filter((f) => !own.has(f))
      return others.length < files.length && mark() !== seen ? files : others
    },
  }
}

/** Decides, once per resolve and only when asked, whether an instance's code may run. */
export function trustGate(options: LoadOptions, stack: LayerStack, merged: Merged) {
  const gate = new TrustGate(options, stack, merged)
  return (spec: GatedInstance, runsCode?: boolean) => gate.check(spec, runsCode)
}

/** One resolve's gate: the project's files, where each value came from, the verdict once asked. */
class TrustGate {
  /** the project's own config files: what counts as set by the project */
  private readonly files: string[]
  /** the project's verdict, read the first time an instance needs it */
  private verdict: TrustVerdict | undefined

  constructor(
    private readonly options: LoadOptions,
    private readonly stack: LayerStack,
    private readonly merged: Merged,
  ) {
    this.files = projectFiles(stack, options)
  }

  private verdictNow(): TrustVerdict {
    return (this.verdict ??= projectVerdict(this.options, this.stack))
  }

  /**
   * The waiting error of an instance that must wait for trust (it is marked `untrusted`), else
   * undefined: it runs code when its module is local or its plugin says so for its config; once
   * its module is loaded, one whose config from the project took the user's environment waits
   * too (its values could go anywhere the project says: a header, a URL), and so does one whose
   * plugin reads a secret itself when the project says which one or where it goes (`baseUrl`).
   */
  check(spec: GatedInstance, runsCode = spec.local || declaresCode(spec)): YokeError | undefined {
    const { files, stack } = this
    // a package the project brings (its node_modules) is its code, whoever's layer names it
    const own = !spec.local && ownPackage(spec.use, stack.projectDir)
    const env = !runsCode && spec.module ? this.fromEnv(spec.key) : []
    const loosening = !runsCode && files.length ? this.withoutLoosening(spec) : false
    const secrets = !runsCode && files.length ? this.secretsFromProject(spec) : []
    if (loosening === 'waits')
      secrets.push('config (valid only with what it may not set untrusted)')
    const held = own || secrets.length || ((runsCode || env.length) && this.fromProject(spec.key))
    if (!files.length || !held) return undefined
    const verdict = this.verdictNow()
    if (verdict === true) return undefined
    spec.untrusted = true
    const what =
      own || runsCode
        ? codeOf(spec, stack.projectDir)
        : env.length
          ? `with values from your environment (${env.join(', ')})`
          : `with your secrets or your tools going where the project's config says (${secrets.join(', ')})`
    waitsFor.set(spec, what)
    return untrustedError(spec.site, what, verdict, stack.projectDir)
  }

  /** Whether the project's files set the instance's `use:` or any of its config. */
  private fromProject(key: string): boolean {
    const [use, config] = [pathKey(['plugins', key, 'use']), pathKey(['plugins', key, 'config'])]
    return [...this.merged.origins].some(
      ([path, at]) =>
        (path === use || path === config || path.startsWith(config + '\u001f')) &&
        this.files.includes(at.file),
    )
  }

  /** The config paths of the instance whose value the project's own files took from `${VAR}`s. */
  private fromEnv(key: string): string[] {
    const prefix = pathKey(['plugins', key]) + '\u001f'
    return this.stack.layers
      .filter((l) => this.files.includes(l.file))
      .flatMap((l) =>
        [...l.fromEnv].filter(
          (p) => p.startsWith(prefix) && this.merged.origins.get(p)?.file === l.file,
        ),
      )
      .map((p) => p.split('\u001f').slice(2).join('.'))
  }

  /** Of `paths` (dotted, under the instance's config), those the project's files set. */
  private setByProject(key: string, paths: readonly unknown[]): string[] {
    return paths.map(String).filter((p) => {
      const at = pathKey(['plugins', key, 'config', ...p.split('.')])
      return [...this.merged.origins].some(
        ([path, { file }]) =>
          (path === at || path.startsWith(at + '\u001f')) && this.files.includes(file),
      )
    })
  }

  /**
   * Of the paths the plugin says route a secret of the user's, those the project's files set (as
   * `config.<path>`); a `sendsSecrets` that throws holds back an instance the project configures.
   */
  private secretsFromProject(spec: GatedInstance): string[] {
    const paths = declared(spec, 'sendsSecrets')
    if (!paths)
      return this.fromProject(spec.key)
        ? ['config (its plugin could not say which paths matter)']
        : []
    return this.setByProject(spec.key, paths).map((p) => `config.${p}`)
  }

  /**
   * An instance that runs without what the untrusted project set at the paths its plugin says may
   * only loosen (a policy's `allow`): its config is validated again with them left out, and it is
   * marked `untrusted` (so `yoke trust --show` lists it), yet runs. False when nothing is left out;
   * `waits` when the config is not valid without them.
   */
  private withoutLoosening(spec: GatedInstance): boolean | 'waits' {
    if (!spec.module || spec.config === undefined) return false
    const paths = this.setByProject(spec.key, declared(spec, 'ignoredUntilTrusted') ?? [])
    if (!paths.length || this.verdictNow() === true) return false
    const raw = structuredClone(spec.raw ?? {}) as Record<string, unknown>
    for (const p of paths) deleteAt(raw, p.split('.'))
    const again = validateConfig(spec.module.plugin, raw)
    // without them it is not valid: then it waits for trust, as one that sends a secret does
    if (!('value' in again)) return 'waits'
    // the raw config too: it is what tells a reload that the instance changed once trusted
    spec.raw = raw
    spec.config = again.value
    spec.untrusted = true
    waitsFor.set(spec, `without the project's ${paths.map((p) => `config.${p}`).join(', ')}`)
    return true
  }
}

/** A declaration of the plugin's, for its config; one that throws (or is no list) is undefined. */
function declared(spec: GatedInstance, name: 'sendsSecrets' | 'ignoredUntilTrusted') {
  try {
    const paths = spec.module?.plugin[name]?.(spec.config) ?? []
    return Array.isArray(paths) ? (paths as unknown[]) : undefined
  } catch {
    return undefined
  }
}

/** What each instance the gate stopped would run, for `yoke trust --show` and the question. */
const waitsFor = new WeakMap<GatedInstance, string>()

/** What an untrusted instance would run, in words (`yoke trust --show`, PLUGIN_WAITING). */
export function codeOf(spec: GatedInstance, projectDir: string): string {
  const stopped = waitsFor.get(spec)
  if (stopped) return stopped
  if (spec.local) return `the local module ${spec.use}`
  const own = ownPackage(spec.use, projectDir)
  if (own) return `the package ${spec.use} the project brings (${relative(projectDir, own) || '.'})`
  return `project code (${spec.site.plugin})`
}

const isDir = (path: string) => statSync(path, { throwIfNoEntry: false })?.isDirectory() === true

/**
 * The directory inside the project that an npm-style `use:` resolves to, or undefined when it
 * resolves elsewhere (yoke's built-ins, a package above the project: the user's). Node's own
 * order: the package itself when the project's package.json names it (a self-reference), then
 * the first node_modules/<name> from the project directory up.
 */
export function ownPackage(use: string, projectDir: string): string | undefined {
  const name = /^(@[\w.-]+\/)?[\w.-]+/.exec(use)?.[0]
  if (!name || /^[./\\]|^file:|^[A-Za-z]:/.test(use)) return undefined
  if (/^[a-z0-9-]+$/.test(use) && existsSync(join(BUILTIN_PLUGINS, use, BUILTIN_ENTRY)))
    return undefined
  const dir = resolve(projectDir)
  for (let at = dir; ; at = dirname(at)) {
    const manifest = join(at, 'package.json')
    if (!existsSync(manifest)) {
      if (at === dirname(at)) break
      continue
    }
    try {
      // the config reader: a FIFO in its place is refused (then it names no package), not waited on
      if ((JSON.parse(readConfigText(manifest)) as { name?: unknown }).name === name)
        return inside(dir, manifest) ? at : undefined
    } catch {
      // not JSON: Node fails the import itself
    }
    break // only the nearest package.json can be a self-reference
  }
  for (let at = dir; ; at = dirname(at)) {
    const found = join(at, 'node_modules', name)
    if (isDir(found)) return inside(dir, found) ? found : undefined
    if (at === dirname(at)) return undefined
  }
}

/** The plugin's `runsProjectCode`, for the instance's validated config. */
function declaresCode({ module, config }: GatedInstance): boolean {
  const declared = module?.plugin.runsProjectCode
  return typeof declared === 'function' ? declared(config) === true : declared === true
}

/** PLUGIN_WAITING for an instance of an untrusted project, at its `use:`. */
function untrustedError(site: ErrorSite, what: string, reason: string, dir: string) {
  const params = {
    instance: site.instance,
    reason: `${reason}, and this instance runs ${what}`,
    what: `review the project's config, then run \`yoke trust\` in ${dir} (a running yoke dev starts it then); --trust or YOKE_TRUST=1 trusts one run`,
  }
  return new YokeError('PLUGIN_WAITING', params, { ...site })
}

export const trustFile = (where: Where) => join(yokeHome(where), TRUST_FILE)

/** The key of a project: its directory's real path (a link to it is the same project). */
export function projectKey(dir: string): string {
  try {
    return realpathSync(dir)
  } catch {
    return resolve(dir)
  }
}

/**
 * The sha256 of each config file, by its path relative to the project. package.json counts by its
 * `yoke` key alone, so a version bump does not ask again; a file that cannot be read counts as
 * `unreadable` (then it can only match another unreadable read).
 */
export function configHashes(project: ProjectConfig): Record<string, string> {
  const hashes: Record<string, string> = {}
  for (const file of [...project.files].sort()) {
    let text: string
    try {
      text = readConfigText(file)
      if (basename(file) === 'package.json')
        text = JSON.stringify((JSON.parse(text) as { yoke?: unknown }).yoke ?? null)
    } catch {
      text = '\0unreadable'
    }
    hashes[relative(project.dir, file) || basename(file)] = createHash('sha256')
      .update(text)
      .digest('hex')
  }
  return hashes
}

/**
 * The store as it is on disk, through the config reader (a regular file, at most 1 MiB); empty
 * when there is none. A store that is not JSON, or not a store, is an error naming it; an entry
 * that is not a record costs that project alone: it is `invalid` (file:line and why), and the
 * project counts as never asked until `yoke trust` answers again.
 */
export function readTrust(where: Where): TrustStore {
  const file = trustFile(where)
  if (!existsSync(file)) return { version: 1, projects: {}, invalid: new Map() }
  const text = readConfigText(file) // the defensive reader: a FIFO or a huge file is refused, named
  let raw: { version?: unknown; projects?: unknown }
  try {
    raw = JSON.parse(text) as typeof raw
    if (raw?.version !== 1 || typeof raw.projects !== 'object' || !raw.projects)
      throw new Error('it is not a yoke trust store (version 1)')
  } catch (err) {
    throw new YokeError(
      'CONFIG_READ_FAILED',
      { file, reason: `${messageOf(err)}; remove it and run \`yoke trust\` again` },
      { file, cause: err },
    )
  }
  const store: TrustStore = { version: 1, projects: {}, invalid: new Map() }
  for (const [dir, entry] of Object.entries(raw.projects as Record<string, unknown>)) {
    const checked = trustRecord.safeParse(entry)
    if (checked.success) {
      store.projects[dir] = checked.data
      continue
    }
    const issue = checked.error.issues[0]
    const at = text.indexOf(`${JSON.stringify(dir)}:`)
    const line = at < 0 ? '' : `:${text.slice(0, at).split('\n').length}`
    const what = `${issue?.path.join('.') || 'the entry'}: ${issue?.message ?? 'not a record'}`
    store.invalid.set(dir, {
      entry,
      why: `${file}${line}: the entry for ${dir} is not a trust record (${what}); it counts as never answered until \`yoke trust\` is run there again`,
    })
  }
  return store
}

/** Which files differ between a record and now: changed, new or gone, by relative path. */
export function changedFiles(before: TrustRecord['files'], now: TrustRecord['files']): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(now)])
  return [...names].filter((name) => before[name] !== now[name]).sort()
}

/** Trusting on the environment: `YOKE_TRUST=1` (or `true`), for CI and tests. */
export function trustedByEnv(where: Where): boolean {
  const value = where.env?.YOKE_TRUST ?? process.env.YOKE_TRUST
  return value === '1' || value === 'true'
}

/** Where a project stands: trusted, never asked, declined, or asked about another config. */
export interface TrustState {
  state: 'trusted' | 'new' | 'declined' | 'changed'
  /** the project's key: its real path */
  dir: string
  record?: TrustRecord
  /** for `new`: the project's entry in the store is not a record (file:line and why) */
  invalid?: string
  /** the store's entries that are not records, this project's or others' (file:line and why) */
  problems: string[]
  /** the config files now, by relative path → sha256 */
  files: TrustRecord['files']
  /** for `changed`: the files that differ from the record (changed, new or gone) */
  changed: string[]
}

/** The store's view of the project as its config is now (a broken store throws, naming it). */
export function trustState(project: ProjectConfig, where: Where): TrustState {
  const dir = projectKey(project.dir)
  const store = readTrust(where)
  const record = store.projects[dir]
  const invalid = store.invalid.get(dir)?.why
  const problems = [...store.invalid.values()].map((i) => i.why)
  const files = configHashes(project)
  const changed = record ? changedFiles(record.files, files) : []
  const state = !record
    ? 'new'
    : changed.length
      ? 'changed'
      : record.trusted
        ? 'trusted'
        : 'declined'
  return {
    state,
    dir,
    files,
    changed,
    problems,
    ...(record && { record }),
    ...(invalid && { invalid }),
  }
}

/**
 * The default trust decision (LoadOptions.trust): YOKE_TRUST=1, or a record in the store whose
 * answer was yes and whose files are as they are now. Otherwise why not, in words a waiting
 * instance can show: never trusted, declined, or which file changed since.
 */
export function projectTrust(project: ProjectConfig, where: Where): TrustVerdict {
  if (trustedByEnv(where)) return true
  let now: TrustState
  try {
    now = trustState(project, where)
  } catch (err) {
    return `the trust store cannot be read (${messageOf(err)})`
  }
  const { state, dir, record, changed } = now
  const day = record?.at.slice(0, 10)
  if (state === 'trusted') return true
  if (state === 'new')
    return now.invalid
      ? `the trust store's entry for the project is not valid (${now.invalid})`
      : `the project ${dir} is not trusted yet`
  if (state === 'declined') return `trust was declined for the project ${dir} (${day})`
  const was = record!.trusted ? 'trusted' : 'declined'
  return `${changed.join(', ')} changed since the project ${dir} was ${was} (${day})`
}

const LOCK_WAIT_MS = 15_000

/**
 * Changes the store under its lock, read again there: `change` gets the entries that are records
 * and edits them in place; an entry that is not one is written back as it was, unless `change`
 * drops it from `invalid` (or replaces it with a record).
 */
export async function updateTrust(
  where: Where,
  change: (projects: TrustStore['projects'], invalid: TrustStore['invalid']) => void,
): Promise<void> {
  const file = trustFile(where)
  mkdirSync(yokeHome(where), { recursive: true, mode: 0o700 })
  const [{ default: lockfile }, { default: writeFileAtomic }] = await Promise.all([
    import('proper-lockfile'),
    import('write-file-atomic'),
  ])
  const lock = `${file}.lock`
  const retries = { retries: LOCK_WAIT_MS / 100, factor: 1, minTimeout: 100, maxTimeout: 100 }
  const release = await lockfile
    .lock(file, { realpath: false, stale: 10_000, retries })
    .catch((err: unknown) => {
      throw (err as NodeJS.ErrnoException).code === 'ELOCKED'
        ? new YokeError('EDIT_LOCKED', { file, ms: LOCK_WAIT_MS, lock }, { file })
        : writeFailed(file, `its lock ${lock} could not be taken (${messageOf(err)})`, err)
    })
  try {
    const store = readTrust(where)
    change(store.projects, store.invalid)
    const projects: Record<string, unknown> = {}
    for (const [dir, { entry }] of store.invalid)
      if (!(dir in store.projects)) projects[dir] = entry
    Object.assign(projects, store.projects)
    const text = JSON.stringify({ version: 1, projects }, null, 2) + '\n'
    await writeFileAtomic(file, text, { mode: 0o600 }).catch((err: unknown) => {
      throw writeFailed(file, messageOf(err), err)
    })
  } finally {
    await release().catch(() => {})
  }
}

/**
 * Records the owner's answer for the project: for its config as it is now, or as `files` says it
 * was when the question was shown (a file edited while the question waited then asks again).
 */
export async function recordTrust(
  project: ProjectConfig,
  trusted: boolean,
  where: Where,
  files: TrustRecord['files'] = configHashes(project),
): Promise<TrustRecord> {
  const record = { trusted, at: new Date().toISOString(), files }
  await updateTrust(where, (projects) => void (projects[projectKey(project.dir)] = record))
  return record
}

/** Forgets the project: the next run asks again. Whether there was anything to forget. */
export async function revokeTrust(dir: string, where: Where): Promise<boolean> {
  let found = false
  await updateTrust(where, (projects, invalid) => {
    const key = projectKey(dir)
    found = key in projects || invalid.has(key)
    delete projects[key]
    invalid.delete(key)
  })
  return found
}

function writeFailed(file: string, reason: string, cause: unknown) {
  return new YokeError('EDIT_WRITE_FAILED', { file, reason }, { file, cause })
}

/** Deletes `path` from `value` (a missing step leaves it as it is). */
function deleteAt(value: Record<string, unknown>, path: string[]): void {
  const [head, ...rest] = path
  if (head === undefined || !value || typeof value !== 'object') return
  if (!rest.length) delete value[head]
  else deleteAt(value[head] as Record<string, unknown>, rest)
}
