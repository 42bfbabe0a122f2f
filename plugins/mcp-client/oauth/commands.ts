/**
 * `yoke mcp login NAME|URL`, `yoke mcp logout NAME|URL` and `yoke mcp auth status`: the OAuth
 * sign-in on the terminal. NAME is an mcp-client entry's serverName (its oauth settings apply);
 * a URL signs in to that server with the flags' settings. Tokens never reach the terminal.
 */
import { createInterface } from 'node:readline'
import {
  color,
  defineCommand,
  LineReader,
  printJson,
  YokeError,
  type CommandContext,
} from 'yoke/cli'
import { yokeHome } from 'yoke'
import type { OAuthSettings } from './client.ts'

interface Target {
  server: string
  url: string
  settings: OAuthSettings
}

/** The entry named NAME (its serverName), or a URL with the flags' settings. */
async function target(
  cli: CommandContext,
  nameOrUrl: string | undefined,
  flags: Record<string, unknown>,
): Promise<Target> {
  if (!nameOrUrl)
    throw new YokeError('USAGE', { reason: 'name the server (its serverName) or its URL' })
  if (/^https?:\/\//i.test(nameOrUrl))
    return {
      server: new URL(nameOrUrl).host,
      url: nameOrUrl,
      settings: {
        scopes: ((flags.scope as string[] | undefined) ?? []).flatMap((s) => s.split(' ')),
        clientId: flags['client-id'] as string | undefined,
        allowLoopback: Boolean(flags['allow-loopback']),
      },
    }
  const entries = (await cli.instances()).filter((i) => i.use === 'mcp-client')
  const entry = entries.find((i) => (i.config as { serverName?: string })?.serverName === nameOrUrl)
  const cfg = entry?.config as
    { url?: string; oauth?: boolean | Partial<OAuthSettings> } | undefined
  if (!entry || !cfg?.url)
    throw new YokeError('USAGE', {
      reason: `no HTTP mcp-client entry has serverName "${nameOrUrl}"; the entries are: ${entries.map((e) => (e.config as { serverName?: string })?.serverName).join(', ') || 'none'} (or give the server's URL)`,
    })
  const oauth = typeof cfg.oauth === 'object' ? cfg.oauth : {}
  return {
    server: nameOrUrl,
    url: cfg.url,
    settings: { scopes: [], allowLoopback: false, ...oauth },
  }
}

async function serverAuthFor(cli: CommandContext, t: Target) {
  const { ServerAuth } = await import('./client.ts')
  const { openStore } = await import('./store.ts')
  const home = yokeHome(cli.options)
  return new ServerAuth({
    server: t.server,
    url: t.url,
    settings: t.settings,
    store: openStore(home),
  })
}

const urlFlags = {
  scope: { type: 'string', multiple: true, description: 'with a URL: a scope to ask for' },
  'client-id': { type: 'string', description: 'with a URL: a pre-registered client id' },
  'allow-loopback': {
    type: 'boolean',
    description: 'with a URL: allow an authorization server on a loopback address (development)',
  },
} as const

const mcpLogin = defineCommand({
  name: 'mcp login',
  summary:
    'sign in to an OAuth-protected MCP server (prints the URL to open; tokens go to the keyring)',
  usage: 'yoke mcp login NAME|URL [--headless] [--no-browser] [--timeout SECONDS] [common flags]',
  positionals: 1,
  flags: {
    headless: {
      type: 'boolean',
      description: 'no redirect listener: paste back the URL the browser was sent to',
    },
    'no-browser': { type: 'boolean', description: 'print the URL without opening a browser' },
    timeout: {
      type: 'string',
      value: 'SECONDS',
      description: 'wait this long for the redirect (300)',
    },
    ...urlFlags,
  },
  examples: ['yoke mcp login docs', 'yoke mcp login https://mcp.example.com/mcp --headless'],
  async run(args, [nameOrUrl], cli) {
    const t = await target(cli, nameOrUrl, args)
    const serverAuth = await serverAuthFor(cli, t)
    const { login } = await import('./login.ts')
    const seconds = Number(args.timeout ?? 300)
    if (!(seconds > 0))
      throw new YokeError('USAGE', { reason: '--timeout takes a number of seconds' })
    const lines = args.headless
      ? new LineReader(createInterface({ input: process.stdin, terminal: false }))
      : undefined
    try {
      const { scope } = await login(serverAuth, {
        timeoutMs: seconds * 1000,
        headless: Boolean(args.headless),
        browser: !args['no-browser'] && !process.env.CI,
        say: (line) => process.stderr.write(`${line}\n`),
        readLine: () => lines!.next(),
      })
      const where = serverAuth.options.store.where
      if (args.json) printJson({ ok: true, server: t.server, scope, store: where })
      else
        process.stdout.write(
          `${color.green('signed in')} to ${t.server}${scope ? ` (scope ${scope})` : ''}; credentials in ${where}\n`,
        )
      return 0
    } finally {
      lines?.rl.close()
    }
  },
})

const mcpLogout = defineCommand({
  name: 'mcp logout',
  summary: "forget an MCP server's OAuth credentials (and revoke them where the server allows)",
  usage: 'yoke mcp logout NAME|URL [common flags]',
  positionals: 1,
  flags: urlFlags,
  examples: ['yoke mcp logout docs'],
  async run(args, [nameOrUrl], cli) {
    const t = await target(cli, nameOrUrl, args)
    const serverAuth = await serverAuthFor(cli, t)
    const revoked = await revoke(serverAuth).catch(() => false)
    const removed = serverAuth.options.store.remove(t.url)
    if (args.json) printJson({ ok: true, server: t.server, removed, revoked })
    else
      process.stdout.write(
        removed
          ? `signed out of ${t.server}${revoked ? ' (revoked at its authorization server)' : ''}\n`
          : `no credentials were stored for ${t.server}\n`,
      )
    return 0
  },
})

/** RFC 7009 at the issuer's revocation endpoint, through the authorization-server client. */
async function revoke(serverAuth: Awaited<ReturnType<typeof serverAuthFor>>): Promise<boolean> {
  const c = serverAuth.credentials
  if (!c?.issuer || !c.tokens) return false
  const { discoverAuthorizationServerMetadata } = await import('@modelcontextprotocol/client')
  const metadata = await discoverAuthorizationServerMetadata(c.issuer, {
    fetchFn: serverAuth.fetch,
  })
  const endpoint = (metadata as { revocation_endpoint?: string } | undefined)?.revocation_endpoint
  const clientId = serverAuth.options.settings.clientId ?? c.client?.client_id
  if (!endpoint || !clientId) return false
  for (const token of [c.tokens.refresh_token, c.tokens.access_token].filter(Boolean))
    await serverAuth.fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: token!, client_id: clientId }).toString(),
    })
  return true
}

