/**
 * @module skills/commands
 * `yoke skills list|show NAME|check [DIR]`, read from the composed `skills` service (the `skills`
 * plugin is in the base preset).
 */
import { readdirSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Composition } from 'yoke'
import { color, defineCommand, displayPath, printJson, YokeError, type ParsedArgs } from 'yoke/cli'
import type { SkillsApi } from './api.ts'

/** A skill's location for people: a path relative to cwd, a URI (an MCP server's skill) as it is. */
const shown = (file: string, cwd: string) =>
  /^[a-z][a-z0-9+.-]*:\/\//i.test(file) ? file : displayPath(file, cwd)

function skillsOf(composition: Composition | undefined): SkillsApi {
  const service = composition?.get('skills')
  if (!service)
    throw new YokeError('USAGE', {
      reason:
        'no skills instance is running: add `skills: { use: skills }` to the preset (base has it)',
    })
  return service
}

const cwdOf = (args: ParsedArgs) => args.cwd ?? process.cwd()

const skillsList = defineCommand({
  name: 'skills list',
  summary: 'the skills: available or why not, held and why, where from, what they shadow',
  usage: 'yoke skills list [--fresh] [--json] [common flags]',
  flags: {
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
  },
  examples: ['yoke skills list --config config/yoke.yaml', 'yoke skills list --json --fresh'],
  async run(args, _, cli) {
    let reply
    try {
      reply = await cli.control('skills/list', {}, { fresh: Boolean(args.fresh) })
    } catch (err) {
      if (err instanceof YokeError && err.code === 'CONTROL_UNKNOWN') skillsOf(undefined)
      throw err
    }
    if (typeof reply === 'number') return reply
    const { roots, skills, held = [], shadowed, clashes = [], problems } = reply.answer
    if (args.json) {
      printJson({ ok: true, roots, skills, held, shadowed, clashes, problems })
      return 0
    }
    const cwd = cwdOf(args)
    const holds = new Map(held.map((s) => [s.name, s.holds]))
    const all = [...skills, ...held].sort((a, b) => (a.name < b.name ? -1 : 1))
    const width = Math.max(8, ...all.map((s) => s.name.length)) + 2
    for (const s of all) {
      const state = holds.has(s.name)
        ? color.red(`held: ${holds.get(s.name)!.join('; ')}`)
        : s.available
          ? color.green('available')
          : color.yellow(`unavailable: ${s.why}`)
      process.stdout.write(
        `${s.name.padEnd(width)}${state}${s.always ? color.dim(' · always on') : ''}${s.hasTools ? color.dim(' · tools') : ''}${s.source ? color.dim(` · ${s.source}`) : ''}\n  ${color.dim(shown(s.file, cwd))}\n`,
      )
    }
    for (const c of clashes)
      process.stdout.write(
        color.dim(
          `clash: "${c.name}" is in several namespaces, each kept: ${c.skills.map((s) => `${s.name}${s.source ? ` (${s.source})` : ''}`).join(', ')}\n`,
        ),
      )
    for (const s of shadowed)
      process.stdout.write(
        color.yellow(
          `shadowed: ${s.name} in ${shown(s.shadowed, cwd)} (by ${shown(s.winner, cwd)})\n`,
        ),
      )
    for (const p of problems)
      process.stdout.write(
        color.red(
          `skipped: ${shown(p.file, cwd)}${p.line ? `:${p.line}` : ''}${p.source ? ` (${p.source})` : ''}: ${p.message}\n`,
        ),
      )
    if (!all.length)
      process.stdout.write(
        color.dim(`no skills in ${roots.map((r) => displayPath(r, cwd)).join(', ')}\n`),
      )
    return 0
  },
})

