/**
 * @module cli/doctor
 * `yoke doctor`: what stands between this project and a working harness, one check per line — the
 * Node version, the project config and its layers, every instance with its state and why (a
 * missing key, `yoke trust`), the tools by source, the hooks and their taps, the sections plugins
 * show on the dev screen (MCP servers and their state, skills, …), a running dev, yoke's home —
 * then the checks plugins add through controls named `<plugin>/doctor` (and those a running dev's
 * plugins give that this fresh copy does not, such as a reload held there). It exits 1 on an error,
 * and an instance the config asks for that is not running is one (for CI).
 */
import { accessSync, constants, mkdirSync, readFileSync } from 'node:fs'
import type { Composition } from '../config/composer.ts'
import { join } from 'node:path'
import { stripVTControlCharacters } from 'node:util'
import { YOKE_ROOT } from '../roots.ts'
import { messageOf } from '../errors.ts'
import { composeOptions } from './args.ts'
import { defineCommand } from './command.ts'
import { ask, socketPath } from './control.ts'
import { color, displayPath, formatError, printJson, progress } from './output.ts'
import { contributions } from './contributions.ts'
import { summarySection } from './summary.ts'
import { waitingInstances, waitingLines } from './waiting.ts'

/** yoke's own package.json (its version, its engines). */
export function yokePackage(): { version: string; engines: { node: string } } {
  return JSON.parse(readFileSync(join(YOKE_ROOT, 'package.json'), 'utf8'))
}

export interface Check {
  level: 'ok' | 'warn' | 'error'
  /** what the check is about: instance, trust, tools, hook, a section's title (mcp servers…) */
  topic?: string
  message: string
  hint?: string
}

export const doctor = defineCommand({
  name: 'doctor',
  summary: "check Node, the config, every instance, yoke's home and plugins' own checks",
  usage: 'yoke doctor [--json] [common flags]',
  examples: ['yoke doctor', 'yoke doctor --config config/yoke.yaml --json'],
  async run(args) {
    const [{ Composition }, { loadLayers, yokeHome }] = await Promise.all([
      import('../config/composer.ts'),
      import('../config/layers.ts'),
    ])
    const options = composeOptions(args)
    const checks: Check[] = [nodeCheck()]
    const stack = await loadLayers(options)
    const cwd = options.cwd
    checks.push(
      stack.projectFile
        ? { level: 'ok', message: `project config ${displayPath(stack.projectFile, cwd)}` }
        : {
            level: 'warn',
            message: 'no project config: the preset runs alone',
            hint: 'Create yoke.config.yaml (or pass --config FILE).',
          },
    )
    progress('composing…')
    const composition = new Composition({ ...options, runMode: 'once' })
    try {
      const event = await composition.start()
      for (const error of event.errors)
        checks.push({ level: 'error', message: formatError(error).split('\n')[0]! })
      if (event.ok)
        checks.push(...(await instanceChecks(composition)), ...(await sectionChecks(composition)))
      checks.push(...(await pluginChecks(composition)))
    } finally {
      await composition.close()
    }
    checks.push(...(await liveChecks(socketPath(stack.projectDir, stack.projectFile), checks)))
    checks.push(homeCheck(yokeHome(options)))
    return report(checks, Boolean(args.json))
  },
})

function nodeCheck(): Check {
  const { engines } = yokePackage()
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number]
  const [needMajor, needMinor = 0] = /(\d+)(?:\.(\d+))?/
    .exec(engines.node)!
    .slice(1)
    .map((n) => Number(n ?? 0))
  const ok = major > needMajor! || (major === needMajor && minor >= needMinor)
  return {
    level: ok ? 'ok' : 'error',
    message: `node ${process.versions.node} (yoke needs ${engines.node})`,
    hint: ok ? undefined : `Install Node ${engines.node.replace('>=', '')} or later.`,
  }
}

/**
 * Every instance with its state and why: active ok; failed, or waiting with PLUGIN_WAITING (trust,
 * a variable), an error; pending on a service, a warning (a preset may hold one on purpose). Then
 * one line for what the config asks for and is not running — an error, for CI.
 */
