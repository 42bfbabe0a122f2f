/**
 * skills: SKILL.md packages (the Agent Skills format, with octos's extensions) from layered
 * directories. The catalog goes into the system prompt, `always` skills' bodies too, and the
 * model reads a skill (and its files) through `skills_list` and `skill_read`. Edits to the
 * directories show from the next model turn; no instance restarts.
 */
import { existsSync, lstatSync } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { z } from 'zod'
import { bindToContext, defineHooks, definePlugin, SyncHook, toDisposer, type Disposer } from 'yoke'
import { defaultDirs, type SkillChange, type SkillRootOptions, type SkillsApi } from './api.ts'
import { renderAlways, renderCatalog, wrapBody } from './catalog.ts'
import { SkillRanker } from './ranking.ts'
import { readSkillFile, SkillFileRefused, skillFiles } from './files.ts'
import { SkillHolds } from './holds.ts'
import { isProblem, type Skill, type SkillProblem } from './parse.ts'
import { report, summarySection } from './report.ts'
import { makeFilter, readSkill, SkillIndex, type SkillRoot } from './skill-index.ts'
import { skillTools, type SkillsInUse } from './tools.ts'

export * from './api.ts'

/** how many of a skill's files `files()` lists by default */
const FILES_PER_SKILL = 200

const config = z
  .object({
    /** skills directories, highest priority first; relative ones are relative to the project */
    dirs: z.array(z.string().min(1)).optional(),
    /** use only these skills (and packages) */
    only: z.array(z.string().min(1)).optional(),
    /** never use these */
    except: z.array(z.string().min(1)).default([]),
    /** skill-name globs the catalog lists first, whatever the task (direct) */
    pinned: z.array(z.string().min(1)).default([]),
    /** skill-name globs left out of the catalog: skills_list(query) finds them (deferred) */
    deferred: z.array(z.string().min(1)).default([]),
    /** skill-name globs neither in the catalog nor in skills_list: skill_read by name only (hidden) */
    hidden: z.array(z.string().min(1)).default([]),
    /** the catalog's share of the system prompt, in characters */
    catalogChars: z.number().int().min(200).default(8000),
    /** each description in the catalog is cut to this */
    descriptionChars: z.number().int().min(20).default(300),
    /** the always-on skills' bodies' share of the system prompt, in characters */
    alwaysChars: z.number().int().min(200).default(20000),
    watch: z.boolean().default(true),
  })
  .strict()

