/**
 * The package plugin: one child instance per package (see load.ts for reading one), which
 * registers its tools and its extras: prompt sections from `prompts.include`, an mcp-client per
 * `mcp_servers` entry, and its shell hooks. Disposing the child undoes all of it, so a changed
 * package restarts alone.
 */
import { createHash } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  definePlugin,
  messageOf,
  riskyPattern,
  YokeError,
  type CallContext,
  type Context,
  type InjectedContext,
  type ToolDefinition,
} from 'yoke'
import { resultOf, runExecutable, toolEnv } from '../process/api.ts'
import type { ShellHooksConfig } from '../shell-hooks/api.ts'
import { IntegrityError } from './executable.ts'
import type { Package } from './load.ts'

export { loadPackage, promptFiles, type Package, type PackageFailure } from './load.ts'

export const DEFAULT_TIMEOUT_SECS = 600
const SPAWN_ONLY_MESSAGE =
  'SUCCESS: Task is now running in background. The result will be delivered to the user automatically. No further action needed.'
export interface PackageSettings {
  pkg: Package
  workRoot: string
  maxStdoutBytes: number
}

/** The child instance of one package. */
export const packagePlugin = definePlugin({
  name: 'exec-package',
  inject: ['runtime'],
  // its MCP servers and its shell hooks run as children, composed by name
  uses: ['mcp-client', 'shell-hooks'],
  apply(ctx, config) {
    const settings = config as unknown as PackageSettings
    const { pkg } = settings
    const workDir = join(settings.workRoot, pkg.manifest.id)
    const registered = registerTools(ctx, pkg, workDir, settings.maxStdoutBytes)
    registerPrompts(ctx, pkg, registered, workDir)
    startServers(ctx, pkg)
    if (pkg.manifest.hooks.length) {
      const hooks: ShellHooksConfig = {
        baseDir: pkg.dir,
        hooks: pkg.manifest.hooks.map((h) => ({
          event: h.event,
          command: h.command,
          timeout_ms: h.timeoutMs,
          tool_filter: h.toolFilter,
          env: h.env,
        })),
      }
      ctx.plugin('shell-hooks', hooks, { key: 'hooks' })
    }
    mkdirSync(workDir, { recursive: true })
  },
})

type PackageContext = InjectedContext<['runtime']>

/** The package's tools in the runtime; the names registered (a risky schema or a clash leaves one out). */
function registerTools(
  ctx: PackageContext,
  pkg: Package,
  workDir: string,
  maxStdoutBytes: number,
): string[] {
  const registered: string[] = []
  for (const tool of pkg.manifest.tools) {
    const risky = riskyPattern(tool.inputSchema)
    if (risky) {
      ctx.logger.warn(`package ${pkg.manifest.id}: tool ${tool.name} is not registered: ${risky}`)
      continue
    }
    try {
      ctx.runtime.register(toolDefinition(pkg, tool.name, workDir, maxStdoutBytes))
      registered.push(tool.name)
    } catch (err) {
      ctx.logger.error(
        `package ${pkg.manifest.id}: tool ${tool.name} is not registered: ${messageOf(err)}`,
      )
    }
  }
  return registered
}

/** Its prompt files as prompt sections, and the card of its background tools. */
function registerPrompts(ctx: Context, pkg: Package, registered: string[], workDir: string) {
  const { manifest } = pkg
  const prompt = ctx.get('prompt')
  for (const { rel, text } of pkg.prompts) {
    if (prompt) prompt.register({ name: `package:${manifest.id}:${rel}`, order: 300, text })
    else
      ctx.logger.warn(
        `package ${manifest.id}: prompts.include needs the prompt plugin in the preset`,
      )
  }
  // octos resolve_extras: background tools come with a card that says when to use them
  const background = manifest.tools.filter((t) => t.spawnOnly && registered.includes(t.name))
  if (background.length && prompt)
    prompt.register({
      name: `package:${manifest.id}:background`,
      order: 300,
      text: backgroundCard(pkg, background, workDir),
    })
}

/** Each `mcp_servers` entry as an mcp-client child: env names take their values from ours; a URL is SSRF-checked. */
function startServers(ctx: Context, pkg: Package) {
  const { manifest } = pkg
  manifest.mcpServers.forEach((server, i) => {
    const serverName = packageServerName(manifest.id, i, manifest.mcpServers.length)
    const command =
      server.command && /^\.\.?\//.test(server.command)
        ? resolve(pkg.dir, server.command)
        : server.command
    const env = Object.fromEntries(
      server.env
        .filter((name) => process.env[name] !== undefined)
        .map((name) => [name, process.env[name]!]),
    )
    const config = server.url
      ? { serverName, url: server.url, headers: server.headers, ssrfGuard: true }
      : { serverName, command, args: server.args, env, cwd: pkg.dir }
    try {
      ctx.plugin('mcp-client', config, { key: `mcp-${i + 1}` })
    } catch (err) {
      ctx.logger.error(
        `package ${manifest.id}: MCP server ${i + 1} is not started: ${messageOf(err)}`,
      )
    }
  })
}

/** how much of SKILL.md the background-tools card carries */
const CARD_SKILL_CHARS = 8000

/**
 * The prompt fragment of a package with spawn_only tools: which tools run in the background, what
 * that means for the model (the call returns at once; the result comes later, so it neither waits
 * nor calls again), and the package's SKILL.md instructions, which say when to use them.
 */
export function backgroundCard(
  pkg: Package,
  tools: Package['manifest']['tools'],
  workDir: string,
): string {
  const body = pkg.skillBody
  const instructions =
    body && body.length > CARD_SKILL_CHARS
      ? `${body.slice(0, CARD_SKILL_CHARS)}\n[… cut; skill_read ${pkg.manifest.id} has the rest]`
      : body
  return [
    `<background_tools package="${pkg.manifest.id}">`,
    'These tools run in the background: a call returns at once with a task id while the work goes on, and the result is delivered to the user when it is done. Use one when the user asks for that long piece of work; do not call it again to wait for or check on the result, and do not use it for an answer you need in this turn.',
    ...tools.map((t) => `- ${t.name}: ${t.description}`),
    `Their output files go to ${workDir}.`,
    ...(instructions ? ['<instructions>', instructions, '</instructions>'] : []),
    '</background_tools>',
  ].join('\n')
}

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
        cwd: workDir,
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
