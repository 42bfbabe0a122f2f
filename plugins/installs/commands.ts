/**
 * @module installs/commands
 * `yoke add SOURCE`, `yoke update [NAME…]`, `yoke remove NAME`, `yoke installed`, `yoke skills
 * add SOURCE`, `yoke marketplace add|list`. They work on the files (the lock and the installed
 * trees), not through a composition: a running `yoke dev` sees the change through its watch.
 */
import { join } from 'node:path'
import {
  color,
  defineCommand,
  displayPath,
  formatError,
  keepingTrust,
  printJson,
  progress,
  YokeError,
  type CommandContext,
  type ParsedArgs,
} from 'yoke/cli'
import type { InstallKind, LockEntry } from './api.ts'
// the installs' error codes join the catalogue on the CLI path too (this module loads alone)
import './errors.ts'

const SCOPE_FLAGS = {
  user: {
    type: 'boolean',
    description: 'the user scope: $YOKE_HOME/installed and $YOKE_HOME/yoke.lock',
  },
} as const

async function scopesOf(cli: CommandContext) {
  const [{ yokeHome }, { projectScope, userScope }] = await Promise.all([
    import('yoke'),
    import('./lock.ts'),
  ])
  const project = projectScope(await cli.projectDir())
  const user = userScope(yokeHome(cli.options))
  return { project, user, both: [project, user] }
}

/**
 * A change of the project's yoke.lock, which project trust covers: made by the user, it keeps a
 * trusted project trusted (cli.keepingTrust; no turn among config edits: an add may fetch for
 * long). `--user` changes the user's own lock.
 */
const lockChange = async <T>(args: ParsedArgs, cli: CommandContext, change: () => Promise<T>) =>
  args.user
    ? change().then((result) => ({ result, trusted: true }))
    : keepingTrust(cli.options, change, [await projectLock(cli)], { turn: false })

const projectLock = async (cli: CommandContext) =>
  (await import('./lock.ts')).projectScope(await cli.projectDir()).lock

/** Kinds that run programs: in a project that is not trusted, they wait (plugins/installs). */
const runsCode = (kind: InstallKind) => kind === 'exec-package' || kind === 'claude-plugin'

const short = (sha: string) => sha.slice(0, 12)
const cwdOf = (args: ParsedArgs) => args.cwd ?? process.cwd()
const versionOf = (e: { version?: string }) => e.version ?? 'no version'

async function addWith(
  args: ParsedArgs,
  source: string | undefined,
  cli: CommandContext,
  kinds?: InstallKind[],
) {
  if (!source)
    throw new YokeError('USAGE', {
      reason: 'name what to install: a folder, a git repository, a tarball URL or NAME@MARKETPLACE',
    })
  const scopes = await scopesOf(cli)
  const scope = args.user ? scopes.user : scopes.project
  const { add } = await import('./install.ts')
  const { result: added, trusted } = await lockChange(args, cli, () =>
    add(source, {
      scope,
      scopes: scopes.both,
      cwd: cli.cwd,
      ...(typeof args.name === 'string' && { name: args.name }),
      force: Boolean(args.force),
      ...(typeof args.registry === 'string' && { registry: args.registry }),
      ...(kinds && { kinds }),
      progress,
    }),
  )
  const waits = !trusted && runsCode(added.entry.kind)
  const unloaded = await nothingLoads(cli, added.entry.kind)
  // installed, but nothing here loads it: said on stderr (exit 0: the install is done and loads
  // as soon as the composition has what takes it; a failure would make scripts retry or --force)
  if (unloaded)
    process.stderr.write(
      `${color.yellow('warning')} ${added.entry.name} is installed, but ${unloaded}\n`,
    )
  if (args.json)
    printJson({
      ok: true,
      install: added.entry,
      dir: added.dir,
      replaced: added.replaced,
      warnings: [...added.warnings, ...(unloaded ? [unloaded] : [])],
      ...(waits && { waitsForTrust: true }),
      ...(unloaded && { loads: false }),
    })
  else {
    const e = added.entry
    const cwd = cwdOf(args)
    process.stdout.write(
      `${color.green('✓')} ${added.replaced ? 'replaced' : 'added'} ${e.name} ${e.version ?? ''}${color.dim(` (${e.kind}${e.source.commit ? ` at ${e.source.commit.slice(0, 12)}` : ''})`)}\n` +
        `  ${color.dim(displayPath(added.dir, cwd))} · sha256 ${short(e.sha256)}… · recorded in ${displayPath(scope.lock, cwd)}\n`,
    )
    for (const w of added.warnings) process.stdout.write(`  ${color.yellow('warning')} ${w}\n`)
    if (waits)
      process.stdout.write(
        `  ${color.yellow('waits')} the project is not trusted: it runs once you review its config and yoke.lock and run \`yoke trust\`\n`,
      )
  }
  return 0
}

