/**
 * @module mcp-client/commands
 * `yoke mcp list` (each server's state, last error and tool count: live from a running dev, else
 * composed once), `yoke mcp restart NAME` (in the running dev; refused for a held server), `yoke mcp
 * transcript NAME` (its last exchanges, requests paired with answers, secrets masked), `yoke mcp add|remove` and
 * `yoke mcp import FILE` (.mcp.json, claude_desktop_config.json or a Codex config.toml as
 * mcp-client entries; printed, or added with --write). Edits keep the config's comments.
 */
import { existsSync } from 'node:fs'
import { isAbsolute, relative, resolve, sep } from 'node:path'
import {
  color,
  defineCommand,
  displayPath,
  printJson,
  YokeError,
  type CommandContext,
  type ParsedArgs,
} from 'yoke/cli'
import type { McpRestartAnswer, McpServerStatus, McpTranscriptEntry } from '../mcp/api.ts'
import './errors.ts' // MCP_SERVER_HELD, thrown here
import type { ImportResult } from './import.ts'
import { oauthCommands } from './oauth/commands.ts'

const mcpList = defineCommand({
  name: 'mcp list',
  summary:
    'MCP servers: state (connected, reconnecting n of m, gave up, held), protocol era and version, last error, tools',
  usage: 'yoke mcp list [--fresh] [--json] [common flags]',
  flags: {
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
  },
  examples: ['yoke mcp list --config config/yoke.yaml', 'yoke mcp list --fresh --json'],
  async run(args, _, cli) {
    const reply = await cli.control('mcp/list', {}, { fresh: Boolean(args.fresh) })
    if (typeof reply === 'number') return reply
    return printServers(reply.answer, args, reply.source)
  },
})

const mcpRestart = defineCommand({
  name: 'mcp restart',
  summary:
    'reconnect one MCP server in the running yoke dev (and revive one that gave up; not one held)',
  usage: 'yoke mcp restart NAME [common flags]',
  positionals: 1,
  examples: ['yoke mcp restart workspace --config config/yoke.yaml'],
  async run(args, [name], cli) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp restart needs the server name (see yoke mcp list)',
      })
    // cli.live is not typed by Controls yet: its answer is mcp/restart's (plugins/mcp/api.ts)
    const answer = (await cli.live('mcp/restart', { name })) as McpRestartAnswer | undefined
    if (!answer)
      throw new YokeError('USAGE', {
        reason:
          'no yoke dev is running in this project: restart acts on a running dev (a config edit restarts a server too)',
      })
    if (answer.held) throw new YokeError('MCP_SERVER_HELD', { name, why: answer.held.join('; ') })
    if (!answer.restarted)
      throw new YokeError('USAGE', {
        reason: `no MCP server is named "${name}"; the servers are: ${answer.servers.join(', ') || 'none'}`,
      })
    if (args.json) printJson({ ok: true, restarted: name })
    else process.stdout.write(`restarting ${name}\n`)
    return 0
  },
})

