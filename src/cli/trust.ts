/**
 * @module cli/trust
 * `yoke trust`: the project's owner says its own code may run (local plugins, exec packages,
 * shell hooks, stdio MCP servers from the project's config); `--show` says where it stands and
 * what waits, `--revoke` forgets it. The answer is remembered in $YOKE_HOME/trust.json with the
 * hash of each of the project's config files, so an edited config asks again. `yoke dev` on a
 * terminal offers the same question once (offerTrust).
 */
import { mkdirSync } from 'node:fs'
import { basename, dirname, relative } from 'node:path'
import { createInterface } from 'node:readline'
import type { Composition } from '../config/composer.ts'
import { codeOf, projectFiles, stateFiles, type ProjectConfig } from '../config/trust.ts'
import type { LoadOptions } from '../config/layers.ts'
import { readConfigText } from '../config/yaml.ts'
import type { InstanceSpec } from '../config/resolve.ts'
import { composeOptions } from './args.ts'
import { defineCommand } from './command.ts'
import { color, displayPath, on, printJson } from './output.ts'

/** The project the options name: its directory and its own config files (read, not checked). */
async function projectOf(options: LoadOptions): Promise<ProjectConfig> {
  const { loadLayers } = await import('../config/layers.ts')
  const stack = await loadLayers({ ...options, check: false })
  if (stack.errors.length) throw stack.errors[0]
  return { dir: stack.projectDir, files: projectFiles(stack, options) }
}

/** What waits for trust in the config as it is: each instance key and what it would run. */
async function waitingFor(
  options: LoadOptions,
): Promise<Array<{ instance: string; runs: string }>> {
  const [{ resolveConfig }, { ModuleLoader }] = await Promise.all([
    import('../config/resolve.ts'),
    import('../config/modules.ts'),
  ])
  // untrusted, so nothing of the project's is imported: only built-in plugins, to read their declarations
  const resolved = await resolveConfig({ ...options, trust: false }, new ModuleLoader())
  return [
    ...resolved.instances.filter((s) => s.untrusted).map(runsOf(resolved.stack.projectDir)),
    ...stateFiles(resolved.stack.projectDir).flatMap(lockedCode),
  ]
}

/**
 * The installs a project's state file records that run code (the installs plugin's lock: they
 * wait for trust): read as plain JSON through the config reader, leniently (the plugin that keeps
 * the file reports a broken one).
 */
function lockedCode(file: string): Array<{ instance: string; runs: string }> {
  try {
    // the config reader: a FIFO or a huge file is refused (then nothing is listed), never waited on
    const lock = JSON.parse(readConfigText(file)) as {
      installs?: Record<string, { kind?: string }>
    }
    return Object.entries(lock.installs ?? {})
      .filter(([, e]) => e?.kind === 'exec-package' || e?.kind === 'claude-plugin')
      .map(([name, e]) => ({ instance: `install ${name}`, runs: `${e.kind} (${basename(file)})` }))
  } catch {
    return []
  }
}

/**
 * What waits for trust in a running composition: its config's instances, and the children that
 * plugins start pending for it (installs from the lock, stdio servers of a project's .mcp.json).
 */
function waitingIn(composition: Composition) {
  const specs = [...composition.reconciler.running.values()].map((r) => r.spec)
  const children = composition.kernel.fibers.filter(
    (f) =>
      f.parent &&
      f.state === 'pending' &&
      f.error?.code === 'PLUGIN_WAITING' &&
      f.error.hint.includes('`yoke trust`'),
  )
  return [
    ...specs
      .filter((s) => s.untrusted && s.enabled)
      .map(runsOf(composition.current?.stack.projectDir ?? '')),
    ...children.map((f) => ({ instance: f.key, runs: `project code (${f.plugin.name})` })),
  ]
}

/** The column of the waiting list's names: 16, or wider for a long one. */
const widthOf = (waiting: Array<{ instance: string }>) =>
  Math.max(16, ...waiting.map((w) => w.instance.length + 2))

const runsOf = (projectDir: string) => (spec: InstanceSpec) => ({
  instance: spec.key,
  runs: codeOf(spec, projectDir),
})

