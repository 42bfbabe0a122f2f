/**
 * One package: a directory with manifest.json (and with SKILL.md beside it, a skill too). Loading
 * reads the manifest, finds and verifies the executable; the package plugin (one child instance
 * per package) registers its tools and its extras: prompt sections from `prompts.include`, an
 * mcp-client per `mcp_servers` entry, and its shell hooks. Disposing the child undoes all of it,
 * so a changed package restarts alone.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { definePlugin, globToRegExp, YokeError, type CallContext, type ToolDefinition } from 'yoke'
import mcpClient from '../mcp-client/index.ts'
import { SERVER_NAME } from '../mcp-client/config.ts'
import shellHooks from '../shell-hooks/index.ts'
import { toolEnv } from '../shared/env.ts'
import { findExecutable, IntegrityError, IntegrityGate, verify } from './executable.ts'
import { parseManifest, type Manifest, type ManifestProblem } from './manifest.ts'
import { resultOf, runExecutable } from './run.ts'

export const DEFAULT_TIMEOUT_SECS = 600
const SPAWN_ONLY_MESSAGE = 'SUCCESS: Task is now running in background. The result will be delivered to the user automatically. No further action needed.'
const PROMPT_FILE_BYTES = 64 * 1024
const PROMPT_FILES = 50

export interface Package {
  dir: string
  manifest: Manifest
  warnings: ManifestProblem[]
  /** the verified executable; none for an extras-only package */
  exe?: { path: string; sha256: string; gate: IntegrityGate }
  /** changes when the manifest or the executable's bytes change */
  fingerprint: string
}

export interface PackageFailure {
  dir: string
  errors: ManifestProblem[]
}

/** Reads and verifies the package in `dir`. */
export async function loadPackage(dir: string, requireSigned = false): Promise<Package | PackageFailure> {
  const file = join(dir, 'manifest.json')
  const fail = (message: string, at: Partial<ManifestProblem> = {}): PackageFailure => ({ dir, errors: [{ file, line: 1, col: 1, message, ...at }] })
  let text: string
  try {
    if (statSync(file).size > 1024 * 1024) return fail('manifest.json is over 1 MiB')
    text = readFileSync(file, 'utf8')
  } catch (err) {
    return fail(`cannot read manifest.json: ${(err as Error).message}`)
  }
  const { manifest, errors, warnings } = parseManifest(text, file)
  if (!manifest) return { dir, errors }
  // octos's require_signed: an unpinned executable, or extras that nothing pins, are refused
  if (requireSigned && !manifest.sha256) return fail(`${manifest.id} is not signed (no sha256) and requireSigned is on${manifest.tools.length ? '' : ': an extras-only package cannot be signed'}`)
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
  const fingerprint = createHash('sha256').update(text).update('\0').update(exe?.sha256 ?? '').digest('hex')
  return { dir, manifest, warnings, exe, fingerprint }
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
      try {
        ctx.runtime.register(toolDefinition(pkg, tool.name, workDir, settings.maxStdoutBytes))
      } catch (err) {
        ctx.logger.error(`package ${manifest.id}: tool ${tool.name} is not registered: ${(err as Error).message}`)
      }
    }
    const prompt = ctx.get('prompt')
    for (const { rel, text } of promptFiles(pkg, (m) => ctx.logger.warn(`package ${manifest.id}: ${m}`))) {
      if (prompt) prompt.register({ name: `package:${manifest.id}:${rel}`, order: 300, text })
      else ctx.logger.warn(`package ${manifest.id}: prompts.include needs the prompt plugin in the preset`)
    }
    manifest.mcpServers.forEach((server, i) => {
      const serverName = `${manifest.id}${manifest.mcpServers.length > 1 ? `_${i + 1}` : ''}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 32)
      const command = server.command && /^\.\.?\//.test(server.command) ? resolve(pkg.dir, server.command) : server.command
      // env names take their values from our environment; a URL from a package is SSRF-checked
      const env = Object.fromEntries(server.env.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]!]))
      const config = server.url ? { serverName, url: server.url, headers: server.headers, ssrfGuard: true } : { serverName, command, args: server.args, env, cwd: pkg.dir }
      if (!SERVER_NAME.test(serverName)) return ctx.logger.warn(`package ${manifest.id}: MCP server name "${serverName}" is not usable`)
      try {
        ctx.plugin(mcpClient, config, { key: `mcp-${i + 1}` })
      } catch (err) {
        ctx.logger.error(`package ${manifest.id}: MCP server ${i + 1} is not started: ${(err as Error).message}`)
      }
    })
    if (manifest.hooks.length) {
      const hooks = manifest.hooks.map((h) => ({ event: h.event, command: h.command, timeout_ms: h.timeoutMs, tool_filter: h.toolFilter }))
      ctx.plugin(shellHooks, { hooks, baseDir: pkg.dir }, { key: 'hooks' })
    }
    mkdirSync(workDir, { recursive: true })
  },
})

function toolDefinition(pkg: Package, name: string, workDir: string, maxStdoutBytes: number): ToolDefinition {
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
    spawnOnlyMessage: tool.spawnOnly ? `${tool.spawnOnlyMessage ?? SPAWN_ONLY_MESSAGE}\nOutput directory: ${workDir}` : undefined,
    annotations: { package: manifest.id, version: manifest.version, executable: exe!.path, sha256: exe!.sha256 },
    async execute(args, call: CallContext) {
      try {
        await exe!.gate.check()
      } catch (err) {
        if (err instanceof IntegrityError) throw new YokeError('INTEGRITY_FAILED', { name: tool.name, reason: err.message })
        throw err
      }
      // read at each call: the allowlist decides, from the environment as it is now
      const env = toolEnv({ allow: tool.env, extra: { YOKE_WORK_DIR: workDir, OCTOS_WORK_DIR: workDir } })
      const ran = await runExecutable({ exe: exe!.path, tool: tool.name, args, env, cwd: workDir, maxStdoutBytes }, call)
      return resultOf(ran, `${manifest.id}/${tool.name}`, workDir)
    },
  }
}

/** `prompts.include` globs, relative to the package; a match outside it (`..`, a symlink out) is refused. */
export function promptFiles(pkg: Package, warn: (message: string) => void): Array<{ rel: string; text: string }> {
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
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (found.length >= PROMPT_FILES) return
      const path = join(dir, entry.name)
      const rel = relative(pkg.dir, path).split(sep).join('/')
      if (entry.isDirectory() && depth < 8 && !entry.name.startsWith('.')) walk(path, depth + 1)
      else if ((entry.isFile() || entry.isSymbolicLink()) && globs.some((g) => g.test(rel))) {
        const real = realpathSync(path)
        if (!real.startsWith(root + sep)) warn(`prompts.include: ${rel} points outside the package; it is ignored`)
        else if (statSync(real).size > PROMPT_FILE_BYTES) warn(`prompts.include: ${rel} is over ${PROMPT_FILE_BYTES} bytes; it is ignored`)
        else found.push({ rel, text: readFileSync(real, 'utf8') })
      }
    }
  }
  walk(pkg.dir, 0)
  return found
}
