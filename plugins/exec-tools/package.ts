/**
 * One package: a directory with manifest.json (and with SKILL.md beside it, a skill too). Loading
 * reads the manifest, finds and verifies the executable; the package plugin (one child instance
 * per package) registers its tools and its extras: prompt sections from `prompts.include`, an
 * mcp-client per `mcp_servers` entry, and its shell hooks. Disposing the child undoes all of it,
 * so a changed package restarts alone.
 */
import { createHash } from 'node:crypto'
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { definePlugin, globToRegExp, YokeError, type CallContext, type ToolDefinition } from 'yoke'
import mcpClient from '../mcp-client/index.ts'
import shellHooks from '../shell-hooks/index.ts'
import { toolEnv } from '../shared/env.ts'
import { riskyPattern } from '../shared/schema.ts'
import { findExecutable, IntegrityError, IntegrityGate, verify } from './executable.ts'
import { parseManifest, type Manifest, type ManifestProblem } from './manifest.ts'
import { resultOf, runExecutable } from './run.ts'

export const DEFAULT_TIMEOUT_SECS = 600
const SPAWN_ONLY_MESSAGE =
  'SUCCESS: Task is now running in background. The result will be delivered to the user automatically. No further action needed.'
const PROMPT_FILE_BYTES = 64 * 1024
const PROMPT_FILES = 50
const MANIFEST_BYTES = 1024 * 1024

export interface Package {
  dir: string
  manifest: Manifest
  warnings: ManifestProblem[]
  /** the verified executable; none for an extras-only package */
  exe?: { path: string; sha256: string; gate: IntegrityGate }
  /** the files of prompts.include, read at load */
  prompts: Array<{ rel: string; text: string }>
  /** changes when the manifest, the executable's bytes or a prompt file change */
  fingerprint: string
}

export interface PackageFailure {
  dir: string
  errors: ManifestProblem[]
}

/** Reads and verifies the package in `dir`. */
export async function loadPackage(
  dir: string,
  requireSigned = false,
): Promise<Package | PackageFailure> {
  const file = join(dir, 'manifest.json')
  const fail = (message: string, at: Partial<ManifestProblem> = {}): PackageFailure => ({
    dir,
    errors: [{ file, line: 1, col: 1, message, ...at }],
  })
  let text: string
  try {
    text = readManifest(file)
  } catch (err) {
    return fail(`cannot read manifest.json: ${(err as Error).message}`)
  }
  const { manifest, errors, warnings } = parseManifest(text, file)
  if (!manifest) return { dir, errors }
  // octos's require_signed: an unpinned executable, or extras that nothing pins, are refused
  if (requireSigned && !manifest.sha256)
    return fail(
      `${manifest.id} is not signed (no sha256) and requireSigned is on${manifest.tools.length ? '' : ': an extras-only package cannot be signed'}`,
    )
  let exe: Package['exe']
  if (manifest.tools.length) {
    const found = findExecutable(dir, manifest.name)
    if ('problem' in found) return fail(found.problem)
    try {
      const verified = await verify(found.path, manifest.sha256)
      exe = { path: verified.path, sha256: verified.sha256, gate: new IntegrityGate(verified) }
    } catch (err) {
      return fail(`${manifest.id}: integrity check failed: ${(err as Error).message}`)
    }
  }
  const promptWarnings: ManifestProblem[] = []
  const prompts = promptFiles({ dir, manifest }, (message) =>
    promptWarnings.push({ file, line: 1, col: 1, message }),
  )
  // prompt files count as the package: editing one restarts it
  const fingerprint = createHash('sha256')
    .update(text)
    .update('\0')
    .update(exe?.sha256 ?? '')
    .update(JSON.stringify(prompts))
    .digest('hex')
  return { dir, manifest, warnings: [...warnings, ...promptWarnings], exe, prompts, fingerprint }
}

/**
 * The manifest's text: a regular file (not a link to /dev/zero, not a FIFO that never ends), read
 * through one descriptor with a cap, so what was checked is what is read.
 */
function readManifest(file: string): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const st = fstatSync(fd)
    if (!st.isFile()) throw new Error('it is not a regular file')
    if (st.size > MANIFEST_BYTES)
      throw new Error(`it is ${st.size} bytes; the limit is ${MANIFEST_BYTES}`)
    const buffer = Buffer.alloc(st.size)
    const read = readSync(fd, buffer, 0, st.size, 0)
    return buffer.subarray(0, read).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

export interface PackageSettings {
  pkg: Package
  workRoot: string
  maxStdoutBytes: number
}

