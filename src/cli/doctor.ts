/**
 * @module cli/doctor
 * `yoke doctor`: what stands between this project and a working harness, one check per line — the
 * Node version, the project config and its layers, every instance that failed or waits (and why:
 * a missing key shows here), a running dev, yoke's home directory — then the checks plugins add
 * through controls named `doctor:<title>` (each answers a list of checks).
 */
import { accessSync, constants, mkdirSync, readFileSync } from 'node:fs'
import type { Composition } from '../config/composer.ts'
import { join } from 'node:path'
import { YOKE_ROOT } from '../roots.ts'
import { messageOf } from '../errors.ts'
import { composeOptions } from './args.ts'
import { defineCommand } from './command.ts'
import { ask, socketPath } from './control.ts'
import { color, displayPath, formatError, printJson, progress } from './output.ts'

/** yoke's own package.json (its version, its engines). */
export function yokePackage(): { version: string; engines: { node: string } } {
  return JSON.parse(readFileSync(join(YOKE_ROOT, 'package.json'), 'utf8'))
}

export interface Check {
  level: 'ok' | 'warn' | 'error'
  message: string
  hint?: string
}

/** controls named `doctor:<title>` answer a list of checks */
const PLUGIN_CHECKS = 'doctor:'

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
      if (event.ok) checks.push(...(await instanceChecks(composition)))
      checks.push(...(await pluginChecks(composition)))
    } finally {
      await composition.close()
    }
    const live = await ask(socketPath(stack.projectDir, stack.projectFile), { cmd: 'ping' })
    checks.push({
      level: 'ok',
      message:
        live.status === 'none' ? 'no yoke dev runs this project' : 'a yoke dev runs this project',
    })
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

async function instanceChecks(composition: Composition): Promise<Check[]> {
  const { snapshot } = await import('./snapshot.ts')
  const snap = await snapshot(composition)
  const instances = snap.instances.filter((i) => i.use !== 'core' && i.state !== 'disabled')
  const troubled = instances.filter((i) => i.state !== 'active')
  const checks: Check[] = troubled.map((i) => {
    const waits = i.waitingFor?.map((w) => `${w.service}${w.hint ? ` (${w.hint})` : ''}`).join('; ')
    return {
      // failed needs a fix; pending may be by design (no key yet, nothing provides a service)
      level: i.state === 'failed' ? 'error' : 'warn',
      message: `instance "${i.key}" (${i.plugin ?? i.use}) is ${i.state}${i.error ? `: ${i.error.message}` : ''}${waits ? `: waits for ${waits}` : ''}`,
      hint: i.error?.hint,
    }
  })
  const active = instances.length - troubled.length
  return [{ level: 'ok', message: `${active} of ${instances.length} instances active` }, ...checks]
}

async function pluginChecks(composition: Composition): Promise<Check[]> {
  const names = composition.kernel.controls().filter((n) => n.startsWith(PLUGIN_CHECKS))
  const checks: Check[] = []
  for (const name of names.sort()) {
    const title = name.slice(PLUGIN_CHECKS.length)
    try {
      const answer = await composition.kernel.ask(name, {})
      for (const check of Array.isArray(answer) ? (answer as Check[]) : [])
        checks.push({ ...check, message: `${title}: ${check.message}` })
    } catch (err) {
      checks.push({ level: 'error', message: `${title}: its check failed (${messageOf(err)})` })
    }
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
