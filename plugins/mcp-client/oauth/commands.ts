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
  messageOf,
  printJson,
  YokeError,
  type CommandContext,
} from 'yoke/cli'
import type { OAuthSettings } from './client.ts'
import type { Credentials } from './store.ts'
import { insecureOAuthUrl } from '../addresses.ts'

interface Target {
  server: string
  url: string
  settings: OAuthSettings
  /** the entry's ssrfGuard (imported and package URLs): its own origin is address-checked too */
  ssrfGuard: boolean
}

/** The entry named NAME (its serverName), or a URL with the flags' settings. */
async function target(
  cli: CommandContext,
  nameOrUrl: string | undefined,
  flags: Record<string, unknown>,
): Promise<Target> {
  if (!nameOrUrl)
    throw new YokeError('USAGE', { reason: 'name the server (its serverName) or its URL' })
  if (/^https?:\/\//i.test(nameOrUrl)) {
    const allowLoopback = Boolean(flags['allow-loopback'])
    const insecure = insecureOAuthUrl(nameOrUrl, allowLoopback)
    if (insecure) throw new YokeError('USAGE', { reason: `${nameOrUrl}: ${insecure}` })
    return {
      server: new URL(nameOrUrl).host,
      url: nameOrUrl,
      settings: {
        scopes: ((flags.scope as string[] | undefined) ?? []).flatMap((s) => s.split(' ')),
        clientId: flags['client-id'] as string | undefined,
        allowLoopback,
      },
      ssrfGuard: false, // typed by the user
    }
  }
  const entries = (await cli.instances()).filter((i) => i.use === 'mcp-client')
  const entry = entries.find((i) => (i.config as { serverName?: string })?.serverName === nameOrUrl)
  const cfg = entry?.config as
    { url?: string; oauth?: boolean | Partial<OAuthSettings>; ssrfGuard?: boolean } | undefined
  if (!entry || !cfg?.url)
    throw new YokeError('USAGE', {
      reason: `no HTTP mcp-client entry has serverName "${nameOrUrl}"; the entries are: ${entries.map((e) => (e.config as { serverName?: string })?.serverName).join(', ') || 'none'} (or give the server's URL)`,
    })
  const oauth = typeof cfg.oauth === 'object' ? cfg.oauth : {}
  const settings = { scopes: [], allowLoopback: false, ...oauth }
  const insecure = insecureOAuthUrl(cfg.url, settings.allowLoopback)
  if (insecure)
    throw new YokeError('USAGE', { reason: `the entry "${nameOrUrl}" (${cfg.url}): ${insecure}` })
  return { server: nameOrUrl, url: cfg.url, settings, ssrfGuard: cfg.ssrfGuard === true }
}

async function serverAuthFor(cli: CommandContext, t: Target) {
  const [{ ServerAuth }, { openStore }, { yokeHome }] = await Promise.all([
    import('./client.ts'),
    import('./store.ts'),
    import('yoke'), // the runtime's entry: loaded only when a command runs
  ])
  return new ServerAuth({
    server: t.server,
    url: t.url,
    settings: t.settings,
    store: openStore(yokeHome(cli.options)),
    ssrfGuard: t.ssrfGuard,
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
    const { store } = serverAuth.options
    const removed = store.remove(t.url)
    // read back: "signed out" is said only when nothing of the sign-in is left where yoke reads it
    let left: boolean
    try {
      left = store.read(t.url) !== undefined
    } catch (err) {
      throw new YokeError('CREDENTIALS_NOT_REMOVED', {
        server: t.server,
        where: store.where,
        reason: `reading them back failed: ${messageOf(err)}`,
      })
    }
    if (left)
      throw new YokeError('CREDENTIALS_NOT_REMOVED', {
        server: t.server,
        where: store.where,
        reason: 'they were still there when read back',
      })
    if (args.json) printJson({ ok: true, server: t.server, removed, revoked })
    else
      process.stdout.write(
        removed
          ? `signed out of ${t.server}${revoked ? ' (revoked at its authorization server)' : ' (forgotten here; not revoked: its authorization server offers no revocation or refused it)'}\n`
          : `no credentials were stored for ${t.server}\n`,
      )
    return 0
  },
})

/**
 * RFC 7009 at the issuer's revocation endpoint, through the authorization-server client (its
 * address rules, no redirects). True when the endpoint answered 200 for the grant's token (the
 * refresh token; the access token when there is none); the access token after a refresh token
 * is best effort (a JWT access token cannot always be revoked, and it expires anyway).
 */
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
  const send = async (token: string) => {
    const response = await serverAuth.fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, client_id: clientId }).toString(),
    })
    await response.body?.cancel().catch(() => {})
    return response.status === 200
  }
  const [grant, ...rest] = [c.tokens.refresh_token, c.tokens.access_token].filter(
    (t): t is string => Boolean(t),
  )
  const revoked = await send(grant!)
  for (const token of rest) await send(token).catch(() => false)
  return revoked
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
    let unreadable = 0
    for (const entry of entries) {
      const name = (entry.config as { serverName: string }).serverName
      const t = await target(cli, name, {})
      let c: Credentials | undefined
      try {
        c = (await serverAuthFor(cli, t)).credentials
      } catch (err) {
        // a store or an entry yoke cannot read costs this row, said with its code; the exit is 1
        if (!(err instanceof YokeError)) throw err
        unreadable++
        rows.push({
          server: name,
          url: t.url,
          signedIn: false,
          error: { code: err.code, message: err.message, hint: err.hint },
        })
        continue
      }
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
    if (args.json) printJson({ ok: unreadable === 0, servers: rows })
    else if (!rows.length) process.stdout.write('no mcp-client entry uses oauth\n')
    else
      for (const r of rows)
        if (r.error)
          process.stdout.write(
            `${r.server}  ${color.red(`${r.error.code} ${r.error.message}`)}\n  hint: ${r.error.hint}\n`,
          )
        else
          process.stdout.write(
            `${r.server}  ${r.signedIn ? color.green('signed in') : color.yellow(`not signed in: yoke mcp login ${r.server}`)}${r.issuer ? `  issuer ${r.issuer}` : ''}${r.scope ? `  scope ${r.scope}` : ''}${r.expiresAt ? `  access token until ${r.expiresAt}${r.refreshable ? ' (refreshable)' : ''}` : ''}${r.note ? `  (${r.note})` : ''}\n`,
          )
    return unreadable ? 1 : 0
  },
})

export const oauthCommands = [mcpLogin, mcpLogout, mcpAuthStatus]