export const trust = defineCommand({
  name: 'trust',
  summary: "let this project's own code run (local plugins, packages, hooks, stdio servers)",
  usage: 'yoke trust [--show] [--revoke] [--json] [common flags]',
  flags: {
    show: { type: 'boolean', description: 'say whether the project is trusted, and what waits' },
    revoke: { type: 'boolean', description: 'forget the trust: its code waits again' },
  },
  examples: [
    'yoke trust --show            # trusted? which config files? what waits?',
    'yoke trust                   # after reviewing the config: its code may run',
    'yoke trust --revoke',
    'yoke dev --trust             # trust one run without remembering it (CI: YOKE_TRUST=1)',
  ],
  async run(args) {
    const options = composeOptions(args)
    const where = { home: options.home, env: options.env }
    const { recordTrust, revokeTrust, trustState, trustedByEnv, trustFile } =
      await import('../config/trust.ts')
    const project = await projectOf(options)
    const cwd = options.cwd
    const files = project.files.map((f) => displayPath(f, cwd))
    if (args.show && args.revoke) {
      const { YokeError } = await import('../errors.ts')
      throw new YokeError('USAGE', { reason: '--show and --revoke go alone: use one of them' })
    }
    if (args.revoke) {
      const found = await revokeTrust(project.dir, where)
      if (args.json) printJson({ project: project.dir, revoked: found })
      else
        console.log(
          found
            ? `${project.dir} is no longer trusted: its own code waits (a running yoke dev stops it now)`
            : `${project.dir} was not trusted: nothing to revoke`,
        )
      return 0
    }
    if (args.show) {
      const state = trustState(project, where)
      const waiting = await waitingFor(options)
      const byEnv = trustedByEnv(where)
      if (args.json) {
        printJson({ project: state.dir, ...state, byEnv, waiting })
        return 0
      }
      const words = {
        trusted: color.green('trusted'),
        new: color.yellow('not trusted yet'),
        declined: color.yellow('declined'),
        changed: color.yellow(`asked again: ${state.changed.join(', ')} changed`),
      }
      const since = state.record ? ` (answered ${state.record.at.slice(0, 16)})` : ''
      console.log(`${state.dir}: ${words[state.state]}${color.dim(since)}`)
      for (const problem of state.problems) console.error(color.yellow(`warning: ${problem}`))
      console.log(`  config files: ${files.join(', ') || color.dim('none of its own')}`)
      if (byEnv) console.log(`  YOKE_TRUST=${process.env.YOKE_TRUST} trusts every project here`)
      if (state.state !== 'trusted' && waiting.length) {
        console.log(`  waits for trust:`)
        for (const w of waiting) console.log(`    ${w.instance.padEnd(widthOf(waiting))}${w.runs}`)
      } else if (!waiting.length) console.log(color.dim('  nothing in its config waits for trust'))
      console.log(color.dim(`  the store: ${trustFile(where)}`))
      return 0
    }
    const waiting = await waitingFor(options)
    const record = await recordTrust(project, true, where)
    if (args.json) {
      printJson({
        project: project.dir,
        trusted: true,
        at: record.at,
        files: record.files,
        waiting,
      })
      return 0
    }
    console.log(
      files.length
        ? `trusted ${project.dir} (its config as it is now: ${files.join(', ')})`
        : `trusted ${project.dir} (it has no yoke config of its own: what your layers run from its files, such as its .mcp.json, may run)`,
    )
    if (waiting.length)
      console.log(
        `  may run now: ${waiting.map((w) => w.instance).join(', ')} ${color.dim('(a running yoke dev starts them at once)')}`,
      )
    console.log(color.dim('  an edit to those files asks again; `yoke trust --revoke` forgets it'))
    return 0
  },
})

/**
 * `yoke dev` on a terminal: when instances of the first load wait for trust because the project
 * was never asked about, or its config changed since, ask once. Yes records the trust and reloads
 * (they start); no records the refusal (not asked again until the config changes); no answer
 * (end of input) records nothing. Whether it asked.
 */
export async function offerTrust(
  composition: Composition,
  io: { input: NodeJS.ReadableStream; output: NodeJS.WriteStream } = {
    input: process.stdin,
    output: process.stderr,
  },
): Promise<boolean> {
  await composition.kernel.settled() // the children that plugins start pending, too
  const waiting = waitingIn(composition)
  const stack = composition.current?.stack
  if (!waiting.length || !stack || composition.options.trust !== undefined) return false
  const { recordTrust, trustState, trustedByEnv } = await import('../config/trust.ts')
  const where = { home: composition.options.home, env: composition.options.env }
  const project = { dir: stack.projectDir, files: projectFiles(stack, composition.options) }
  if (trustedByEnv(where)) return false
  const state = trustState(project, where)
  if (state.state !== 'new' && state.state !== 'changed') return false
  const c = on(io.output)
  const cwd = composition.options.cwd
  const lines = [
    `${c.yellow('?')} this project's config runs its own code, which waits until you trust it:`,
    ...waiting.map((w) => `    ${w.instance.padEnd(widthOf(waiting))}${w.runs}`),
    ...(state.state === 'changed'
      ? [`  ${state.changed.join(', ')} changed since it was last answered`]
      : []),
    `  trust ${state.dir} (${project.files.map((f) => displayPath(f, cwd)).join(', ')})? [y/N] `,
  ]
  io.output.write(lines.join('\n'))
  const rl = createInterface({ input: io.input, terminal: false })
  const line = await new Promise<string | undefined>((resolve) => {
    rl.once('line', resolve)
    rl.once('close', () => resolve(undefined))
  })
  rl.close()
  if (line === undefined) {
    io.output.write('\n')
    return true
  }
  const yes = /^y(es)?$/i.test(line.trim())
  // the answer is about the files as they were shown: one edited since is asked about again
  await recordTrust(project, yes, where, state.files)
  io.output.write(
    yes
      ? `  ${c.green('trusted')}: starting it\n`
      : `  ${c.dim('not trusted: it stays waiting (`yoke trust` trusts it later)')}\n`,
  )
  if (yes) await composition.reload(['(trusted)'])
  return true
}