const mcpAuthStatus = defineCommand({
  // commands are one or two words: `yoke mcp auth status` is `mcp auth` with `status`
  name: 'mcp auth',
  summary:
    'yoke mcp auth status: which OAuth MCP servers are signed in (issuer, scope, expiry; never the tokens)',
  usage: 'yoke mcp auth status [--json] [common flags]',
  positionals: 1,
  examples: ['yoke mcp auth status', 'yoke mcp auth status --json'],
  async run(args, [what], cli) {
    if (what !== undefined && what !== 'status')
      throw new YokeError('USAGE', { reason: `yoke mcp auth takes status, not "${what}"` })
    const entries = (await cli.instances()).filter(
      (i) => i.use === 'mcp-client' && (i.config as { oauth?: unknown })?.oauth,
    )
    const rows = []
    for (const entry of entries) {
      const name = (entry.config as { serverName: string }).serverName
      const t = await target(cli, name, {})
      const c = (await serverAuthFor(cli, t)).credentials
      rows.push({
        server: name,
        url: t.url,
        signedIn: Boolean(c?.tokens),
        issuer: c?.issuer,
        scope: c?.tokens?.scope ?? c?.scope,
        expiresAt: c?.expiresAt && new Date(c.expiresAt).toISOString(),
        refreshable: Boolean(c?.tokens?.refresh_token),
        ...(c?.grantLostAt && {
          note: 'the authorization server refused the sign-in: log in again',
        }),
      })
    }
    if (args.json) printJson({ ok: true, servers: rows })
    else if (!rows.length) process.stdout.write('no mcp-client entry uses oauth\n')
    else
      for (const r of rows)
        process.stdout.write(
          `${r.server}  ${r.signedIn ? color.green('signed in') : color.yellow(`not signed in: yoke mcp login ${r.server}`)}${r.issuer ? `  issuer ${r.issuer}` : ''}${r.scope ? `  scope ${r.scope}` : ''}${r.expiresAt ? `  access token until ${r.expiresAt}${r.refreshable ? ' (refreshable)' : ''}` : ''}${r.note ? `  (${r.note})` : ''}\n`,
        )
    return 0
  },
})

export const oauthCommands = [mcpLogin, mcpLogout, mcpAuthStatus]
