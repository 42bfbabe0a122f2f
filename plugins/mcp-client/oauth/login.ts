/**
 * The interactive sign-in (`yoke mcp login`): a loopback redirect on 127.0.0.1 (the entry's
 * callbackPort, else a free port), the authorization URL printed (and opened in a browser when
 * there is one), then either the redirect arriving there or, headless, the redirected URL pasted
 * back. Only a redirect that carries this login's state ends the wait (any other hit on the
 * loopback port is answered and ignored); the RFC 9207 `iss` is checked before the code is
 * redeemed; the tokens go to the store, never to the terminal. Every request goes through the
 * authorization-server client (fetch.ts), the first probe of the server too; only an https
 * authorization URL (or http to a loopback development server) is printed or opened.
 */
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { auth, extractWWWAuthenticateParams, type FetchLike } from '@modelcontextprotocol/client'
import { messageOf, YokeError } from 'yoke'
import { insecureOAuthUrl } from '../addresses.ts'
import { ServerAuth, withoutRawBody } from './client.ts'

export interface LoginOptions {
  /** how long to wait for the redirect (ms) */
  timeoutMs: number
  /** print the URL and read the redirected URL from `readLine` instead of listening */
  headless: boolean
  /** try to open a browser */
  browser: boolean
  /** where the URL and the instructions go */
  say(line: string): void
  /** headless: the next line the user types */
  readLine?(): Promise<string | undefined>
}

const PAGE = (ok: boolean) =>
  `<!doctype html><meta charset="utf-8"><title>yoke</title><p>${ok ? 'Signed in: you can close this tab and return to the terminal.' : 'The sign-in did not complete; see the terminal.'}</p>`

type Failed = (reason: string, cause?: unknown) => YokeError

export async function login(
  serverAuth: ServerAuth,
  options: LoginOptions,
): Promise<{ scope?: string }> {
  const { server, url, settings } = serverAuth.options
  const failed: Failed = (reason, cause) =>
    new YokeError('OAUTH_FAILED', { server, reason: withoutRawBody(reason) }, { cause })
  // the server's own 401 names its metadata and the scope it wants
  const challenge = await probe(url, serverAuth.fetch).catch((err: Error) => {
    if (err instanceof YokeError && err.code === 'URL_REFUSED') throw err
    return undefined // no answer: discovery finds the metadata at the well-known places
  })
  const scope = serverAuth.scope(challenge?.scope)
  serverAuth.needsNewClient(scope)
  const loopback = await openLoopback(serverAuth, settings.callbackPort, failed)
  let authorizationUrl: URL | undefined
  const provider = serverAuth.provider({
    redirectUrl: loopback.redirectUrl,
    redirect: (u) => (authorizationUrl = u),
  })
  try {
    const first = await auth(provider, {
      serverUrl: url,
      scope,
      resourceMetadataUrl: challenge?.resourceMetadataUrl,
      fetchFn: serverAuth.fetch,
      forceReauthorization: true,
    })
    if (first === 'AUTHORIZED' || !authorizationUrl) return { scope } // a non-interactive grant
    show(authorizationUrl, serverAuth, options, failed)
    const back = options.headless
      ? await pasted(options, failed)
      : await loopback.wait(options, failed)
    const params = back.searchParams
    await auth(provider, {
      serverUrl: url,
      authorizationCode: codeOf(params, serverAuth.expectedState, failed),
      iss: params.get('iss') ?? undefined,
      scope,
      fetchFn: serverAuth.fetch,
    }).catch((err: Error) => {
      throw err instanceof YokeError ? err : failed(err.message, err)
    })
    serverAuth.wantScope(scope)
    return { scope }
  } catch (err) {
    if (err instanceof YokeError) throw err
    throw failed(messageOf(err), err)
  } finally {
    loopback.close()
  }
}

/**
 * The loopback redirect on 127.0.0.1: only a hit that carries this login's state ends the wait
 * (another process on this machine may hit the port; it is answered and ignored).
 */
