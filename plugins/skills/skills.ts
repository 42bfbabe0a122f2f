/**
 * @module skills/skills
 * One running skills instance: its roots and index (the skills read, shadowed, clashing, broken),
 * the holds on them and the watchers that keep them current. `apply` builds it and registers its
 * close; what wins, what is shadowed and what is held are decided here, testable without a kernel.
 */
import { homedir } from 'node:os'
import { dirname, join, relative, resolve, sep } from 'node:path'
import {
  defineHooks,
  messageOf,
  SyncHook,
  toDisposer,
  type Disposer,
  type Logger,
  type WatchHandler,
} from 'yoke'
import type { SummarySection } from 'yoke/cli'
import type {
  ContributedSkill,
  HeldSkill,
  SkillChange,
  SkillContribution,
  SkillRootOptions,
  SkillsApi,
  SkillsListing,
} from './api.ts'
import { wrapBody } from './catalog.ts'
import { byName, clashesAmong, Contributions } from './contributed.ts'
import { MAX_SKILL_FILE_BYTES, readSkillFile, SkillFileRefused, skillFiles } from './files.ts'
import { SkillHolds } from './holds.ts'
import type { Skill, SkillProblem } from './parse.ts'
import { report, summarySection } from './report.ts'
import {
  makeFilter,
  SkillIndex,
  type Shadowing,
  type SkillClash,
  type SkillFilter,
  type SkillRoot,
} from './skill-index.ts'
import type { SkillsInUse } from './tools.ts'

/** The index's skills and the contributed ones, merged: what is in use (held ones included). */
interface Merged {
  /** what it was built from: the index's array and the contributions' version */
  from: [Skill[], number]
  all: Skill[]
  shadowed: Shadowing[]
  clashes: SkillClash[]
  problems: SkillProblem[]
}

/** how many of a skill's files `files()` lists by default */
const FILES_PER_SKILL = 200

/** What a skills instance needs of its context (a test hands a plain object). */
export interface SkillsHost {
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>
  /** aborted when the instance ends: roots and holds asked for afterwards are refused */
  readonly signal: AbortSignal
  /** the project's directory: relative skills directories start there */
  readonly projectDir: string
  /** watches files for the instance (its effect); absent: nothing is watched */
  watch?(
    paths: string[],
    handler: WatchHandler,
    options: { ignored: (p: string) => boolean },
  ): Disposer
}

/** The part of the config the instance reads itself. */
export interface SkillsOptions {
  /** directories, highest priority first (already defaulted) */
  dirs: string[]
  only?: string[]
  except: string[]
  watch: boolean
}

export class Skills implements SkillsInUse {
  /** announces what each re-index and each first hold or last release changed */
  readonly hooks = defineHooks('skills', { change: new SyncHook<[SkillChange]>(['change']) })
  /** which skills (and skill packages) are in use at all: shared as the `skillFilter` service */
  readonly filter: SkillFilter
  /** every root's skills, held ones included: a held skill's edits are still read */
  readonly index: SkillIndex
  /** holds by name: a held skill stays indexed but is out of use everywhere */
  readonly #holds = new SkillHolds()
  /** the configured directories, expanded (the added roots are in the index only) */
  readonly #configured: string[]
  /** skills that are no folder on disk, by source (an MCP server's) */
  readonly #contributions = new Contributions()
  /** the latest contribution of each source: an older one's disposer leaves a newer one be */
  readonly #latest = new Map<string, object>()
  #merged?: Merged

  constructor(
    private readonly options: SkillsOptions,
    private readonly host: SkillsHost,
  ) {
    this.#configured = [...new Set(options.dirs.map((d) => this.expand(d)))]
    this.filter = makeFilter(options.only, options.except)
    this.index = new SkillIndex(this.#configured, this.filter)
  }

  /** Reads the configured directories, reports what it found and watches them. */
  start(): this {
    this.index.scan()
    report(this.merged(), this.host.logger)
    if (this.options.watch) this.#watch(this.#configured)
    return this
  }

  /** A directory as configured: `~/` is the user's home, a relative one starts at the project. */
  expand(dir: string): string {
    return resolve(this.host.projectDir, dir.startsWith('~/') ? join(homedir(), dir.slice(2)) : dir)
  }

  get #ended(): boolean {
    return this.host.signal.aborted
  }