async function instanceChecks(composition: Composition): Promise<Check[]> {
  const { snapshot } = await import('./snapshot.ts')
  const snap = await snapshot(composition)
  const instances = snap.instances.filter((i) => i.use !== 'core' && i.state !== 'disabled')
  const waiting = waitingInstances(composition)
  const checks: Check[] = instances.map((i) => {
    const waits = i.waitingFor?.map((w) => `${w.service}${w.hint ? ` (${w.hint})` : ''}`).join('; ')
    const held = i.error?.code === 'PLUGIN_WAITING'
    const of = i.parent ? `, a child of "${i.parent}"` : ''
    return {
      level: i.state === 'active' ? 'ok' : i.state === 'failed' || held ? 'error' : 'warn',
      topic: 'instance',
      message: `instance "${i.key}" (${i.plugin ?? i.use}${of}) is ${i.state}${i.error ? `: ${i.error.message}` : ''}${waits ? `: waits for ${waits}` : ''}${i.error?.location ? ` (at ${i.error.location}${i.error.frame ? `, from ${i.error.frame}` : ''})` : ''}`,
      hint: i.state === 'active' ? undefined : i.error?.hint,
    }
  })
  // the config's own instances (not the children plugins spawn) that are not running
  const asked = instances.filter((i) => !i.parent)
  const down = asked.filter((i) => i.state !== 'active')
  checks.push(
    down.length
      ? {
          level: 'error',
          topic: 'instance',
          message: `${down.length} of the ${asked.length} instances the config asks for ${down.length === 1 ? 'is' : 'are'} not running: ${down.map((i) => i.key).join(', ')}`,
          hint: 'Each one is listed above with its reason and fix; `yoke inspect` shows more.',
        }
      : {
          level: 'ok',
          topic: 'instance',
          message: `all ${asked.length} configured instances active`,
        },
  )
  // what waits for trust, in the one line that names `yoke trust`
  const trust = waiting.filter((w) => w.trust)
  if (trust.length)
    checks.push({ level: 'error', topic: 'trust', message: waitingLines(composition, trust)[0]! })
  // the tools by source, and every hook a plugin or the kernel tapped
  const sources = [...new Set(snap.tools.map((t) => t.source))]
  if (!sources.length)
    checks.push({ level: 'ok', topic: 'tools', message: 'no tools: no instance registered any' })
  for (const source of sources) {
    const names = snap.tools.filter((t) => t.source === source).map((t) => t.name)
    checks.push({
      level: 'ok',
      topic: 'tools',
      message: `tools from ${source}: ${names.length} (${names.join(', ')})`,
    })
  }
  for (const { hook, taps } of snap.hooks.filter((h) => h.taps.length))
    checks.push({ level: 'ok', topic: 'hook', message: `hook ${hook}: ${taps.join(', ')}` })
  return checks
}

/** The sections plugins give the dev screen (`<plugin>/summary`: MCP servers, skills, …), row by row. */
async function sectionChecks(composition: Composition): Promise<Check[]> {
  const checks: Check[] = []
  for (const { plugin, answer, error } of await contributions(
    composition.kernel,
    'summary',
    summarySection,
  )) {
    if (error) {
      checks.push({
        level: 'error',
        topic: plugin,
        message: `${plugin}: could not be read (${error})`,
      })
      continue
    }
    if (!answer) continue
    const { title } = answer
    const rows = (answer.rows ?? []).map(([k, v]) => `${k}  ${v}`)
    for (const text of [...rows, ...(answer.lines ?? [])])
      checks.push({
        level: 'ok',
        topic: title,
        message: `${title}: ${stripVTControlCharacters(text)}`,
      })
  }
  return checks
}

/**
 * A running dev's own plugin checks (what holds only in it: a reload held until its turn ends, a
 * server it lost), said as the dev's where they differ from this fresh copy's.
 */
async function liveChecks(socket: string, composed: Check[]): Promise<Check[]> {
  const live = await ask(socket, { cmd: 'doctor' })
  if (live.status === 'none') return [{ level: 'ok', message: 'no yoke dev runs this project' }]
  const checks: Check[] = [{ level: 'ok', message: 'a yoke dev runs this project' }]
  if (live.status === 'error')
    return [
      ...checks,
      {
        level: 'warn',
        message: `the running yoke dev did not give its checks (${live.error.message})`,
        hint: 'Restart yoke dev with this version of yoke.',
      },
    ]
  const seen = new Set(composed.map((c) => `${c.level} ${c.message}`))
  for (const check of Array.isArray(live.answer) ? (live.answer as Check[]) : [])
    if (!seen.has(`${check.level} ${check.message}`))
      checks.push({ ...check, message: `in the running yoke dev: ${check.message}` })
  return checks
}

/** The checks plugins add (`<plugin>/doctor`), each message led by the plugin's name. */
export async function pluginChecks(composition: Composition): Promise<Check[]> {
  const checks: Check[] = []
  const list = (answer: unknown) => (Array.isArray(answer) ? (answer as Check[]) : [])
  for (const { plugin, answer, error } of await contributions(
    composition.kernel,
    'doctor',
    list,
    30_000,
  )) {
    if (error) checks.push({ level: 'error', message: `${plugin}: its check failed (${error})` })
    for (const check of answer ?? [])
      checks.push({ ...check, message: `${plugin}: ${check.message}` })
  }
  return checks
}

function homeCheck(home: string): Check {
  try {
    mkdirSync(home, { recursive: true })
    accessSync(home, constants.W_OK)
    return { level: 'ok', message: `yoke's home ${home} is writable` }
  } catch (err) {
    return {
      level: 'error',
      message: `yoke's home ${home} is not writable (${messageOf(err)})`,
      hint: 'Set YOKE_HOME to a writable directory.',
    }
  }
}

function report(checks: Check[], json: boolean): number {
  const errors = checks.filter((c) => c.level === 'error').length
  const warnings = checks.filter((c) => c.level === 'warn').length
  if (json) printJson({ ok: !errors, checks })
  else {
    const mark = { ok: color.green('✓'), warn: color.yellow('!'), error: color.red('✗') }
    for (const c of checks)
      process.stdout.write(
        `${mark[c.level]} ${c.message}\n${c.hint ? `  ${color.dim(`hint ${c.hint}`)}\n` : ''}`,
      )
    process.stdout.write(
      `${checks.length - errors - warnings} ok, ${plural(warnings, 'warning')}, ${plural(errors, 'error')}\n`,
    )
  }
  return errors ? 1 : 0
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`