async function openLoopback(serverAuth: ServerAuth, port: number | undefined, failed: Failed) {
  let arrived!: (url: URL) => void
  const redirected = new Promise<URL>((resolve) => (arrived = resolve))
  const loopback = createServer((req, res) => {
    const got = new URL(req.url ?? '/', 'http://127.0.0.1')
    if (got.pathname !== '/callback') return void res.writeHead(404).end()
    const ours =
      serverAuth.expectedState !== undefined &&
      got.searchParams.get('state') === serverAuth.expectedState
    const ok = ours && got.searchParams.has('code')
    res.writeHead(ok ? 200 : 400, { 'content-type': 'text/html' }).end(PAGE(ok))
    if (ours) arrived(got)
  })
  await listen(loopback, port).catch((err: Error) => {
    throw failed(
      `the loopback redirect could not listen on 127.0.0.1:${port} (${err.message})`,
      err,
    )
  })
  const redirectUrl = `http://127.0.0.1:${(loopback.address() as AddressInfo).port}/callback`
  let timer: NodeJS.Timeout | undefined
  return {
    redirectUrl,
    /** the redirect, within the login's time limit */
    wait(options: LoginOptions, failedWith: Failed): Promise<URL> {
      const seconds = Math.round(options.timeoutMs / 1000)
      options.say(`Waiting for the redirect to ${redirectUrl} (up to ${seconds} s)…`)
      return Promise.race([
        redirected,
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(failedWith(`no redirect arrived within ${seconds} s`)),
            options.timeoutMs,
          )
        }),
      ])
    },
    close() {
      clearTimeout(timer)
      loopback.closeAllConnections()
      loopback.close()
    },
  }
}

/** Prints the authorization URL (and opens it when asked): only https, or loopback when allowed. */
function show(url: URL, serverAuth: ServerAuth, options: LoginOptions, failed: Failed) {
  const { server, settings } = serverAuth.options
  const insecure = insecureOAuthUrl(url.href, settings.allowLoopback)
  if (insecure)
    throw failed(
      `its authorization URL (${url.protocol}//${url.host}) is not printed or opened: ${insecure}`,
    )
  options.say(`Open this URL to sign in to MCP server "${server}":`)
  options.say(`  ${url.href}`)
  if (options.browser && !options.headless) openBrowser(url.href)
}

/** Headless: the redirected URL, pasted back. */
async function pasted(options: LoginOptions, failed: Failed): Promise<URL> {
  options.say('Then paste the URL your browser was sent to (it starts with http://127.0.0.1):')
  const line = (await options.readLine?.())?.trim()
  if (!line) throw failed('no redirected URL was pasted')
  try {
    return new URL(line)
  } catch {
    throw failed('what was pasted is not a URL')
  }
}

/** The authorization code of a redirect that carries this login's state (else why not). */
function codeOf(params: URLSearchParams, state: string | undefined, failed: Failed): string {
  if (params.get('state') !== state)
    throw failed('the redirect does not carry the state of this login (a stale or foreign URL)')
  // error and error_description come from whoever sent the redirect: named, not echoed
  if (params.get('error'))
    throw failed(
      `the authorization server refused (error ${JSON.stringify(params.get('error')!.slice(0, 40))})`,
    )
  const code = params.get('code')
  if (!code) throw failed('the redirect carries no authorization code')
  return code
}

/** The server's answer to a request without a token: its WWW-Authenticate parameters on a 401. */
async function probe(url: string, serverFetch: FetchLike) {
  const response = await serverFetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'yoke', version: '0' },
      },
    }), // fetch.ts bounds it
  })
  await response.body?.cancel().catch(() => {})
  return response.status === 401 || response.status === 403
    ? extractWWWAuthenticateParams(response)
    : undefined
}

function listen(server: Server, port = 0) {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
}

/**
 * The platform's opener, detached, without a shell (on Windows url.dll's handler, not `cmd start`,
 * where `&` in a URL would separate commands); no browser (a server, CI) is not an error: the URL
 * is printed. Only an https URL (or the loopback development allowance) gets here.
 */
function openBrowser(url: string) {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['rundll32', ['url.dll,FileProtocolHandler', url]]
        : ['xdg-open', [url]]
  if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return
  try {
    const child = spawn(command, args as string[], {
      stdio: 'ignore',
      detached: true,
      windowsHide: true,
    })
    child.on('error', () => {})
    child.unref()
  } catch {
    // the URL is on the terminal
  }
}