/** The built-in plugin whose instance takes each kind from the installs instance. */
const LOADER: Record<InstallKind, { use: string; key: string; what: string }> = {
  skill: { use: 'skills', key: 'skills', what: 'skills' },
  skills: { use: 'skills', key: 'skills', what: 'skills' },
  'exec-package': { use: 'exec-tools', key: 'packages', what: 'exec packages' },
  'claude-plugin': { use: 'claude-plugins', key: 'claude-plugins', what: 'Claude Code plugins' },
}

/**
 * Why nothing in this project's composition would load an install of `kind` (no enabled instance
 * uses installs, or the plugin that takes the kind), with the fix; undefined when it loads. The
 * layers are read, not composed: nothing runs.
 */
async function nothingLoads(cli: CommandContext, kind: InstallKind): Promise<string | undefined> {
  let uses: Set<string>
  try {
    uses = new Set((await cli.instances()).filter((i) => i.enabled).map((i) => i.use))
  } catch {
    return undefined // a config that does not read is reported by the commands that compose it
  }
  const loader = LOADER[kind]
  const missing = [
    ...(uses.has('installs') ? [] : [{ use: 'installs', key: 'installs', what: 'installs' }]),
    ...(uses.has(loader.use) ? [] : [loader]),
  ]
  if (!missing.length) return undefined
  return `nothing in this project's composition loads ${loader.what}: no instance uses ${missing.map((m) => m.use).join(' or ')} (the preset has none); add ${missing.map((m) => `\`${m.key}: { use: ${m.use} }\``).join(' and ')} under plugins: in the project config (yoke.config.yaml), or use a preset that has ${missing.length > 1 ? 'them' : 'it'}`
}

const addFlags = {
  ...SCOPE_FLAGS,
  name: {
    type: 'string',
    value: 'NAME',
    description: 'install under this name (default: the one it declares)',
  },
  force: { type: 'boolean', description: 'replace an install of the same name' },
  registry: {
    type: 'string',
    value: 'URL',
    description:
      'the MCP Registry that mcp:NAME is asked of (default: YOKE_MCP_REGISTRY, else registry.modelcontextprotocol.io)',
  },
} as const

const addCommand = defineCommand({
  name: 'add',
  summary:
    'install a skill, a folder of skills, a plugin executable package or a Claude Code plugin, recorded in yoke.lock',
  usage:
    'yoke add SOURCE [--user] [--name NAME] [--force] [--registry URL] [--json] [common flags]',
  positionals: 1,
  flags: addFlags,
  examples: [
    'yoke add ./my-skill',
    'yoke add ../tools-repo#v1.2.0                  # a git repository at a tag',
    'yoke add https://github.com/acme/tools.git#main:plugins/fmt   # a ref and a sub-path',
    'yoke add ./server.json                         # an MCP server, as its server.json says',
    'yoke add mcp:io.github.acme/weather            # an MCP Registry entry (latest, or @VERSION)',
    'yoke add https://example.com/pkg-1.0.0.tgz --user',
    'yoke add formatter@team-tools                  # an entry of an added marketplace',
    'yoke add npm:@acme/skills@2',
  ],
  run: (args, [source], cli) => addWith(args, source, cli),
})

const skillsAdd = defineCommand({
  name: 'skills add',
  summary:
    'install skills (one skill, a folder of them, or .agents/skills as `npx skills` lays it out), recorded in yoke.lock',
  usage: 'yoke skills add SOURCE [--user] [--name NAME] [--force] [--json] [common flags]',
  positionals: 1,
  flags: addFlags,
  examples: [
    'yoke skills add ./other-project      # its .agents/skills',
    'yoke skills add ./pdf-skill --user',
  ],
  run: (args, [source], cli) => addWith(args, source, cli, ['skill', 'skills']),
})

const updateCommand = defineCommand({
  name: 'update',
  summary:
    'fetch installs again from their recorded sources: old → new version and hash, files added/changed/removed',
  usage: 'yoke update [NAME…] [--user] [--json] [common flags]',
  positionals: 64,
  flags: SCOPE_FLAGS,
  examples: ['yoke update', 'yoke update my-skill formatter', 'yoke update --user --json'],
  async run(args, names, cli) {
    const scopes = await scopesOf(cli)
    const scope = args.user ? scopes.user : scopes.project
    const { update } = await import('./install.ts')
    const { result: results } = await lockChange(args, cli, () =>
      update(names, { scope, scopes: scopes.both, cwd: cli.cwd, progress }),
    )
    if (args.json) {
      printJson({ ok: true, updates: results })
      return 0
    }
    if (!results.length)
      process.stdout.write(
        color.dim(`nothing is installed (${displayPath(scope.lock, cwdOf(args))})\n`),
      )
    for (const r of results) {
      if (r.status === 'up to date') {
        process.stdout.write(
          `${r.name}: up to date ${color.dim(`(${versionOf(r.from)}, sha256 ${short(r.from.sha256)}…)`)}\n`,
        )
        continue
      }
      process.stdout.write(
        r.status === 'restored'
          ? `${color.yellow(r.name)}: restored ${versionOf(r.to)} ${color.dim('(the installed files differed from the lock)')}\n`
          : `${color.green(r.name)}: ${versionOf(r.from)} → ${versionOf(r.to)}, sha256 ${short(r.from.sha256)}… → ${short(r.to.sha256)}…\n`,
      )
      for (const [label, files] of Object.entries(r.diff))
        if (files.length) process.stdout.write(`  ${label}: ${files.join(', ')}\n`)
      for (const w of r.warnings) process.stdout.write(`  ${color.yellow('warning')} ${w}\n`)
    }
    return 0
  },
})

const outdatedCommand = defineCommand({
  name: 'outdated',
  summary:
    "what moved at each install's source: a ref's new commit, a newer registry or npm version; exit 1 when something is outdated",
  usage: 'yoke outdated [NAME…] [--user] [--json] [common flags]',
  positionals: 64,
  flags: SCOPE_FLAGS,
  examples: ['yoke outdated', 'yoke outdated formatter --json'],
  async run(args, names, cli) {
    const scopes = await scopesOf(cli)
    const scope = args.user ? scopes.user : scopes.project
    const { outdated, exitOf } = await import('./outdated.ts')
    const rows = await outdated(names, scope, scopes.both)
    const code = exitOf(rows)
    if (args.json) {
      printJson({
        ok: code === 0,
        outdated: rows
          .filter((r) => r.status === 'outdated' || r.status === 'moved')
          .map((r) => r.name),
        installs: rows,
      })
      return code
    }
    if (!rows.length)
      process.stdout.write(
        color.dim(`nothing is installed (${displayPath(scope.lock, cwdOf(args))})\n`),
      )
    const width = rows.reduce((w, r) => Math.max(w, r.name.length), 8) + 2
    for (const r of rows) {
      const state =
        r.status === 'outdated' || r.status === 'moved'
          ? color.yellow(r.status)
          : r.status === 'failed'
            ? color.red(r.status)
            : color.dim(r.status)
      process.stdout.write(
        `${r.name.padEnd(width)}${state}  ${r.current}${r.latest && r.latest !== r.current ? ` → ${r.latest}` : ''}${r.why ? color.dim(` · ${r.why}`) : ''}\n`,
      )
    }
    return code
  },
})

const removeCommand = defineCommand({
  name: 'remove',
  summary: 'remove an install: its folder and its yoke.lock entry',
  usage: 'yoke remove NAME [--user] [--json] [common flags]',
  positionals: 1,
  flags: SCOPE_FLAGS,
  examples: ['yoke remove my-skill', 'yoke remove formatter --user'],
  async run(args, [name], cli) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'name the install to remove (`yoke installed` lists them)',
      })
    const scopes = await scopesOf(cli)
    const scope = args.user ? scopes.user : scopes.project
    const { remove } = await import('./install.ts')
    const { result: entry } = await lockChange(args, cli, () => remove(name, scope))
    if (args.json) printJson({ ok: true, removed: entry })
    else
      process.stdout.write(
        `removed ${entry.name} ${color.dim(`(${entry.kind}) from ${displayPath(scope.lock, cwdOf(args))} and ${displayPath(join(scope.installed, name), cwdOf(args))}`)}\n`,
      )
    return 0
  },
})

const installedCommand = defineCommand({
  name: 'installed',
  summary:
    'the installs of yoke.lock (project, then --user), each verified against its sha256; exit 1 if one fails',
  usage: 'yoke installed [--json] [common flags]',
  examples: ['yoke installed', 'yoke installed --json'],
  async run(args, _, cli) {
    const scopes = await scopesOf(cli)
    const [{ readLock, problemText }, { verify }] = await Promise.all([
      import('./lock.ts'),
      import('./install.ts'),
    ])
    const rows: Array<{ entry: LockEntry; scope: string; dir: string; ok: boolean; why?: string }> =
      []
    // a lock that cannot be read, or a bad entry, is that lock's or that entry's failure alone
    const problems: string[] = []
    for (const scope of scopes.both) {
      let lock: ReturnType<typeof readLock>
      try {
        lock = readLock(scope.lock)
      } catch (err) {
        problems.push(formatError(err))
        continue
      }
      for (const problem of lock.problems) problems.push(problemText(problem))
      for (const entry of Object.values(lock.installs)) {
        const v = await verify(entry, scope)
        rows.push({ entry, scope: scope.name, dir: v.dir, ok: v.ok, ...(!v.ok && { why: v.why }) })
      }
    }
    for (const problem of problems) process.stderr.write(`${color.yellow('warning')} ${problem}\n`)
    const ok = rows.every((r) => r.ok) && !problems.length
    if (args.json) {
      printJson({ ok, locks: scopes.both.map((s) => s.lock), installs: rows, problems })
      return ok ? 0 : 1
    }
    const cwd = cwdOf(args)
    if (!rows.length)
      process.stdout.write(
        color.dim('nothing is installed: `yoke add SOURCE` installs something\n'),
      )
    // a loop, not Math.max(...rows): a lock of 200,000 entries must not overflow the stack
    const width = rows.reduce((w, r) => Math.max(w, r.entry.name.length), 8) + 2
    for (const r of rows) {
      const state = r.ok
        ? color.green('verified')
        : color.red(r.why?.includes('not installed') ? 'missing' : 'tampered')
      process.stdout.write(
        `${r.entry.name.padEnd(width)}${state}  ${versionOf(r.entry)} · ${r.entry.kind}${r.scope === 'user' ? ' · user' : ''}\n  ${color.dim(`${r.entry.source.given} → ${displayPath(r.dir, cwd)}`)}\n`,
      )
      if (r.why) process.stdout.write(`  ${color.red('error')} ${r.why}\n`)
    }
    return ok ? 0 : 1
  },
})

const marketplaceAdd = defineCommand({
  name: 'marketplace add',
  summary:
    'record a Claude Code marketplace (a folder, its marketplace.json, an http(s) URL, or a git repository) for `yoke add NAME@MARKETPLACE`',
  usage: 'yoke marketplace add PATH|URL [--user] [--json] [common flags]',
  positionals: 1,
  flags: SCOPE_FLAGS,
  examples: [
    'yoke marketplace add ../team-plugins',
    'yoke marketplace add https://example.com/marketplace.json --user',
    'yoke marketplace add https://github.com/anthropics/claude-plugins-official',
  ],
  async run(args, [source], cli) {
    if (!source)
      throw new YokeError('USAGE', {
        reason: 'name the marketplace: a folder, a marketplace.json file or an http(s) URL',
      })
    const scopes = await scopesOf(cli)
    const scope = args.user ? scopes.user : scopes.project
    const [{ readMarketplace }, { updateLock }, { resolve }] = await Promise.all([
      import('./marketplace.ts'),
      import('./lock.ts'),
      import('node:path'),
    ])
    // a URL (a marketplace.json over http(s), a git repository) as given, a path made absolute
    const where = /^([a-z][a-z0-9+.-]*:\/\/|[\w.-]+@[\w.-]+:)/i.test(source)
      ? source
      : resolve(cli.cwd, source)
    const market = await readMarketplace(where)
    await lockChange(args, cli, () =>
      updateLock(scope.lock, (lock) => {
        lock.marketplaces[market.name] = {
          name: market.name,
          source: where,
          addedAt: new Date().toISOString(),
        }
      }),
    )
    if (args.json)
      printJson({
        ok: true,
        marketplace: market.name,
        source: where,
        plugins: market.plugins.map((p) => p.name),
      })
    else
      process.stdout.write(
        `${color.green('✓')} added marketplace ${market.name} ${color.dim(`(${market.plugins.length} plugins: ${market.plugins.map((p) => p.name).join(', ')})`)}\n  install one with \`yoke add NAME@${market.name}\`\n`,
      )
    return 0
  },
})