const mcpTranscript = defineCommand({
  name: 'mcp transcript',
  summary:
    "one MCP server's last exchanges: each request paired with its answer, with timing, secrets masked",
  usage: 'yoke mcp transcript NAME [--last N] [--fresh] [--json] [common flags]',
  positionals: 1,
  flags: {
    last: {
      type: 'string',
      description: 'show the last N exchanges (default 20; --json: all kept)',
    },
    fresh: { type: 'boolean', description: 'compose now even when a yoke dev is running' },
  },
  examples: [
    'yoke mcp transcript memory',
    'yoke mcp transcript github --last 5 --json --config config/yoke.yaml',
  ],
  async run(args, [name], cli) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp transcript needs the server name (see yoke mcp list)',
      })
    const last = args.last === undefined ? undefined : Number(args.last)
    if (last !== undefined && !(Number.isInteger(last) && last > 0))
      throw new YokeError('USAGE', { reason: '--last takes a whole number above 0' })
    const reply = await cli.control('mcp/transcript', { name }, { fresh: Boolean(args.fresh) })
    if (typeof reply === 'number') return reply
    const { entries, offered, servers } = reply.answer
    if (offered === false)
      throw new YokeError('USAGE', {
        reason: `the MCP server "${name}" keeps no transcript (transcript: false in its entry)`,
      })
    if (!entries)
      throw new YokeError('USAGE', {
        reason: `no MCP server is named "${name}"; the servers are: ${servers.join(', ') || 'none'}`,
      })
    const shown = entries.slice(-(last ?? (args.json ? entries.length : 20)))
    if (args.json) printJson({ ok: true, server: name, source: reply.source, entries: shown })
    else {
      // composed now, a server has said only its handshake: the calls were in another process
      if (reply.source !== 'live from yoke dev')
        process.stderr.write(
          color.dim(
            `no yoke dev is running: this is ${name}'s handshake in a composition made now\n`,
          ),
        )
      for (const entry of shown) process.stdout.write(`${transcriptLine(entry)}\n`)
    }
    return 0
  },
})

/** `12:00:01.234 → tools/call #7 12 ms ok`: who sent it, what, and how it ended. */
function transcriptLine(e: McpTranscriptEntry): string {
  const at = new Date(e.at).toISOString().slice(11, 23)
  const arrow = e.from === 'yoke' ? '→' : '←'
  const ended =
    e.id === undefined
      ? color.dim('notification')
      : e.cancelled
        ? color.yellow('cancelled')
        : e.error !== undefined
          ? color.red(`error ${JSON.stringify(e.error)}`)
          : e.response !== undefined
            ? color.green('ok')
            : color.yellow('no answer')
  const took = e.durationMs === undefined ? '' : ` ${Math.round(e.durationMs)} ms`
  const cut = e.truncated ? color.dim(' (cut)') : ''
  return `${at} ${arrow} ${e.method}${e.id === undefined ? '' : ` #${e.id}`}${took} ${ended}${cut}`
}

const mcpImport = defineCommand({
  name: 'mcp import',
  summary:
    'convert .mcp.json, claude_desktop_config.json or a Codex config.toml into mcp-client entries',
  usage: 'yoke mcp import FILE [--write] [--trust-urls] [--json] [common flags]',
  positionals: 1,
  flags: {
    write: {
      type: 'boolean',
      description: 'add the entries to the project config (default: print them)',
    },
    'trust-urls': {
      type: 'boolean',
      description: 'the file is yours: no SSRF guard on its URLs (default: ssrfGuard: true)',
    },
  },
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
    // the readers bring smol-toml and yaml: loaded when an import runs, not for --help
    const { importFile, toYaml } = await import('./import.ts')
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
    url: {
      type: 'string',
      value: 'URL',
      description: 'a Streamable HTTP (or SSE) server instead of a command',
    },
    header: {
      type: 'string',
      multiple: true,
      value: '"NAME: VALUE"',
      description: 'an HTTP header sent to a --url server',
    },
    env: {
      type: 'string',
      multiple: true,
      value: 'NAME=VALUE',
      description: "a variable in the server's (otherwise scrubbed) environment",
    },
  },
  examples: [
    'yoke mcp add memory -- npx -y @modelcontextprotocol/server-memory',
    'yoke mcp add local -- node ./tools/server.mjs',
    'yoke mcp add docs --url https://example.com/mcp --header "Authorization: Bearer $TOKEN"',
  ],
  async run(args, [name, command, ...rest], cli) {
    if (!name)
      throw new YokeError('USAGE', {
        reason: 'yoke mcp add needs a server name, then -- COMMAND ARGS… or --url URL',
      })
    const config: Record<string, unknown> = {
      serverName: name,
      ...(command && { command, args: rest }),
      ...(args.env && { env: pairs(args.env as string[], 'env', '=') }),
      ...(args.url && { url: args.url }),
      ...(args.header && { headers: pairs(args.header as string[], 'header', ':') }),
    }
    // the schema brings zod: loaded when an entry is added, not for --help
    const { mcpClientConfig } = await import('./config.ts')
    const checked = mcpClientConfig.safeParse(config)
    if (!checked.success)
      throw new YokeError('USAGE', {
        reason: `that server entry is not valid: ${checked.error.issues.map((i) => `${i.path.join('.') || 'entry'}: ${i.message}`).join('; ')}`,
      })
    const key = `mcp-${name}`
    let created = false
    let cwd: string | undefined
    const { file } = await cli.editConfig((doc, target, projectDir) => {
      if (doc.hasIn(['plugins', key]))
        throw new YokeError('USAGE', {
          reason: `the project config already has an instance "${key}": edit it, or yoke mcp remove ${name} first`,
        })
      created = !existsSync(target)
      // known once the file is: the server runs in that config's project directory
      cwd = command ? serverCwd(cli.cwd, projectDir, [command, ...rest]) : undefined
      if (cwd !== undefined) config.cwd = cwd
      doc.setIn(['plugins', key], doc.createNode({ use: 'mcp-client', config }))
    })
    if (args.json) printJson({ ok: true, file, created, instance: key, config })
    else {
      const shown = displayPath(file, cli.cwd)
      const lines = [
        created
          ? `created ${shown} (there was no project config; yoke finds this one here) with ${key}`
          : `${shown}: added ${key}`,
        ...(cwd !== undefined
          ? [`  it runs in ${cwd} (where this ran), so its relative paths resolve as they did here`]
          : []),
        '  a yoke dev running on this config connects it now; `yoke mcp list` shows its state',
      ]
      process.stdout.write(lines.join('\n') + '\n')
    }
    return 0
  },
})

