/**
 * @module cli/mcp
 * `yoke mcp list` (each server's state, last error and tool count: live from a running dev, else
 * composed once), `yoke mcp restart NAME` (in the running dev), `yoke mcp add|remove` and
 * `yoke mcp import FILE` (.mcp.json, claude_desktop_config.json or a Codex config.toml as
 * mcp-client entries; printed, or added with --write). Edits keep the config's comments.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { isMap, parseDocument, type Document } from 'yaml'
import type { Composition } from '../config/composer.ts'
import { loadLayers } from '../config/layers.ts'
import { YokeError } from '../errors.ts'
import { importFile, toYaml, type ImportResult } from '../../plugins/mcp-client/import.ts'
import { mcpClientConfig } from '../../plugins/mcp-client/config.ts'
import type { McpHub, McpServerStatus } from '../../plugins/mcp/index.ts'
import { composeOptions, type Command, type ParsedArgs } from './args.ts'
import { ask, socketPath } from './control.ts'
import { color, displayPath, printJson } from './output.ts'
import { withComposition } from './tools.ts'

export function hubOf(composition: Composition): McpHub {
  const hub = composition.kernel.services.get('mcp')?.value as McpHub | undefined
  if (!hub)
    throw new YokeError('USAGE', {
      reason: 'no mcp instance is running: add `mcp: { use: mcp }` to the preset (base has it)',
    })
  return hub
}

/**
 * Every MCP server: the registry's, plus mcp-client instances that never joined it (failed at
 * load: a taken name, failOnStartupError, a bad config; or waiting for a service) with why.
 */
export function mcpServers(composition: Composition): McpServerStatus[] {
  const listed = hubOf(composition).list()
  const joined = new Set(listed.map((s) => s.instance))
  const others = composition.kernel.fibers
    .filter(
      (f) =>
        f.plugin.name === 'mcp-client' &&
        !joined.has(f.key) &&
        (f.state === 'failed' || f.state === 'pending'),
    )
    .map((f): McpServerStatus => {
      const cfg = (f.config ?? {}) as { serverName?: string; url?: string }
      const why = f.state === 'failed' ? (f.error?.message ?? 'failed') : 'waiting for a service'
      return {
        name: cfg.serverName ?? f.key,
        instance: f.key,
        transport: cfg.url ? 'http' : 'stdio',
        state: 'failed',
        detail: `failed: ${why}`,
        attempt: 0,
        maxAttempts: 0,
        lastError: why,
        tools: 0,
        problems: [],
      }
    })
  return [...listed, ...others]
}

/** Asks the dev running in this project (`--config` names the project), when one answers and no flag asks for other layers. */
async function askDev(
  args: ParsedArgs,
  request: { cmd: string; [key: string]: unknown },
): Promise<unknown> {
  if (args.preset || args.patch?.length || args.set?.length) return undefined
  const { projectDir } = await loadLayers(composeOptions(args))
  return ask(socketPath(projectDir), request)
}

export const mcpList: Command = {
  name: 'mcp list',
  summary: 'MCP servers: state (connected, reconnecting n of m, gave up), last error, tools',
  usage: 'yoke mcp list [--fresh] [--json] [common flags]',
  options: { fresh: { type: 'boolean' } },
  async run(args) {
    const live = args.fresh
      ? undefined
      : ((await askDev(args, { cmd: 'mcp-list' })) as McpServerStatus[] | undefined)
    if (live) return printServers(live, args, 'live from yoke dev')
    return withComposition(
      args,
      async (composition) => printServers(mcpServers(composition), args, 'composed now'),
      true,
    )
  },
}

export const mcpRestart: Command = {
  name: 'mcp restart',
  summary: 'reconnect one MCP server in the running yoke dev (and revive one that gave up)',
  usage: 'yoke mcp restart NAME [common flags]',
  positionals: 1,
  async run(args, [name]) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp restart needs the server name (see yoke mcp list)',
      })
    const answer = (await askDev(args, { cmd: 'mcp-restart', name })) as
      { restarted: boolean; servers: string[] } | undefined
    if (!answer)
      throw new YokeError('USAGE', {
        reason:
          'no yoke dev is running in this project: restart acts on a running dev (a config edit restarts a server too)',
      })
    if (!answer.restarted)
      throw new YokeError('USAGE', {
        reason: `no MCP server is named "${name}"; the servers are: ${answer.servers.join(', ') || 'none'}`,
      })
    if (args.json) printJson({ ok: true, restarted: name })
    else process.stdout.write(`restarting ${name}\n`)
    return 0
  },
}