export default definePlugin({
  name: 'skills',
  inject: ['runtime', 'prompt', 'project'],
  provides: ['skills', 'skillFilter'],
  config,
  apply(ctx, cfg) {
    const expand = (d: string) =>
      resolve(ctx.project.dir, d.startsWith('~/') ? join(homedir(), d.slice(2)) : d)
    const configured = [...new Set((cfg.dirs ?? defaultDirs(ctx.project)).map(expand))]
    const filter = makeFilter(cfg.only, cfg.except)
    const index = new SkillIndex(configured, filter).scan()
    const hooks = defineHooks('skills', { change: new SyncHook<[SkillChange]>(['change']) })
    report(index, ctx.logger)

    /** Applies `update` to the index, then logs and announces what it changed. */
    const reindex = (update: () => void, concerns: (file: string) => boolean) => {
      const before = new Map(index.skills.map((s) => [s.name, s]))
      const problemsBefore = JSON.stringify(index.problems)
      update()
      const after = new Map(index.skills.map((s) => [s.name, s]))
      const change: SkillChange = {
        added: [...after.keys()].filter((n) => !before.has(n)),
        removed: [...before.keys()].filter((n) => !after.has(n)),
        changed: [...after.keys()].filter((n) => before.has(n) && before.get(n) !== after.get(n)),
        held: [],
        released: [],
      }
      report(index, ctx.logger, concerns)
      if (!change.added.length && !change.removed.length && !change.changed.length) {
        if (JSON.stringify(index.problems) !== problemsBefore)
          ctx.logger.info(`skills unchanged; problems: ${index.problems.length}`)
        return
      }
      const parts = (['added', 'changed', 'removed'] as const)
        .filter((k) => change[k].length)
        .map((k) => `${k} ${change[k].join(', ')}`)
      ctx.logger.info(`skills ${parts.join('; ')} (${index.skills.length} in all)`)
      hooks.change.call(change)
    }
    // only a skill's own SKILL.md and manifest.json are indexed: deeper files (and whatever a
    // symlink inside a skill leads to) are not walked
    const deep = (p: string) =>
      index.roots.some((r) => p.startsWith(r + sep) && relative(r, p).split(sep).length > 2)
    const watch = (dirs: string[]) =>
      ctx.watch(
        dirs,
        (changes) => {
          const paths = changes.map((c) => c.path)
          reindex(
            () => index.update(paths),
            (file) => paths.some((p) => file.startsWith(dirname(p)) || p.startsWith(dirname(file))),
          )
        },
        { ignored: deep },
      )

    function addRoot(dir: string, options: SkillRootOptions = {}): () => void {
      const { namespace, source } = options
      if (ctx.signal.aborted) return () => {} // this instance has stopped: its successor takes roots
      if (namespace !== undefined && !/^[^\s:]+$/.test(namespace))
        throw new TypeError(
          `skills.addRoot(${JSON.stringify(dir)}): the namespace ${JSON.stringify(namespace)} must be one word, without spaces or ":"`,
        )
      const root: SkillRoot = {
        dir: expand(dir),
        ...(namespace !== undefined && { namespace }),
        ...(source !== undefined && { source }),
      }
      reindex(
        () => index.addRoot(root),
        (file) => file.startsWith(root.dir + sep),
      )
      const unwatch = cfg.watch ? watch([root.dir]) : undefined
      let removed = false
      return () => {
        if (removed) return
        removed = true
        void unwatch?.()
        if (!ctx.signal.aborted)
          reindex(
            () => index.removeRoot(root),
            () => false,
          )
      }
    }

    // a held skill stays in the index (its edits are still read) but is out of use everywhere
    const holds = new SkillHolds()
    const inUse: SkillsInUse = {
      list: () => index.skills.filter((s) => !holds.isHeld(s.name)),
      get: (name) => (holds.isHeld(name) ? undefined : index.get(name)),
      withheld: (name) =>
        holds.isHeld(name) && index.get(name)
          ? `the skill "${name}" is withheld: ${holds.reasons(name).join('; ')}`
          : undefined,
    }
    const held = () =>
      index.skills
        .filter((s) => holds.isHeld(s.name))
        .map((s) => ({ ...s, holds: holds.reasons(s.name) }))
    function hold(name: string, why: string): Disposer | undefined {
      if (ctx.signal.aborted || !index.get(name)) return undefined
      const release = holds.add(name, why, (isHeld) => {
        if (ctx.signal.aborted) return // the instance went, and its holds with it
        ctx.logger.info(isHeld ? `skill ${name} held: ${why}` : `skill ${name} back in use`)
        const flip = { held: isHeld ? [name] : [], released: isHeld ? [] : [name] }
        // a follower's failing tap is its own: the hold (or its release) stands either way
        try {
          hooks.change.call({ added: [], changed: [], removed: [], ...flip })
        } catch (err) {
          ctx.logger.error(`a follower of the skills failed on ${name} being held or released`, err)
        }
      })
      return toDisposer(release)
    }

    ctx.provide('skillFilter', filter)
    ctx.control('summary:skills', () => summarySection(inUse.list(), held()))
    // `yoke skills list`, answered by the running dev when there is one
    ctx.control('skills-list', () => ({
      roots: index.roots,
      skills: inUse.list().map(({ body: _body, ...s }) => s),
      held: held().map(({ body: _body, ...s }) => s),
      shadowed: index.shadowed,
      clashes: index.clashes,
      problems: index.problems,
    }))
    const service: SkillsApi = {
      hooks,
      get roots() {
        return index.roots
      },
      list: inUse.list,
      get: inUse.get,
      hold,
      held,
      shadowed: () => index.shadowed,
      clashes: () => index.clashes,
      problems: () => index.problems,
      addRoot,
      files(name, max = FILES_PER_SKILL) {
        const skill = inUse.get(name)
        return skill ? skillFiles(skill, max) : []
      },
      readFile(name, file) {
        const withheld = inUse.withheld(name)
        if (withheld) return { refused: withheld }
        const skill = inUse.get(name)
        if (!skill) return { refused: `no skill named "${name}"` }
        try {
          return { bytes: readSkillFile(skill, file) }
        } catch (err) {
          if (err instanceof SkillFileRefused) return { refused: err.message }
          throw err
        }
      },
      body(name) {
        const skill = inUse.get(name)
        return skill && wrapBody(skill)
      },
      check: (dir) => checkDir(expand(dir).replace(/[\\/]SKILL\.md$/i, '')),
    }
    // the host (tests, the CLI) gets plain disposers; a consuming instance's roots are its effects.
    // Each consumer gets one view, the same at every ctx.get: callers may tell services by identity.
    type Consumer = { effect: (label: string, fn: () => void) => Disposer }
    const views = new WeakMap<Consumer, SkillsApi>()
    const viewFor = (c: Consumer) => {
      let view = views.get(c)
      if (!view) {
        view = Object.assign(Object.create(service) as SkillsApi, {
          addRoot(dir: string, options?: SkillRootOptions) {
            const dispose = c.effect(`skills root ${dir}`, addRoot(dir, options))
            return () => void dispose()
          },
          hold(name: string, why: string) {
            const release = hold(name, why)
            return release && c.effect(`skills hold ${name}`, release)
          },
        })
        views.set(c, view)
      }
      return view
    }
    ctx.provide(
      'skills',
      Object.assign(Object.create(service) as SkillsApi, { [bindToContext]: viewFor }),
    )
    const ranker = new SkillRanker(cfg)
    for (const tool of skillTools(inUse, ranker)) ctx.runtime.register(tool)
    ctx.prompt.register({
      name: 'skills',
      order: 20,
      // pinned skills first, then those the run's task is about: the ones left out are the least likely
      text: ({ task }) =>
        renderCatalog(ranker.order(inUse.list(), task), cfg.catalogChars, cfg.descriptionChars),
    })
    ctx.prompt.register({
      name: 'skills-always',
      order: 21,
      text: () => renderAlways(inUse.list(), cfg.alwaysChars),
    })

    if (cfg.watch) watch(configured)
  },
})

/** `yoke skills check DIR`: a skills directory, or one skill's directory, read as it is (no filter). */
function checkDir(abs: string): { skills: Skill[]; problems: SkillProblem[] } {
  if (!existsSync(abs))
    return { skills: [], problems: [{ file: abs, line: 0, message: 'no such directory' }] }
  const isSkill = ['SKILL.md', 'skill.md'].some((f) =>
    lstatSync(join(abs, f), { throwIfNoEntry: false }),
  )
  if (isSkill) {
    // one skill: a name that differs from its directory shows
    const one = readSkill(dirname(abs), basename(abs))
    return one && !isProblem(one)
      ? { skills: [one], problems: [] }
      : { skills: [], problems: one ? [one] : [] }
  }
  const checked = new SkillIndex([abs], makeFilter(undefined, [])).scan()
  const duplicates = checked.shadowed.map((s) => ({
    file: s.shadowed,
    line: 1,
    message: `a second skill named "${s.name}" (the first is ${s.winner})`,
  }))
  return { skills: checked.skills, problems: [...checked.problems, ...duplicates] }
}