/**
 * The `cwd:` the entry needs so that the command line runs as it did in the shell: a stdio server
 * runs in the project directory (the config's), so `node ./server.mjs` typed elsewhere would name
 * another file. Only a command line that names a path that is there is given one; a directory
 * beside or inside the project's is written relative (the config then works in another checkout),
 * one further away absolute.
 */
function serverCwd(shellDir: string, projectDir: string, commandLine: string[]) {
  const here = resolve(shellDir)
  if (here === projectDir || !commandLine.some((arg, i) => namesPath(arg, here, i === 0)))
    return undefined
  const rel = relative(projectDir, here)
  return rel.startsWith(`..${sep}..`) || isAbsolute(rel) ? here : rel.split(sep).join('/')
}

/**
 * Whether a command-line word names a file or directory relative to `dir` (`./server.mjs`,
 * `server.py`, `--config=conf.json`, `.`). A command is looked up on PATH unless it has a slash.
 */
function namesPath(word: string, dir: string, isCommand: boolean): boolean {
  const value = word.startsWith('-') ? word.slice(word.indexOf('=') + 1 || word.length) : word
  if (!value || isAbsolute(value) || /^[a-z][a-z0-9+.-]*:/i.test(value)) return false
  if (isCommand && !value.includes('/')) return false
  return existsSync(resolve(dir, value))
}

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
        : ['reconnecting', 'connecting', 'held', 'waiting'].includes(s.state)
          ? color.yellow(s.detail)
          : color.red(s.detail)
    const about = [
      s.transport,
      s.protocol && `MCP ${s.protocol.version} (${s.protocol.era} era)`,
      s.server && `${s.server.name} ${s.server.version}`,
      s.pid && `pid ${s.pid}`,
      `${s.tools} tools`,
      s.skills && `${s.skills} skills`,
      `instance ${s.instance}`,
    ]
      .filter(Boolean)
      .join(' · ')
    process.stdout.write(`${s.name.padEnd(width)}${state}\n  ${color.dim(about)}\n`)
    for (const problem of s.problems) process.stdout.write(`  ${color.yellow(problem)}\n`)
  }
  return 0
}

export const commands = [
  mcpList,
  mcpRestart,
  mcpTranscript,
  mcpAdd,
  mcpRemove,
  mcpImport,
  ...oauthCommands,
]
