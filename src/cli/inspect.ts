/**
 * @module cli/inspect
 * `yoke inspect`: instances and their states (and why pending or failed), services and owners,
 * hooks and taps, live resources, and each capability's id, version, hash and call counts when the
 * composition answers the `capabilities` control. It shows a running `yoke dev` of the same
 * project when one answers, otherwise it composes the config once, reports, and disposes it.
 */
import type { Composition } from '../config/composer.ts'
import type { Snapshot } from './snapshot.ts'
import type { EffectNode } from '../kernel/disposer.ts'
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
  summary: 'instances and states (and why), services, hooks and taps, resources',
  usage: 'yoke inspect [--fresh] [--effects] [--prompt] [common flags]',
  flags: {
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
    effects: { type: 'boolean', description: "list each instance's effects (timers, watchers, …)" },
    prompt: { type: 'boolean', description: 'print the system prompt the sections render' },
  },
  examples: [
    'yoke inspect --config config/yoke.yaml',
    'yoke inspect --effects --fresh',
    'yoke inspect --prompt',
  ],
  async run(args) {
    const [{ Composition }, { loadLayers }, { snapshot }] = await Promise.all([
      import('../config/composer.ts'),
      import('../config/layers.ts'),
      import('./snapshot.ts'),
    ])
    const options = composeOptions(args)
    let snap: Snapshot | undefined
    let capabilities: CapabilityLine[] | undefined
    let source = 'composed now'
    const what = args.prompt ? 'prompt' : 'inspect'
    // a running dev shows its own layers: ask it only when no flag asks for other ones (`--config` names the project)
    if (!args.fresh && !args.preset && !args.patch?.length && !args.set?.length) {
      const { projectDir, projectFile } = await loadLayers(options)
      const reply = await ask(socketPath(projectDir, projectFile), { cmd: what })
      if (reply.status === 'error') throw reply.error
      if (reply.status === 'ok' && args.prompt)
        return printPrompt(String(reply.answer ?? ''), args.json, 'live from yoke dev')
      if (reply.status === 'ok') {
        snap = reply.answer as Snapshot
        source = 'live from yoke dev'
        const caps = await ask(socketPath(projectDir, projectFile), { cmd: 'capabilities' })
        if (caps.status === 'ok') capabilities = capabilityLines(caps.answer)
      }
    }
    if (!snap) {
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
      if (args.prompt) {
        const prompt = await renderPrompt(composition)
        await composition.close()
        return printPrompt(prompt, args.json, source)
      }
      snap = await snapshot(composition)
      // what waits is also said in the words one-shot commands use (one line names `yoke trust`)
      const { waitingLines } = await import('./waiting.ts')
      for (const line of waitingLines(composition))
        process.stderr.write(`${color.yellow('waiting', process.stderr)} ${line}\n`)
      if (composition.kernel.controls().includes('capabilities'))
        capabilities = capabilityLines(await composition.kernel.ask('capabilities'))
      await composition.close()
    }
    if (args.json) printJson({ ok: true, source, ...snap, ...(capabilities && { capabilities }) })
    else
      process.stdout.write(
        color.dim(`(${source})\n`) +
          (await printInstances(snap, args.cwd ?? process.cwd(), Boolean(args.effects))) +
          (capabilities ? printCapabilities(capabilities) : ''),
      )
    return 0
  },
})

/** The system prompt as the model would see it now: the `prompt` control ('' when none answers). */
export async function renderPrompt(composition: Composition): Promise<string> {
  if (!composition.kernel.controls().includes('prompt')) return ''
  return String(await composition.kernel.ask('prompt'))
}

function printPrompt(prompt: string, json: boolean | undefined, source: string): number {
  if (json) printJson({ ok: true, source, prompt })
  else
    process.stdout.write(
      color.dim(`(${source})\n`) + (prompt || color.dim('(empty: no prompt sections)')) + '\n',
    )
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

/** One capability as inspect shows it: what it is, and its calls (summed over its metrics rows). */
export interface CapabilityLine {
  kind: string
  id: string
  version?: string
  hash: string
  state?: string
  refused?: string
  called: number
  ok: number
  p95?: number
}

type Answer = {
  capabilities?: Array<Omit<CapabilityLine, 'called' | 'ok' | 'p95'>>
  rows?: Array<{ id: string; hash: string; called: number; ok: number; p95?: number }>
}

/** The capabilities control's answer (the capabilities plugin's), each capability with its row. */
function capabilityLines(answer: unknown): CapabilityLine[] {
  const { capabilities = [], rows = [] } = (answer ?? {}) as Answer
  return capabilities.map(({ kind, id, version, hash, state, refused }) => {
    const row = rows.find((r) => r.id === id && r.hash === hash)
    return {
      kind,
      id,
      ...(version !== undefined && { version }),
      hash,
      ...(state && { state }),
      ...(refused && { refused }),
      called: row?.called ?? 0,
      ok: row?.ok ?? 0,
      ...(row?.p95 !== undefined && { p95: row.p95 }),
    }
  })
}

function printCapabilities(lines: CapabilityLine[]): string {
  const out = [color.bold('capabilities') + color.dim(' (yoke stats for every count)')]
  const width = Math.max(12, ...lines.map((c) => c.id.length + (c.version?.length ?? 0) + 1)) + 2
  for (const c of lines) {
    const calls = c.kind === 'tool' ? `called ${c.called}  ok ${c.ok}` : ''
    const p95 = c.p95 === undefined ? '' : `  p95 ${c.p95} ms`
    out.push(
      `  ${c.kind.padEnd(8)}${(c.version ? `${c.id}@${c.version}` : c.id).padEnd(width)}${color.dim(c.hash)}  ${calls}${p95}${c.state ? `  ${c.state}` : ''}${c.refused ? `  ${color.yellow(c.refused)}` : ''}`,
    )
  }
  return out.join('\n') + '\n'
}

function tree(nodes: EffectNode[], indent: string): string[] {
  return nodes.flatMap((n) => [
    `${indent}${color.dim('·')} ${n.label}`,
    ...tree(n.children ?? [], indent + '  '),
  ])
}
