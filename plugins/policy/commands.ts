/**
 * @module policy/commands
 * `yoke policy import [FILE…]`: the permission rules of Claude Code settings files (default: the
 * project's `.claude/settings.json` and `.claude/settings.local.json`) as policy rules, with every
 * rule that has no yoke equivalent and why; printed, or added to the project config with --write.
 */
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  color,
  defineCommand,
  displayPath,
  printJson,
  YokeError,
  type CommandContext,
} from 'yoke/cli'
import type { ImportedRule, SettingsRead } from './claude.ts'
import type { Rule, RuleList } from './rules.ts'

const DEFAULT_FILES = ['.claude/settings.json', '.claude/settings.local.json']

const policyImport = defineCommand({
  name: 'policy import',
  summary:
    "convert Claude Code's permission rules (.claude/settings.json) into policy rules; lists the ones yoke cannot express",
  usage: 'yoke policy import [FILE…] [--write] [--json] [common flags]',
  positionals: 8,
  flags: {
    write: {
      type: 'boolean',
      description: "add the rules to the project config's policy instance (default: print them)",
    },
  },
  examples: [
    'yoke policy import',
    'yoke policy import ~/.claude/settings.json --json',
    'yoke policy import .claude/settings.json --write',
  ],
  async run(args, files, cli) {
    const projectDir = await cli.projectDir()
    const named = files.map((f) => resolve(cli.cwd, f))
    for (const file of named)
      if (!existsSync(file)) throw new YokeError('CONFIG_NOT_FOUND', { kind: 'file', name: file })
    const chosen = named.length
      ? named
      : DEFAULT_FILES.map((f) => join(projectDir, f)).filter((f) => existsSync(f))
    if (!chosen.length)
      throw new YokeError('USAGE', {
        reason: `no Claude Code settings here (${DEFAULT_FILES.join(', ')} in ${projectDir}): name the file, e.g. yoke policy import ~/.claude/settings.json`,
      })
    // the reader brings yaml (for positions): loaded when an import runs, not for --help
    const { readClaudeSettings } = await import('./claude.ts')
    const reads = chosen.map((f) => readClaudeSettings(f))
    const rules = reads.flatMap((r) => r.rules)
    const config = configOf(rules)
    const unmapped = rules.filter((r) => r.rule === undefined)
    const broken = reads.filter((r) => r.error)
    const written = args.write && !broken.length ? await writeRules(cli, config) : undefined
    if (args.json)
      printJson({
        ok: !broken.length,
        files: reads.map(({ file, error, warnings }) => ({ file, error, warnings })),
        rules,
        config,
        unmapped,
        ...(written && { written }),
      })
    else print(reads, config, written, cli.cwd)
    return broken.length ? 1 : 0
  },
})

/** The carried-over rules by list, each once, in the files' order. */
function configOf(rules: ImportedRule[]): Record<RuleList, Rule[]> {
  const out: Record<RuleList, Rule[]> = { deny: [], ask: [], allow: [] }
  for (const r of rules)
    if (r.rule !== undefined && !out[r.list].some((x) => same(x, r.rule!))) out[r.list].push(r.rule)
  return out
}

const same = (a: Rule, b: Rule) => JSON.stringify(a) === JSON.stringify(b)

/**
 * Adds the rules to the policy instance of the project config (the first `use: policy` instance
 * the layers configure, else a new `policy` entry). Lists replace in a layer merge, so a list the
 * project config does not set yet starts from the list in effect (the preset's): nothing is lost.
 */
async function writeRules(cli: CommandContext, config: Record<RuleList, Rule[]>) {
  const instances = await cli.instances()
  const existing = instances.find((i) => i.use === 'policy')
  const key = existing?.key ?? 'policy'
  const effective = (existing?.config ?? {}) as Partial<Record<RuleList, Rule[]>>
  return cli.editConfig((doc) => {
    const added: Partial<Record<RuleList, Rule[]>> = {}
    if (!existing && !doc.hasIn(['plugins', key, 'use']))
      doc.setIn(['plugins', key, 'use'], 'policy')
    for (const list of ['deny', 'ask', 'allow'] as const) {
      if (!config[list].length) continue
      const path = ['plugins', key, 'config', list]
      const own = doc.getIn(path) as { toJSON?: () => unknown } | undefined
      const current = (own?.toJSON?.() ?? effective[list] ?? []) as Rule[]
      const fresh = config[list].filter((r) => !current.some((c) => same(c, r)))
      if (!fresh.length) continue
      doc.setIn(path, doc.createNode([...current, ...fresh]))
      added[list] = fresh
    }
    return { instance: key, added }
  })
}

function print(
  reads: SettingsRead[],
  config: Record<RuleList, Rule[]>,
  written: { file: string; instance: string; added: Partial<Record<RuleList, Rule[]>> } | undefined,
  cwd: string,
) {
  const out = (line: string) => process.stdout.write(line + '\n')
  const show = (r: Rule) => (typeof r === 'string' ? r : JSON.stringify(r))
  for (const read of reads) {
    out(color.bold(displayPath(read.file, cwd)))
    if (read.error)
      out(
        `  ${color.red('error')} ${displayPath(read.file, cwd)}:${read.error.line}:${read.error.col}: ${read.error.message}`,
      )
    for (const w of read.warnings)
      out(
        `  ${color.yellow('warning')} ${displayPath(read.file, cwd)}:${w.line}:${w.col}: ${w.message}`,
      )
    if (!read.error && !read.rules.length) out(color.dim('  no permission rules'))
    for (const r of read.rules) {
      const head = `  ${r.list.padEnd(5)} ${r.claude}`
      if (r.rule === undefined)
        out(`${head}  ${color.red('✗ not carried over')}\n      ${color.dim(r.reason!)}`)
      else
        out(
          `${head}  ${color.green('→')} ${show(r.rule)}${r.note ? `\n      ${color.dim(r.note)}` : ''}`,
        )
    }
  }
  if (written) {
    const added = Object.entries(written.added).map(([list, rules]) => `${rules.length} ${list}`)
    out(
      `${displayPath(written.file, cwd)}: ${added.length ? `added ${added.join(', ')} to` : 'nothing new for'} instance "${written.instance}"`,
    )
    return
  }
  const lists = (['deny', 'ask', 'allow'] as const).filter((l) => config[l].length)
  if (!lists.length) return
  out(color.dim('\n# the policy rules (add them to the project config, or run again with --write)'))
  out('plugins:\n  policy:\n    config:')
  for (const list of lists) {
    out(`      ${list}:`)
    for (const r of config[list]) out(`        - ${JSON.stringify(r)}`)
  }
}

export const commands = [policyImport]