const marketplaceList = defineCommand({
  name: 'marketplace list',
  summary: 'the marketplaces added (project, then --user) and the plugins each offers now',
  usage: 'yoke marketplace list [--json] [common flags]',
  examples: ['yoke marketplace list'],
  async run(args, _, cli) {
    const scopes = await scopesOf(cli)
    const [{ readLock }, { readMarketplace }] = await Promise.all([
      import('./lock.ts'),
      import('./marketplace.ts'),
    ])
    const out = []
    for (const scope of scopes.both)
      for (const record of Object.values(readLock(scope.lock).marketplaces)) {
        try {
          const market = await readMarketplace(record.source)
          out.push({
            ...record,
            scope: scope.name,
            plugins: market.plugins.map((p) => ({
              name: p.name,
              version: p.version,
              description: p.description,
            })),
          })
        } catch (err) {
          out.push({ ...record, scope: scope.name, error: (err as Error).message })
        }
      }
    if (args.json) printJson({ ok: true, marketplaces: out })
    else {
      if (!out.length)
        process.stdout.write(
          color.dim('no marketplace is added: `yoke marketplace add PATH|URL`\n'),
        )
      for (const m of out) {
        process.stdout.write(
          `${m.name}${m.scope === 'user' ? color.dim(' · user') : ''}  ${color.dim(m.source)}\n`,
        )
        if ('error' in m) process.stdout.write(`  ${color.red('error')} ${m.error}\n`)
        else
          for (const p of m.plugins)
            process.stdout.write(
              `  ${p.name}@${m.name}${p.version ? ` ${p.version}` : ''}${p.description ? color.dim(` · ${p.description}`) : ''}\n`,
            )
      }
    }
    return 0
  },
})

export const commands = [
  addCommand,
  skillsAdd,
  updateCommand,
  outdatedCommand,
  removeCommand,
  installedCommand,
  marketplaceAdd,
  marketplaceList,
]
