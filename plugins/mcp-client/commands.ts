/**
 * @module mcp-client/commands
 * `yoke mcp list` (each server's state, last error and tool count: live from a running dev, else
 * composed once), `yoke mcp restart NAME` (in the running dev), `yoke mcp add|remove` and
 * `yoke mcp import FILE` (.mcp.json, claude_desktop_config.json or a Codex config.toml as
 * mcp-client entries; printed, or added with --write). Edits keep the config's comments.
 */
import { resolve } from 'node:path'
import { YokeError } from 'yoke'
import {
  color,
  defineCommand,
  displayPath,
  printJson,
  type CommandContext,
  type ParsedArgs,
} from 'yoke/cli'
import type { McpServerStatus } from '../mcp/api.ts'
import { mcpClientConfig } from './config.ts'
import { importFile, toYaml, type ImportResult } from './import.ts'

const mcpList = defineCommand({
  name: 'mcp list',
  summary:
    'MCP servers: state (connected, reconnecting n of m, gave up), protocol era and version, last error, tools',
  usage: 'yoke mcp list [--fresh] [--json] [common flags]',
  flags: { fresh: { type: 'boolean' } },
  examples: ['yoke mcp list --config config/yoke.yaml', 'yoke mcp list --fresh --json'],
  async run(args, _, cli) {
    const reply = await cli.control('mcp-list', {}, { fresh: Boolean(args.fresh) })
    if (typeof reply === 'number') return reply
    return printServers(reply.answer as McpServerStatus[], args, reply.source)
  },
})

const mcpRestart = defineCommand({
  name: 'mcp restart',
  summary: 'reconnect one MCP server in the running yoke dev (and revive one that gave up)',
  usage: 'yoke mcp restart NAME [common flags]',
  positionals: 1,
  examples: ['yoke mcp restart workspace --config config/yoke.yaml'],
  async run(args, [name], cli) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp restart needs the server name (see yoke mcp list)',
      })
    const answer = (await cli.live('mcp-restart', { name })) as
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
})

const mcpImport = defineCommand({
  name: 'mcp import',
  summary:
    'convert .mcp.json, claude_desktop_config.json or a Codex config.toml into mcp-client entries',
  usage: 'yoke mcp import FILE [--write] [--trust-urls] [--json] [common flags]',
  positionals: 1,
  // --trust-urls: the file is yours; without it HTTP entries get ssrfGuard: true (URLs from someone else's file)
  flags: { write: { type: 'boolean' }, 'trust-urls': { type: 'boolean' } },
  examples: [
    'yoke mcp import .mcp.json',
    'yoke mcp import ~/.codex/config.toml --write --trust-urls',
  ],
  async run(args, [file], cli) {
    if (!file)
      throw new YokeError('USAGE', {
        reason:
          'yoke mcp import needs a file: .mcp.json, claude_desktop_config.json or a Codex config.toml',
      })
    const result = importFile(resolve(args.cwd ?? process.cwd(), file), {
      trustUrls: Boolean(args['trust-urls']),
    })
    const written = args.write ? await writeEntries(cli, result) : undefined
    if (args.json) printJson({ ok: true, ...result, ...(written && { written }) })
    else if (written) {
      for (const w of result.warnings) process.stderr.write(color.yellow(`warning: ${w}\n`))
      process.stdout.write(
        `${displayPath(written.file, args.cwd ?? process.cwd())}: added ${written.added.join(', ') || 'nothing'}${written.kept.length ? `; kept existing ${written.kept.join(', ')}` : ''}\n`,
      )
    } else process.stdout.write(toYaml(result))
    return 0
  },
})

/** Adds the imported entries to the project config; keys already there are kept as they are. */
function writeEntries(cli: CommandContext, result: ImportResult) {
  return cli.editConfig((doc) => {
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

const mcpAdd = defineCommand({
  name: 'mcp add',
  summary:
    'add an MCP server to the project config: yoke mcp add NAME -- COMMAND ARGS…, or --url URL',
  usage:
    'yoke mcp add NAME [--url URL] [--header "Name: value"]… [--env NAME=VALUE]… [-- COMMAND [ARGS…]]',
  positionals: 64,
  flags: {
    url: { type: 'string' },
    header: { type: 'string', multiple: true },
    env: { type: 'string', multiple: true },
  },
  examples: [
    'yoke mcp add memory -- npx -y @modelcontextprotocol/server-memory',
    'yoke mcp add docs --url https://example.com/mcp --header "Authorization: Bearer $TOKEN"',
  ],
  async run(args, [name, command, ...rest], cli) {
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
    const { file } = await cli.editConfig((doc) => {
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
})

const mcpRemove = defineCommand({
  name: 'mcp remove',
  summary: 'remove an MCP server (by serverName or instance key) from the project config',
  usage: 'yoke mcp remove NAME [common flags]',
  positionals: 1,
  examples: ['yoke mcp remove memory'],
  async run(args, [name], cli) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp remove needs a server name (see yoke mcp list)',
      })
    const { file, key } = await cli.editConfig((doc) => {
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
})

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
      s.protocol && `MCP ${s.protocol.version} (${s.protocol.era} era)`,
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

export const commands = [mcpList, mcpRestart, mcpAdd, mcpRemove, mcpImport]