export const mcpImport: Command = {
  name: 'mcp import',
  summary:
    'convert .mcp.json, claude_desktop_config.json or a Codex config.toml into mcp-client entries',
  usage: 'yoke mcp import FILE [--write] [--json] [common flags]',
  positionals: 1,
  options: { write: { type: 'boolean' } },
  async run(args, [file]) {
    if (!file)
      throw new YokeError('USAGE', {
        reason:
          'yoke mcp import needs a file: .mcp.json, claude_desktop_config.json or a Codex config.toml',
      })
    const result = importFile(resolve(args.cwd ?? process.cwd(), file))
    const written = args.write ? await writeEntries(args, result) : undefined
    if (args.json) printJson({ ok: true, ...result, ...(written && { written }) })
    else if (written) {
      for (const w of result.warnings) process.stderr.write(color.yellow(`warning: ${w}\n`))
      process.stdout.write(
        `${displayPath(written.file, args.cwd ?? process.cwd())}: added ${written.added.join(', ') || 'nothing'}${written.kept.length ? `; kept existing ${written.kept.join(', ')}` : ''}\n`,
      )
    } else process.stdout.write(toYaml(result))
    return 0
  },
}

/**
 * Edits the project config (created as yoke.config.yaml when there is none) through yaml's document
 * model, so comments and layout stay, and writes it atomically (a temp file, then a rename).
 */
async function editProjectConfig<T>(
  args: ParsedArgs,
  edit: (doc: Document, file: string) => T,
): Promise<{ file: string } & T> {
  const stack = await loadLayers(composeOptions(args))
  const file =
    stack.layers.find((l) => l.kind === 'project')?.file ??
    join(stack.projectDir, 'yoke.config.yaml')
  if (existsSync(file) && !/\.ya?ml$/.test(file))
    throw new YokeError('USAGE', {
      reason: `only YAML configs are edited; ${file} is not one: add the entry by hand`,
    })
  const doc = parseDocument(existsSync(file) ? readFileSync(file, 'utf8') : '')
  if (doc.errors.length)
    throw new YokeError('CONFIG_SYNTAX', { reason: doc.errors[0]!.message }, { file })
  const plugins = doc.get('plugins')
  if (!isMap(plugins)) doc.set('plugins', doc.createNode({}))
  else if (plugins.flow && !plugins.items.length) plugins.flow = false // `plugins: {}` grows as a block, not inline
  const result = edit(doc, file)
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, doc.toString())
  renameSync(temp, file)
  return { file, ...result }
}

/** Adds the imported entries to the project config; keys already there are kept as they are. */
function writeEntries(args: ParsedArgs, result: ImportResult) {
  return editProjectConfig(args, (doc) => {
    const added: string[] = []
    const kept: string[] = []
    for (const server of result.servers) {
      if (doc.hasIn(['plugins', server.key])) kept.push(server.key)
      else {
        doc.setIn(
          ['plugins', server.key],
          doc.createNode({
            use: 'mcp-client',
            ...(!server.enabled && { enabled: false }),
            config: server.config,
          }),
        )
        added.push(server.key)
      }
    }
    return { added, kept }
  })
}

/** `K=V` flags as an object. */
function pairs(
  list: string[] | undefined,
  flag: string,
  separator: string,
): Record<string, string> {
  return Object.fromEntries(
    (list ?? []).map((item) => {
      const at = item.indexOf(separator)
      if (at < 1)
        throw new YokeError('USAGE', {
          reason: `--${flag} takes NAME${separator}VALUE, not "${item}"`,
        })
      return [item.slice(0, at).trim(), item.slice(at + 1).trim()]
    }),
  )
}