const skillsShow = defineCommand({
  name: 'skills show',
  summary: 'one skill: its metadata, its instructions and where it lives',
  usage: 'yoke skills show NAME [--json] [common flags]',
  examples: ['yoke skills show csv-insights --config config/yoke.yaml'],
  positionals: 1,
  run: (args, [name], cli) =>
    cli.compose(
      async (composition) => {
        if (!name) throw new YokeError('USAGE', { reason: 'yoke skills show needs a skill name' })
        const skills = skillsOf(composition)
        const skill = skills.get(name)
        const held = skill ? undefined : skills.held().find((s) => s.name === name)
        if (held)
          throw new YokeError('USAGE', {
            reason: `the skill "${name}" is held, out of use: ${held.holds.join('; ')}`,
          })
        if (!skill)
          throw new YokeError('USAGE', {
            reason: `no skill named "${name}" (yoke skills list shows them)`,
          })
        if (args.json) printJson({ ok: true, skill })
        else {
          const meta = [
            skill.version && `version ${skill.version}`,
            skill.license && `license ${skill.license}`,
            skill.always && 'always on',
            !skill.available && `unavailable: ${skill.why}`,
          ].filter(Boolean)
          process.stdout.write(
            `${color.bold(skill.name)} ${color.dim(shown(skill.file, cwdOf(args)))}\n${skill.description}\n${meta.length ? color.dim(meta.join(' · ')) + '\n' : ''}\n${skill.body.trim()}\n`,
          )
          for (const w of skill.warnings) process.stdout.write(color.yellow(`warning: ${w}\n`))
        }
        return 0
      },
      { quiet: true },
    ),
})

const skillsCheck = defineCommand({
  name: 'skills check',
  summary:
    'validate skills against the Agent Skills spec (a directory, or every configured one); exit 1 on errors',
  usage: 'yoke skills check [DIR] [--json] [common flags]',
  examples: ['yoke skills check examples/skills', 'yoke skills check ~/.agents/skills --json'],
  positionals: 1,
  run: (args, [dir], cli) =>
    cli.compose(
      async (composition) => {
        const skills = skillsOf(composition)
        // DIR on the command line is the shell's: from the working directory (`--cwd`, else the
        // process's), not from the project config's directory (`~/` the service expands)
        const given = dir && (dir.startsWith('~/') ? dir : resolve(cwdOf(args), dir))
        // the configured roots are places skills may be: one that is not there is no error
        const roots = given
          ? [given]
          : skills.roots.filter((d) => statSync(d, { throwIfNoEntry: false }))
        const absent = dir ? [] : skills.roots.filter((d) => !roots.includes(d))
        const results = roots.map((d) => skills.check(d))
        const checked = results.flatMap((r) => r.skills)
        // what the spec rejects is an error here, though yoke loads it (`loads: true`)
        const problems = [
          ...results.flatMap((r) => r.problems),
          ...checked.flatMap((s) => s.violations.map((v) => ({ file: s.file, ...v, loads: true }))),
        ]
        const warnings = checked.flatMap((s) =>
          s.warnings
            .filter((w) => !s.violations.some((v) => v.message === w))
            .map((w) => ({ file: s.file, warning: w })),
        )
        // a folder that holds skill folders one level further down (a repository's root): say where
        const deeper = given && !checked.length && !problems.length ? skillParents(given) : []
        if (args.json)
          printJson({
            ok: !problems.length,
            skills: checked.length,
            problems,
            warnings,
            absent,
            ...(deeper.length && { deeper }),
          })
        else {
          if (deeper.length)
            process.stdout.write(
              color.yellow(
                `no skill folders (a folder with SKILL.md) directly in ${displayPath(given!, cwdOf(args))}; these folders in it hold some: ${deeper.map((d) => displayPath(d, cwdOf(args))).join(', ')} (check one of them)\n`,
              ),
            )
          if (absent.length)
            process.stdout.write(
              color.dim(
                `not there (skipped): ${absent.map((d) => displayPath(d, cwdOf(args))).join(', ')}\n`,
              ),
            )
          for (const p of problems)
            process.stdout.write(
              `${color.red('error')} ${displayPath(p.file, cwdOf(args))}${p.line ? `:${p.line}` : ''}: ${p.message}${'loads' in p ? color.dim(' (yoke loads it anyway)') : ''}\n`,
            )
          for (const w of warnings)
            process.stdout.write(
              `${color.yellow('warning')} ${displayPath(w.file, cwdOf(args))}: ${w.warning}\n`,
            )
          process.stdout.write(
            `${checked.length} skills checked: ${problems.length} errors, ${warnings.length} warnings\n`,
          )
        }
        return problems.length ? 1 : 0
      },
      { quiet: true },
    ),
})

/** The folders in `dir` that hold skill folders (a bounded look, 200 folders at most, hidden ones skipped). */
function skillParents(dir: string): string[] {
  const folders = (d: string) => {
    try {
      return readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules')
        .slice(0, 200)
        .map((e) => join(d, e.name))
    } catch {
      return []
    }
  }
  return folders(dir).filter((sub) =>
    folders(sub).some((skill) => statSync(join(skill, 'SKILL.md'), { throwIfNoEntry: false })),
  )
}

export const commands = [skillsList, skillsShow, skillsCheck]
