/**
 * @module cli/inspect
 * `yoke inspect`: instances and their states (and why pending or failed), services and owners,
 * hooks and taps, live resources, then the sections plugins contribute (`<plugin>/inspect`: the
 * capabilities, the system prompt, …). It shows a running `yoke dev` of the same
 * project when one answers, otherwise it composes the config once, reports, and disposes it.
 */
import type { Composition } from '../config/composer.ts'
import type { Snapshot } from './snapshot.ts'
import type { EffectNode } from '../kernel/disposer.ts'
import type { InspectSection } from '../kernel/types.ts'
import { YokeError } from '../errors.ts'
import { contributions } from './contributions.ts'
import { composeOptions } from './args.ts'
import { defineCommand } from './command.ts'
import { ask, socketPath } from './control.ts'
import {
  color,
  displayPath,
  errorJson,
  formatError,
  logLine,
  printJson,
  progress,
} from './output.ts'

export const inspect = defineCommand({
  name: 'inspect',
  summary: 'instances and states (and why), services, hooks and taps, resources, plugin sections',
  usage: 'yoke inspect [--fresh] [--effects] [--section <title>] [common flags]',
  flags: {
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
    effects: { type: 'boolean', description: "list each instance's effects (timers, watchers, …)" },
    section: {
      type: 'string',
      description: 'print only the section a plugin contributes under this title, in full',
    },
  },
  examples: [
    'yoke inspect --config config/yoke.yaml',
    'yoke inspect --effects --fresh',
    'yoke inspect --section prompt',
  ],
  async run(args) {
    const [{ Composition }, { loadLayers }, { snapshot }] = await Promise.all([
      import('../config/composer.ts'),
      import('../config/layers.ts'),
      import('./snapshot.ts'),
    ])
    const options = composeOptions(args)
    let shown: Inspected | undefined
    let source = 'composed now'
    // a running dev shows its own layers: ask it only when no flag asks for other ones (`--config` names the project)
    if (!args.fresh && !args.preset && !args.patch?.length && !args.set?.length) {
      const { projectDir, projectFile } = await loadLayers(options)
      const reply = await ask(socketPath(projectDir, projectFile), { cmd: 'inspect' })
      if (reply.status === 'error') throw reply.error
      if (reply.status === 'ok') {
        shown = reply.answer as Inspected
        source = 'live from yoke dev'
      }
    }
    if (!shown) {
      progress('composing…')
      const composition = new Composition({ ...options, runMode: 'once' })
      composition.kernel.hooks.log.tap('yoke inspect', (record) => {
        if (record.level === 'warn' || record.level === 'error')
          process.stderr.write(logLine(record))
      })
      const event = await composition.start()
      if (!event.ok) {
        await composition.close()
        if (args.json) printJson({ ok: false, errors: event.errors.map(errorJson) })
        else process.stderr.write(event.errors.map((e) => formatError(e)).join('\n') + '\n')
        return 2
      }
      shown = { ...(await snapshot(composition)), sections: await inspectSections(composition) }
      // what waits is also said in the words one-shot commands use (one line names `yoke trust`)
      const { waitingLines } = await import('./waiting.ts')
      for (const line of waitingLines(composition))
        process.stderr.write(`${color.yellow('waiting', process.stderr)} ${line}\n`)
      await composition.close()
    }
    if (typeof args.section === 'string')
      return printSection(shown.sections, args.section, args.json, source)
    const { sections, ...snap } = shown
    if (args.json) {
      const data = Object.fromEntries(sections.map((s) => [s.title, s.data ?? s.lines]))
      printJson({ ...data, ok: true, source, ...snap, sections })
    } else
      process.stdout.write(
        color.dim(`(${source})\n`) +
          (await printInstances(snap, args.cwd ?? process.cwd(), Boolean(args.effects))) +
          sections.map(printSectionText).join(''),
      )
    return 0
  },
})

/** What inspect shows: the snapshot, and the sections plugins contribute (`<plugin>/inspect`). */
export type Inspected = Snapshot & { sections: InspectSection[] }

/** The sections plugins contribute to `yoke inspect`, in plugin-name order (one that fails says so). */
export async function inspectSections(composition: Composition): Promise<InspectSection[]> {
  const found = await contributions(composition.kernel, 'inspect', inspectSection)
  return found.flatMap(({ plugin, answer, error }) =>
    error ? [{ title: plugin, lines: [`could not be read: ${error}`] }] : answer ? [answer] : [],
  )
}