/** The child instance of one package. */
export const packagePlugin = definePlugin({
  name: 'exec-package',
  inject: ['runtime'],
  apply(ctx, config) {
    const settings = config as unknown as PackageSettings
    const { pkg } = settings
    const { manifest } = pkg
    const workDir = join(settings.workRoot, manifest.id)
    for (const tool of manifest.tools) {
      const risky = riskyPattern(tool.inputSchema)
      if (risky) {
        ctx.logger.warn(`package ${manifest.id}: tool ${tool.name} is not registered: ${risky}`)
        continue
      }
      try {
        ctx.runtime.register(toolDefinition(pkg, tool.name, workDir, settings.maxStdoutBytes))
      } catch (err) {
        ctx.logger.error(
          `package ${manifest.id}: tool ${tool.name} is not registered: ${(err as Error).message}`,
        )
      }
    }
    const prompt = ctx.get('prompt')
    for (const { rel, text } of pkg.prompts) {
      if (prompt) prompt.register({ name: `package:${manifest.id}:${rel}`, order: 300, text })
      else
        ctx.logger.warn(
          `package ${manifest.id}: prompts.include needs the prompt plugin in the preset`,
        )
    }
    manifest.mcpServers.forEach((server, i) => {
      const serverName = packageServerName(manifest.id, i, manifest.mcpServers.length)
      const command =
        server.command && /^\.\.?\//.test(server.command)
          ? resolve(pkg.dir, server.command)
          : server.command
      // env names take their values from our environment; a URL from a package is SSRF-checked
      const env = Object.fromEntries(
        server.env
          .filter((name) => process.env[name] !== undefined)
          .map((name) => [name, process.env[name]!]),
      )
      const config = server.url
        ? { serverName, url: server.url, headers: server.headers, ssrfGuard: true }
        : { serverName, command, args: server.args, env, cwd: pkg.dir }
      try {
        ctx.plugin(mcpClient, config, { key: `mcp-${i + 1}` })
      } catch (err) {
        ctx.logger.error(
          `package ${manifest.id}: MCP server ${i + 1} is not started: ${(err as Error).message}`,
        )
      }
    })
    if (manifest.hooks.length) {
      const hooks = manifest.hooks.map((h) => ({
        event: h.event,
        command: h.command,
        timeout_ms: h.timeoutMs,
        tool_filter: h.toolFilter,
      }))
      ctx.plugin(shellHooks, { hooks, baseDir: pkg.dir }, { key: 'hooks' })
    }
    mkdirSync(workDir, { recursive: true })
  },
})

/**
 * `pkg-<id>` (and `-<n>` when the package has several): the prefix keeps packages off the names of
 * the user's own servers; a name that had to change or be cut gets a hash, so two packages never meet.
 */
export function packageServerName(id: string, index: number, count: number): string {
  const plain = `pkg-${id}${count > 1 ? `-${index + 1}` : ''}`
  const clean = plain.replace(/[^A-Za-z0-9_-]/g, '_')
  if (clean === plain && clean.length <= 32) return clean
  return `${clean.slice(0, 23)}-${createHash('sha256').update(plain).digest('hex').slice(0, 8)}`
}

function toolDefinition(
  pkg: Package,
  name: string,
  workDir: string,
  maxStdoutBytes: number,
): ToolDefinition {
  const { manifest, exe } = pkg
  const tool = manifest.tools.find((t) => t.name === name)!
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    source: `exec:${manifest.id}`,
    risk: tool.risk ?? 'medium',
    concurrency: tool.concurrency,
    timeoutMs: (manifest.timeoutSecs ?? DEFAULT_TIMEOUT_SECS) * 1000,
    spawnOnly: tool.spawnOnly,
    spawnOnlyMessage: tool.spawnOnly
      ? `${tool.spawnOnlyMessage ?? SPAWN_ONLY_MESSAGE}\nOutput directory: ${workDir}`
      : undefined,
    annotations: {
      package: manifest.id,
      version: manifest.version,
      executable: exe!.path,
      sha256: exe!.sha256,
    },
    async execute(args, call: CallContext) {
      try {
        await exe!.gate.check()
      } catch (err) {
        if (err instanceof IntegrityError)
          throw new YokeError('INTEGRITY_FAILED', { name: tool.name, reason: err.message })
        throw err
      }
      // read at each call: the allowlist decides, from the environment as it is now
      const env = toolEnv({
        allow: tool.env,
        extra: { YOKE_WORK_DIR: workDir, OCTOS_WORK_DIR: workDir },
      })
      mkdirSync(workDir, { recursive: true }) // someone may have cleaned .yoke/work since the last call
      const ran = await runExecutable(
        { exe: exe!.path, tool: tool.name, args, env, cwd: workDir, maxStdoutBytes },
        call,
      )
      return resultOf(ran, `${manifest.id}/${tool.name}`, workDir)
    },
  }
}

/** `prompts.include` globs, relative to the package; a match outside it (`..`, a symlink out) is refused. */
export function promptFiles(
  pkg: Pick<Package, 'dir' | 'manifest'>,
  warn: (message: string) => void,
): Array<{ rel: string; text: string }> {
  const root = realpathSync(pkg.dir)
  const patterns = pkg.manifest.promptsInclude.filter((p) => {
    const bad = p.startsWith('/') || p.split(/[\\/]/).includes('..')
    if (bad) warn(`prompts.include "${p}" escapes the package; it is ignored`)
    return !bad
  })
  if (!patterns.length) return []
  const globs = patterns.map((p) => globToRegExp(p.replace(/^\.\//, '')))
  const found: Array<{ rel: string; text: string }> = []
  const walk = (dir: string, depth: number) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (found.length >= PROMPT_FILES) return
      const path = join(dir, entry.name)
      const rel = relative(pkg.dir, path).split(sep).join('/')
      if (entry.isDirectory() && depth < 8 && !entry.name.startsWith('.')) walk(path, depth + 1)
      else if ((entry.isFile() || entry.isSymbolicLink()) && globs.some((g) => g.test(rel))) {
        try {
          const real = realpathSync(path)
          const st = statSync(real)
          if (!real.startsWith(root + sep))
            warn(`prompts.include: ${rel} points outside the package; it is ignored`)
          else if (!st.isFile())
            warn(`prompts.include: ${rel} is not a regular file; it is ignored`)
          else if (st.size > PROMPT_FILE_BYTES)
            warn(`prompts.include: ${rel} is over ${PROMPT_FILE_BYTES} bytes; it is ignored`)
          else found.push({ rel, text: readFileSync(real, 'utf8') })
        } catch (err) {
          warn(
            `prompts.include: ${rel} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); it is ignored`,
          )
        }
      }
    }
  }
  walk(pkg.dir, 0)
  return found
}