  /**
   * The index's skills and the contributed ones that no directory's skill shadows, filtered, by
   * name; rebuilt only when either changed.
   */
  merged(): Merged {
    const { index } = this
    const contributions = this.#contributions
    const m = this.#merged
    if (m && m.from[0] === index.skills && m.from[1] === contributions.version) return m
    const names = new Map(index.skills.map((s) => [s.name, s]))
    const shadowed = [...index.shadowed]
    const added: Skill[] = []
    for (const s of contributions.skills()) {
      if (!this.filter.allows(s.name)) continue
      const winner = names.get(s.name)
      if (winner) shadowed.push({ name: s.name, winner: winner.file, shadowed: s.file })
      else added.push(names.set(s.name, s).get(s.name)!)
    }
    const all = added.length ? [...index.skills, ...added].sort(byName) : index.skills
    return (this.#merged = {
      from: [index.skills, contributions.version],
      all,
      shadowed,
      clashes: added.length ? clashesAmong(all) : index.clashes,
      problems: [...index.problems, ...contributions.problems()],
    })
  }

  #find(name: string): Skill | undefined {
    return this.merged().all.find((s) => s.name === name)
  }

  /** the skills in use, by name: filtered, highest-priority directory first, none held */
  list(): Skill[] {
    return this.merged().all.filter((s) => !this.#holds.isHeld(s.name))
  }

  /** a skill in use (undefined for a held one) */
  get(name: string): Skill | undefined {
    return this.#holds.isHeld(name) ? undefined : this.#find(name)
  }

  withheld(name: string): string | undefined {
    return this.#holds.isHeld(name) && this.#find(name)
      ? `the skill "${name}" is withheld: ${this.#holds.reasons(name).join('; ')}`
      : undefined
  }

  held(): HeldSkill[] {
    return this.merged()
      .all.filter((s) => this.#holds.isHeld(s.name))
      .map((s) => ({ ...s, holds: this.#holds.reasons(s.name) }))
  }

  /** where a contributed skill's files are read (undefined: it is a folder on disk) */
  origin(skill: Skill): ContributedSkill | undefined {
    return this.#contributions.origin(skill)
  }

  /** Applies `update` to the index (or the contributions), then logs and announces what it changed. */
  reindex(update: () => void, concerns: (file: string) => boolean): void {
    const { host } = this
    const before = new Map(this.merged().all.map((s) => [s.name, s]))
    const problemsBefore = JSON.stringify(this.merged().problems)
    update()
    const after = this.merged()
    const change = changeBetween(before, new Map(after.all.map((s) => [s.name, s])))
    report(after, host.logger, concerns)
    if (!change.added.length && !change.removed.length && !change.changed.length) {
      if (JSON.stringify(after.problems) !== problemsBefore)
        host.logger.info(`skills unchanged; problems: ${after.problems.length}`)
      return
    }
    const parts = (['added', 'changed', 'removed'] as const)
      .filter((k) => change[k].length)
      .map((k) => `${k} ${change[k].join(', ')}`)
    host.logger.info(`skills ${parts.join('; ')} (${after.all.length} in all)`)
    this.hooks.change.call(change)
  }

  /** Adds (or replaces) what `source` contributes; the disposer removes it unless replaced since. */
  contribute(source: string, contribution: SkillContribution): () => void {
    if (this.#ended) return () => {} // this instance has stopped: its successor takes contributions
    const token = {}
    const locations = new Set([
      ...contribution.skills.map((s) => s.location),
      ...(contribution.problems ?? []).map((p) => p.location),
    ])
    this.reindex(
      () => this.#contributions.set(source, contribution),
      (file) => locations.has(file),
    )
    this.#latest.set(source, token)
    let removed = false
    return () => {
      if (removed || this.#latest.get(source) !== token) return
      removed = true
      this.#latest.delete(source)
      if (!this.#ended)
        this.reindex(
          () => this.#contributions.delete(source),
          () => false,
        )
    }
  }

  /** One file of any skill in use: from disk as `readFile`, or through its source. */
  async read(
    name: string,
    file: string,
    signal?: AbortSignal,
  ): Promise<{ bytes: Uint8Array } | { refused: string }> {
    const skill = this.get(name)
    const from = skill && this.origin(skill)
    if (!skill || !from) return this.readFile(name, file)
    if (file === 'SKILL.md') return { bytes: Buffer.from(from.content) }
    if (!from.files.includes(file))
      return {
        refused: `the skill "${name}" has no file "${file}" (skill_read("${name}") lists its files)`,
      }
    try {
      const bytes = await from.read(file, signal)
      return bytes.length > MAX_SKILL_FILE_BYTES
        ? {
            refused: `"${file}" is ${bytes.length} bytes; files of at most ${MAX_SKILL_FILE_BYTES} bytes are read`,
          }
        : { bytes }
    } catch (err) {
      return { refused: `"${file}" of the skill "${name}" could not be read: ${messageOf(err)}` }
    }
  }

  /** One file of a skill on disk (a contributed skill's are read with `read`). */
  readFile(name: string, file: string): { bytes: Buffer } | { refused: string } {
    const withheld = this.withheld(name)
    if (withheld) return { refused: withheld }
    const skill = this.get(name)
    if (!skill) return { refused: `no skill named "${name}"` }
    const from = this.origin(skill)
    if (from)
      return file === 'SKILL.md'
        ? { bytes: Buffer.from(from.content) }
        : {
            refused: `the skill "${name}" is no folder on disk (${skill.source}): its files are read with read()`,
          }
    try {
      return { bytes: readSkillFile(skill, file) }
    } catch (err) {
      if (err instanceof SkillFileRefused) return { refused: err.message }
      throw err
    }
  }

  /** A skill's files other than SKILL.md (a contributed skill's as its source lists them). */
  files(name: string, max = FILES_PER_SKILL): string[] {
    const skill = this.get(name)
    if (!skill) return []
    const from = this.origin(skill)
    return from ? from.files.slice(0, max) : skillFiles(skill, max)
  }

  /** Adds a root below the others (watched like them); the disposer removes it, once. */
  addRoot(dir: string, options: SkillRootOptions = {}): () => void {
    const { namespace, source } = options
    if (this.#ended) return () => {} // this instance has stopped: its successor takes roots
    if (namespace !== undefined && !/^[^\s:]+$/.test(namespace))
      throw new TypeError(
        `skills.addRoot(${JSON.stringify(dir)}): the namespace ${JSON.stringify(namespace)} must be one word, without spaces or ":"`,
      )
    const root: SkillRoot = {
      dir: this.expand(dir),
      ...(namespace !== undefined && { namespace }),
      ...(source !== undefined && { source }),
    }
    this.reindex(
      () => this.index.addRoot(root),
      (file) => file.startsWith(root.dir + sep),
    )
    const unwatch = this.options.watch ? this.#watch([root.dir]) : undefined
    let removed = false
    return () => {
      if (removed) return
      removed = true
      void unwatch?.()
      if (!this.#ended)
        this.reindex(
          () => this.index.removeRoot(root),
          () => false,
        )
    }
  }

  /** Takes `name` out of use while the hold stands (see SkillsApi.hold). */
  hold(name: string, why: string): Disposer | undefined {
    if (this.#ended || !this.#find(name)) return undefined
    const release = this.#holds.add(name, why, (isHeld) => {
      if (this.#ended) return // the instance went, and its holds with it
      this.host.logger.info(isHeld ? `skill ${name} held: ${why}` : `skill ${name} back in use`)
      const flip = { held: isHeld ? [name] : [], released: isHeld ? [] : [name] }
      // a follower's failing tap is its own: the hold (or its release) stands either way
      try {
        this.hooks.change.call({ added: [], changed: [], removed: [], ...flip })
      } catch (err) {
        this.host.logger.error(
          `a follower of the skills failed on ${name} being held or released`,
          err,
        )
      }
    })
    return toDisposer(release)
  }

  /** What `skills/list` answers: the skills without their bodies, and everything left out. */
  listing(): SkillsListing {
    const { shadowed, clashes, problems } = this.merged()
    return {
      roots: this.index.roots,
      skills: this.list().map(({ body: _body, ...s }) => s),
      held: this.held().map(({ body: _body, ...s }) => s),
      shadowed,
      clashes,
      problems,
    }
  }

  /** The skills section of `yoke dev`'s summary and `yoke doctor`. */
  summary(): SummarySection {
    return summarySection(this.list(), this.held())
  }

  /** The `skills` service as host code sees it (a consuming instance gets a view of it). */
  service(check: SkillsApi['check']): SkillsApi {
    const index = this.index
    return {
      hooks: this.hooks,
      get roots() {
        return index.roots
      },
      list: () => this.list(),
      get: (name) => this.get(name),
      hold: (name, why) => this.hold(name, why),
      held: () => this.held(),
      shadowed: () => this.merged().shadowed,
      clashes: () => this.merged().clashes,
      problems: () => this.merged().problems,
      addRoot: (dir, options) => this.addRoot(dir, options),
      contribute: (source, contribution) => toDisposer(this.contribute(source, contribution)),
      files: (name, max) => this.files(name, max),
      readFile: (name, file) => this.readFile(name, file),
      read: (name, file, signal) => this.read(name, file, signal),
      body: (name) => {
        const skill = this.get(name)
        return skill && wrapBody(skill)
      },
      check: (dir) => check(this.expand(dir).replace(/[\\/]SKILL\.md$/i, '')),
    }
  }

  /** Watches `dirs`: the skill folders, and in each only what the index reads (see unwatched). */
  #watch(dirs: string[]): Disposer | undefined {
    const deep = (p: string) => unwatched(this.index.roots, p)
    return this.host.watch?.(
      dirs,
      (changes) => {
        const paths = changes.map((c) => c.path)
        this.reindex(
          () => this.index.update(paths),
          (file) => paths.some((p) => file.startsWith(dirname(p)) || p.startsWith(dirname(file))),
        )
      },
      { ignored: deep },
    )
  }
}

/** The files of a skill folder the index reads: a change to any other file is no index change. */
const INDEXED = new Set(['SKILL.md', 'manifest.json'])

/**
 * Whether the skills watcher leaves `path` alone: inside a root, it watches the skill folders
 * and their SKILL.md and manifest.json only. Every other file and folder in a skill (scripts/,
 * references/, …) would cost a watcher each (~4 KB of RSS) for a change the index ignores. A
 * path that is a root, or above one, is watched; with nested roots, what one root watches is
 * watched.
 */
export function unwatched(roots: readonly string[], path: string): boolean {
  let inside = false
  for (const root of roots) {
    if (path === root) return false
    if (!path.startsWith(root + sep)) continue
    inside = true
    const [, file, ...deeper] = relative(root, path).split(sep)
    if (file === undefined || (!deeper.length && INDEXED.has(file))) return false
  }
  return inside
}

/** What differs between two indexes by name: added, removed, and changed (another Skill object). */
export function changeBetween(before: Map<string, Skill>, after: Map<string, Skill>): SkillChange {
  return {
    added: [...after.keys()].filter((n) => !before.has(n)),
    removed: [...before.keys()].filter((n) => !after.has(n)),
    changed: [...after.keys()].filter((n) => before.has(n) && before.get(n) !== after.get(n)),
    held: [],
    released: [],
  }
}