/**
 * Runs `change`, the user's own edit of files trust covers: the project config (`cli.editConfig`:
 * yoke mcp add, pin, withdraw…) or a file a plugin keeps digests in (`yoke add`, `update`,
 * `remove` write the installs plugin's lock); `writes` are the files it edits. A project trusted
 * before it (or with nothing to trust yet: no config, no lock) is trusted after it, with those
 * files as they are now — unless another of its config files changed or appeared meanwhile (not
 * the user's edit: then the project is asked about again). Any other project stays as it was.
 * `trusted`: whether the project is trusted after it (its installs may run). A short edit takes
 * its `turn` among others; one that may fetch for long (`yoke add`) says `turn: false`.
 */
export async function keepingTrust<T>(
  options: LoadOptions,
  change: () => Promise<T>,
  writes: string[],
  { turn: taking = true }: { turn?: boolean } = {},
): Promise<{ result: T; trusted: boolean }> {
  const where = { home: options.home, env: options.env }
  // a config edit is short: edits of trusted projects take turns from the look before to the
  // record after, or one that looked while another's record was not written yet would see a
  // changed file and leave the project untrusted (a lock change, `yoke add`, may fetch: no turns)
  const turn = taking ? await takeTurn(where) : undefined
  try {
    return await keeping(options, change, writes)
  } finally {
    await turn?.().catch(() => {})
  }
}

async function keeping<T>(
  options: LoadOptions,
  change: () => Promise<T>,
  writes: string[],
): Promise<{ result: T; trusted: boolean }> {
  const { changedFiles, configHashes, recordTrust, trustState, trustedByEnv } =
    await import('../config/trust.ts')
  const where = { home: options.home, env: options.env }
  const isTrusted = (project: ProjectConfig) => {
    try {
      return trustState(project, where).state === 'trusted'
    } catch {
      return false // a broken store: it says so at the next load
    }
  }
  // a config that does not read is not trusted anew here: the change is made, trust stays as it is
  const before = await projectOf(options).catch(() => undefined)
  const hashesBefore = before ? configHashes(before) : {}
  const kept = before !== undefined && (!before.files.length || isTrusted(before))
  const result = await change()
  const after = await projectOf(options).catch(() => undefined)
  if (!after) return { result, trusted: false }
  const edited = writes.map((f) => relative(after.dir, f))
  const hashesAfter = configHashes(after)
  const onlyOurs = changedFiles(hashesBefore, hashesAfter).every((f) => edited.includes(f))
  if (kept && onlyOurs && after.files.length) await recordTrust(after, true, where, hashesAfter)
  const trusted = (kept && onlyOurs) || trustedByEnv(where) || isTrusted(after)
  return { result, trusted }
}

/**
 * Waits for this process's turn among the config edits that keep trust (a lock beside the trust
 * store, `trust.json.edits.lock`; the store's own lock is taken inside, to record). Undefined when
 * no turn can be had (the home cannot be written, or another edit held it too long): the edit is
 * made anyway, as before there were turns.
 */
async function takeTurn(where: { home?: string; env?: NodeJS.ProcessEnv }) {
  const { trustFile } = await import('../config/trust.ts')
  const { default: lockfile } = await import('proper-lockfile')
  const file = trustFile(where)
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
    // its own name (proper-lockfile keeps one lock per name in a process: the store's is inside)
    return await lockfile.lock(`${file}.edits`, {
      realpath: false,
      stale: 10_000,
      retries: { retries: 300, factor: 1, minTimeout: 100, maxTimeout: 100 },
    })
  } catch {
    return undefined
  }
}
