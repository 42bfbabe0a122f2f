/**
 * @module capabilities/commands
 * `yoke stats` (metrics per capability id + version, from the running dev or a composition, which
 * reads the JSONL sink when one is configured), `yoke withdraw ID@VERSION --why …` (a config edit:
 * the capabilities instance's `withdrawn` list, and an audit line), `yoke audit` (the log).
 */
import { color, defineCommand, printJson, YokeError, type CommandContext } from 'yoke/cli'
import type { AuditEntry, Capability, MetricsRow } from './api.ts'
import { auditPath, configured, listNow } from './configured.ts'
import { pin, unpin } from './pins.ts'

const stats = defineCommand({
  name: 'stats',
  summary: 'metrics per capability id + version: offered, found, called, ok, errors, p50 / p95',
  usage: 'yoke stats [--since WHEN] [--all] [--fresh] [--json] [common flags]',
  flags: {
    since: {
      type: 'string',
      value: 'WHEN',
      description: 'only rows used since then: an ISO time, or 30m, 2h, 7d ago',
    },
    all: { type: 'boolean', description: 'also list every capability and its version' },
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
  },
  examples: ['yoke stats', 'yoke stats --since 2h --json', 'yoke stats --all'],
  async run(args, _, cli) {
    const since = args.since === undefined ? undefined : sinceTime(String(args.since))
    const reply = await cli.control(
      'capabilities/list',
      { ...(since && { since }) },
      { fresh: Boolean(args.fresh) },
    )
    if (typeof reply === 'number') return reply
    const { rows, capabilities } = reply.answer
    if (args.json) {
      printJson({ ok: true, source: reply.source, rows, ...(args.all && { capabilities }) })
      return 0
    }
    const out = [color.dim(`(${reply.source})`), ...rowLines(rows)]
    if (args.all) out.push(color.bold('capabilities'), ...capabilityLines(capabilities))
    process.stdout.write(out.join('\n') + '\n')
    return 0
  },
})

/** `yoke stats`: two lines per metrics row (what it is, its counts). */
function rowLines(rows: MetricsRow[]): string[] {
  if (!rows.length) return ['no capability has been offered or called yet']
  return rows.flatMap((r) => {
    const errors = Object.entries(r.errors).map(([code, n]) => `${code} ${n}`)
    const latency = r.p50 === undefined ? '' : `  p50 ${r.p50} ms  p95 ${r.p95} ms`
    return [
      `${color.bold(r.id)}@${r.version ?? r.hash}${r.version ? color.dim(` ${r.hash}`) : ''}  ${color.dim(r.source)}`,
      `  offered ${r.offered}  found ${r.found}  called ${r.called}  ok ${r.ok}${errors.length ? `  ${color.red(errors.join(', '))}` : ''}${latency}`,
    ]
  })
}

/** `yoke stats --all`: a line per capability. */
const capabilityLines = (capabilities: Capability[]) =>
  capabilities.map(
    (c) =>
      `  ${c.kind.padEnd(8)}${c.id}@${c.version ?? c.hash}${c.version ? color.dim(` ${c.hash}`) : ''}${c.state ? `  ${c.state}${color.dim(` in ${c.scope}`)}` : ''}${c.refused ? `  ${color.yellow(c.refused)}` : ''}`,
  )

const withdraw = defineCommand({
  name: 'withdraw',
  summary: 'withdraw one version of a tool, package or server everywhere, and record why',
  usage: 'yoke withdraw ID@VERSION --why "REASON" [common flags]',
  positionals: 1,
  flags: {
    why: {
      type: 'string',
      value: 'REASON',
      description: 'why (kept in the config and the audit log)',
    },
  },
  examples: [
    'yoke withdraw note_clear@sha256:1a2b3c4d5e6f --why "clears every note"',
    'yoke withdraw mcp:github@1.4.0 --why "1.4.0 drops the repo argument"',
    'yoke withdraw exec:text-tools@2.0.0 --why "slugify breaks on unicode"',
  ],
  async run(args, [target], cli) {
    const at = target?.lastIndexOf('@') ?? -1
    if (!target || at < 1 || at === target.length - 1)
      throw new YokeError('USAGE', {
        reason: `yoke withdraw takes ID@VERSION (see yoke stats --all for ids and versions), not "${target ?? ''}"`,
      })
    const why = typeof args.why === 'string' ? args.why.trim() : ''
    if (!why)
      throw new YokeError('USAGE', {
        reason: 'say why with --why "…": it is kept with the withdrawal',
      })
    const id = target.slice(0, at)
    const version = target.slice(at + 1)
    const { key, config: current } = await configured(cli)
    // the list as the file holds it under the edit's lock: a withdrawal made meanwhile stays
    const { file } = await cli.editConfig((doc) => {
      const path = ['plugins', key, 'config', 'withdrawn']
      const entry = { id, version, why }
      const list = listNow<typeof entry>(doc, path, current.withdrawn as Array<typeof entry>)
      const same = list.findIndex((w) => w?.id === id && w?.version === version)
      doc.setIn(
        path,
        doc.createNode(same < 0 ? [...list, entry] : list.map((w, i) => (i === same ? entry : w))),
      )
    })
    const auditFile = await auditPath(cli, current.audit)
    if (auditFile) {
      const { appendAuditOrSay } = await import('./audit.ts')
      appendAuditOrSay(auditFile, [
        { at: new Date().toISOString(), who: 'withdraw', id, from: version, to: null, why },
      ])
    }
    if (args.json) printJson({ ok: true, file, id, version, why })
    else
      process.stdout.write(
        `${file}: withdrew ${id}@${version} (${why})\n  a yoke dev running on this config hides and refuses it now; \`yoke audit\` shows the record\n`,
      )
    return 0
  },
})

