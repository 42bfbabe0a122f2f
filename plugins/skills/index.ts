/**
 * skills: SKILL.md packages (the Agent Skills format, with octos's extensions) from layered
 * directories. The catalog goes into the system prompt, `always` skills' bodies too, and the
 * model reads a skill (and its files) through `skills_list` and `skill_read`. Edits to the
 * directories show from the next model turn; no instance restarts.
 */
import { existsSync, lstatSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { z } from 'zod'
import { bindToContext, definePlugin, type Disposer } from 'yoke'
import {
  defaultDirs,
  type SkillContribution,
  type SkillRootOptions,
  type SkillsApi,
} from './api.ts'
import { renderAlways, renderCatalog } from './catalog.ts'
import { SkillRanker } from './ranking.ts'
import { isProblem, type Skill, type SkillProblem } from './parse.ts'
import { makeFilter, readSkill, SkillIndex } from './skill-index.ts'
import { Skills } from './skills.ts'
import { skillTools } from './tools.ts'

export * from './api.ts'

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
    const skills = new Skills(
      { ...cfg, dirs: cfg.dirs ?? defaultDirs(ctx.project) },
      {
        logger: ctx.logger,
        signal: ctx.signal,
        projectDir: ctx.project.dir,
        watch: (dirs, handler, options) => ctx.watch(dirs, handler, options),
      },
    ).start()
    ctx.provide('skillFilter', skills.filter)
    ctx.provide('skills', serviceWithViews(skills.service(checkDir)))
    ctx.control('skills/summary', () => skills.summary())
    // `yoke skills list`, answered by the running dev when there is one
    ctx.control('skills/list', () => skills.listing())
    const ranker = new SkillRanker(cfg)
    for (const tool of skillTools(skills, ranker)) ctx.runtime.register(tool)
    ctx.prompt.register({
      name: 'skills',
      order: 20,
      // pinned skills first, then those the run's task is about: the ones left out are the least likely
      text: ({ task }) =>
        renderCatalog(ranker.order(skills.list(), task), cfg.catalogChars, cfg.descriptionChars),
    })
    ctx.prompt.register({
      name: 'skills-always',
      order: 21,
      text: () => renderAlways(skills.list(), cfg.alwaysChars),
    })
  },
})

/**
 * The service with a view per consumer: the host (tests, the CLI) gets plain disposers; a
 * consuming instance's roots and holds are its effects. Each consumer gets one view, the same at
 * every ctx.get: callers may tell services by identity.
 */
function serviceWithViews(service: SkillsApi): SkillsApi {
  type Consumer = { effect: (label: string, fn: () => void) => Disposer }
  const views = new WeakMap<Consumer, SkillsApi>()
  const viewFor = (c: Consumer) => {
    let view = views.get(c)
    if (!view) {
      view = Object.assign(Object.create(service) as SkillsApi, {
        addRoot(dir: string, options?: SkillRootOptions) {
          const dispose = c.effect(`skills root ${dir}`, service.addRoot(dir, options))
          return () => void dispose()
        },
        hold(name: string, why: string) {
          const release = service.hold(name, why)
          return release && c.effect(`skills hold ${name}`, release)
        },
        contribute(source: string, contribution: SkillContribution) {
          return c.effect(`skills from ${source}`, service.contribute(source, contribution))
        },
      })
      views.set(c, view)
    }
    return view
  }
  return Object.assign(Object.create(service) as SkillsApi, { [bindToContext]: viewFor })
}

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