function inspectSection(value: unknown): InspectSection | undefined {
  if (value === undefined || value === null) return undefined
  const v = value as InspectSection
  if (
    typeof v.title !== 'string' ||
    (v.note !== undefined && typeof v.note !== 'string') ||
    !Array.isArray(v.lines) ||
    !v.lines.every((line) => typeof line === 'string')
  )
    throw new Error('the answer is not an inspect section ({ title, note?, lines, data? })')
  return v
}

function printSectionText(section: InspectSection): string {
  const head = color.bold(section.title) + (section.note ? color.dim(` ${section.note}`) : '')
  return [head, ...section.lines.map((line) => `  ${line}`)].join('\n') + '\n'
}

function printSection(
  sections: InspectSection[],
  title: string,
  json: boolean | undefined,
  source: string,
): number {
  const section = sections.find((s) => s.title === title)
  if (!section) {
    const known = sections.map((s) => s.title).join(', ') || 'none'
    throw new YokeError('SECTION_UNKNOWN', { title, known })
  }
  if (json) printJson({ ok: true, source, ...section })
  else {
    const body = section.lines.length
      ? section.lines.join('\n')
      : color.dim(`(${section.note ?? 'empty'})`)
    process.stdout.write(color.dim(`(${source})\n`) + body + '\n')
  }
  return 0
}

const MARK: Record<string, (t: string) => string> = {
  active: (t) => color.green(t),
  pending: (t) => color.yellow(t),
  loading: (t) => color.cyan(t),
  failed: (t) => color.red(t),
  disabled: (t) => color.dim(t),
  disposed: (t) => color.dim(t),
}

export async function printInstances(snap: Snapshot, cwd: string, effects = true): Promise<string> {
  const rel = (f: string) => displayPath(f, cwd)
  const out: string[] = []
  out.push(
    `${color.bold('preset')} ${snap.preset ? rel(snap.preset) : '?'} · ${snap.layers.length} layers: ${snap.layers.map((l) => `${l.kind} ${rel(l.file)}`).join(', ')}`,
  )
  out.push(color.bold('instances'))
  const keyWidth = Math.max(8, ...snap.instances.map((i) => i.key.length)) + 2
  for (const i of snap.instances) {
    const state = (MARK[i.state] ?? String)(i.state.padEnd(9))
    out.push(
      `  ${i.key.padEnd(keyWidth)}${state}${(i.plugin ?? '?').padEnd(16)}${color.dim(`${i.use}${i.fiber ? ` #${i.fiber}` : ''}`)}`,
    )
    for (const w of i.waitingFor ?? []) {
      const who = w.providers.length
        ? `provided by ${w.providers.map((p) => `instance "${p.instance}" (${p.state})`).join(', ')}`
        : w.hint
      out.push(`      ${color.yellow('waits for')} service "${w.service}": ${who}`)
    }
    if (i.error) {
      out.push(
        `      ${(i.error.code === 'PLUGIN_WAITING' ? color.yellow : color.red)(i.error.code)} ${i.error.message}`,
      )
      if (i.error.location) out.push(`      ${color.dim('at')} ${rel(i.error.location)}`)
      out.push(`      ${color.dim('hint')} ${i.error.hint}`)
    }
    if (effects) out.push(...tree(i.effects, '      '))
  }
  if (snap.tools.length) {
    out.push(color.bold('tools'))
    for (const source of new Set(snap.tools.map((t) => t.source))) {
      const tools = snap.tools.filter((t) => t.source === source)
      out.push(
        `  ${source}: ${tools.map((t) => t.name + (t.risk === 'low' ? '' : color.yellow(` (${t.risk})`))).join(', ')}`,
      )
    }
  }
  if (snap.services.length) {
    out.push(color.bold('services'))
    for (const s of snap.services)
      out.push(
        `  ${s.name} ${color.dim('←')} ${s.owner}${s.active ? '' : color.yellow(' (not active)')}`,
      )
  }
  out.push(color.bold('hooks'))
  for (const h of snap.hooks)
    out.push(`  ${h.hook}: ${h.taps.length ? h.taps.join(', ') : color.dim('no taps')}`)
  const resources = Object.entries(snap.resources).map(([k, v]) => `${k}s ${v}`)
  out.push(`${color.bold('resources')} ${resources.join(' · ') || 'none'}`)
  return out.join('\n') + '\n'
}

function tree(nodes: EffectNode[], indent: string): string[] {
  return nodes.flatMap((n) => [
    `${indent}${color.dim('·')} ${n.label}`,
    ...tree(n.children ?? [], indent + '  '),
  ])
}