const audit = defineCommand({
  name: 'audit',
  summary: 'the audit log: every change of what the model can use, who made it, from → to',
  usage: 'yoke audit [--id GLOB] [--json] [common flags]',
  flags: {
    id: { type: 'string', value: 'GLOB', description: 'only these ids (note_*, mcp:github)' },
  },
  examples: ['yoke audit', 'yoke audit --id "mcp__github__*" --json'],
  async run(args, _, cli) {
    const [{ readAudit }, { globToRegExp }] = await Promise.all([
      import('./audit.ts'),
      import('yoke'),
    ])
    const rules = await configured(cli).catch(() => undefined)
    const file = await auditPath(cli, rules?.config.audit)
    const match = typeof args.id === 'string' ? globToRegExp(args.id) : undefined
    const fromStore = file && (await sharedStore(cli)) ? await storeAudit(cli) : undefined
    if (typeof fromStore === 'number') return fromStore
    const entries: Array<AuditEntry & { replica?: string }> = (
      fromStore ??
      (file ? readAudit(file, (problem) => process.stderr.write(`warning: ${problem}\n`)) : [])
    ).filter((e) => !match || match.test(e.id))
    if (args.json) printJson({ ok: true, file, ...(fromStore && { source: 'store' }), entries })
    else if (!entries.length) process.stdout.write(`no audit entries${file ? ` in ${file}` : ''}\n`)
    else
      process.stdout.write(
        entries
          .map(
            (e) =>
              `${color.dim(e.at)} ${e.who.padEnd(10)} ${e.id}  ${e.from ?? '∅'} → ${e.to ?? '∅'}${e.scope ? color.dim(` in ${e.scope}`) : ''}${e.by ? color.dim(` (${e.by})`) : ''}${e.replica ? color.dim(` [${e.replica}]`) : ''}${e.why ? `  ${e.why}` : ''}`,
          )
          .join('\n') + '\n',
      )
    return 0
  },
})

/** Whether the project's config shares state through a Redis store (the audit log's one order is there). */
async function sharedStore(cli: CommandContext): Promise<boolean> {
  const instances = await cli.instances().catch(() => [])
  return instances.some(
    (i) => i.use === 'store' && (i.config as { engine?: unknown } | undefined)?.engine === 'redis',
  )
}

/** The store's audit log, from the running dev or a composition that reaches the store. */
async function storeAudit(cli: CommandContext) {
  const reply = await cli.control('capabilities/audit', {})
  if (typeof reply === 'number') return reply
  for (const p of reply.answer.problems) process.stderr.write(`warning: ${p}\n`)
  return reply.answer.source === 'store' ? reply.answer.entries : undefined
}

/** `30m`, `2h`, `7d` ago, or a date, as an ISO time. */
function sinceTime(text: string): string {
  const ago = /^(\d+)\s*([smhd])$/.exec(text)
  const unit = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }
  const when = ago
    ? new Date(Date.now() - Number(ago[1]) * unit[ago[2] as keyof typeof unit])
    : new Date(text)
  if (Number.isNaN(when.getTime()))
    throw new YokeError('USAGE', {
      reason: `--since takes an ISO time or 30m, 2h, 7d; not "${text}"`,
    })
  return when.toISOString()
}

export const commands = [stats, withdraw, audit, pin, unpin]