export const mcpAdd: Command = {
  name: 'mcp add',
  summary:
    'add an MCP server to the project config: yoke mcp add NAME -- COMMAND ARGS…, or --url URL',
  usage:
    'yoke mcp add NAME [--url URL] [--header "Name: value"]… [--env NAME=VALUE]… [-- COMMAND [ARGS…]]',
  positionals: 64,
  options: {
    url: { type: 'string' },
    header: { type: 'string', multiple: true },
    env: { type: 'string', multiple: true },
  },
  async run(args, [name, command, ...rest]) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp add needs a server name, then -- COMMAND ARGS… or --url URL',
      })
    const config = {
      serverName: name,
      ...(command && { command, args: rest }),
      ...(args.env && { env: pairs(args.env as string[], 'env', '=') }),
      ...(args.url && { url: args.url }),
      ...(args.header && { headers: pairs(args.header as string[], 'header', ':') }),
    }
    const checked = mcpClientConfig.safeParse(config)
    if (!checked.success)
      throw new YokeError('USAGE', {
        reason: `that server entry is not valid: ${checked.error.issues.map((i) => `${i.path.join('.') || 'entry'}: ${i.message}`).join('; ')}`,
      })
    const key = `mcp-${name}`
    const { file } = await editProjectConfig(args, (doc) => {
      if (doc.hasIn(['plugins', key]))
        throw new YokeError('USAGE', {
          reason: `the project config already has an instance "${key}": edit it, or yoke mcp remove ${name} first`,
        })
      doc.setIn(['plugins', key], doc.createNode({ use: 'mcp-client', config }))
    })
    if (args.json) printJson({ ok: true, file, instance: key, config })
    else
      process.stdout.write(
        `${displayPath(file, args.cwd ?? process.cwd())}: added ${key} (a running yoke dev connects it now)\n`,
      )
    return 0
  },
}

export const mcpRemove: Command = {
  name: 'mcp remove',
  summary: 'remove an MCP server (by serverName or instance key) from the project config',
  usage: 'yoke mcp remove NAME [common flags]',
  positionals: 1,
  async run(args, [name]) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp remove needs a server name (see yoke mcp list)',
      })
    const { file, key } = await editProjectConfig(args, (doc) => {
      const plugins =
        (
          doc.toJS() as {
            plugins?: Record<string, { use?: string; config?: { serverName?: string } }>
          }
        ).plugins ?? {}
      const servers = Object.entries(plugins).filter(([, p]) => p?.use === 'mcp-client')
      const found = servers.find(([k, p]) => k === name || p.config?.serverName === name)?.[0]
      if (!found)
        throw new YokeError('USAGE', {
          reason: `the project config has no MCP server "${name}"; it has: ${servers.map(([k, p]) => p.config?.serverName ?? k).join(', ') || 'none'}`,
        })
      doc.deleteIn(['plugins', found])
      return { key: found }
    })
    if (args.json) printJson({ ok: true, file, removed: key })
    else process.stdout.write(`${displayPath(file, args.cwd ?? process.cwd())}: removed ${key}\n`)
    return 0
  },
}

function printServers(servers: McpServerStatus[], args: ParsedArgs, source: string): number {
  if (args.json) {
    printJson({ ok: true, source, servers })
    return 0
  }
  process.stdout.write(color.dim(`(${source})\n`))
  if (!servers.length)
    process.stdout.write(
      color.dim('no MCP servers: add an mcp-client instance (see README, "Add an MCP server")\n'),
    )
  const width = Math.max(8, ...servers.map((s) => s.name.length)) + 2
  for (const s of servers) {
    const state =
      s.state === 'connected'
        ? color.green('connected')
        : s.state === 'reconnecting' || s.state === 'connecting'
          ? color.yellow(s.detail)
          : color.red(s.detail)
    const about = [
      s.transport,
      s.server && `${s.server.name} ${s.server.version}`,
      s.pid && `pid ${s.pid}`,
      `${s.tools} tools`,
      `instance ${s.instance}`,
    ]
      .filter(Boolean)
      .join(' · ')
    process.stdout.write(`${s.name.padEnd(width)}${state}\n  ${color.dim(about)}\n`)
    for (const problem of s.problems) process.stdout.write(`  ${color.yellow(problem)}\n`)
  }
  return 0
}
