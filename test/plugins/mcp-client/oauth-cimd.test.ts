// Client ID Metadata Documents end to end: an authorization server that supports them (oidc-provider,
// draft-02) fetches the document yoke names as its client_id (served here on loopback; see
// test/helpers/oidc.ts for how the https origin is mapped), so the login registers nothing; the
// tokens work and refresh under that client id. Where the server does not advertise support, the
// same entry falls back to dynamic registration.
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ServerAuth } from '../../../plugins/mcp-client/oauth/client.ts'
import { login } from '../../../plugins/mcp-client/oauth/login.ts'
import { fileStore } from '../../../plugins/mcp-client/oauth/store.ts'
import {
  startProtectedServer,
  type ProtectedServer,
} from '../../fixtures/oauth/protected-server.ts'
import { mcpHarness, text, type McpHarness } from '../../helpers/mcp.ts'
import { startAuthServer, type AuthServer } from '../../helpers/oidc.ts'

process.env.YOKE_CREDENTIAL_STORE = 'file'

const CLIENT_URL = 'https://client.test/yoke/client.json'

describe('mcp-client OAuth with a Client ID Metadata Document', () => {
  let docs: Server
  const fetched: string[] = []
  let dir: string
  const store = () => fileStore(join(dir, '.home', 'mcp-credentials.json'))

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'yoke-cimd-'))
    // the document a yoke user publishes at CLIENT_URL (native app: any loopback port redirects)
    docs = createServer((req, res) => {
      fetched.push(req.url!)
      if (req.url !== '/yoke/client.json') return void res.writeHead(404).end()
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          client_id: CLIENT_URL,
          client_name: 'yoke',
          application_type: 'native',
          redirect_uris: ['http://127.0.0.1/callback'],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          token_endpoint_auth_method: 'none',
        }),
      )
    })
    await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve))
  })
  after(() => {
    docs?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  async function setUp(options: { cimd: boolean }) {
    const docsOrigin = `http://127.0.0.1:${(docs.address() as AddressInfo).port}`
    const as = await startAuthServer(
      options.cimd ? { clientMetadataDocuments: { 'https://client.test': docsOrigin } } : {},
    )
    const ps = await startProtectedServer(as.issuer)
    as.resources[ps.url] = ['mcp:read', 'mcp:write']
    return { as, ps }
  }
  const settings = { scopes: ['mcp:read'], clientMetadataUrl: CLIENT_URL, allowLoopback: true }

  /** `yoke mcp login`, the browser step driven through the loopback redirect */
  async function signIn(as: AuthServer, ps: ProtectedServer) {
    const printed: string[] = []
    const auth = new ServerAuth({ server: 'p', url: ps.url, settings, store: store() })
    await login(auth, {
      timeoutMs: 15_000,
      headless: false,
      browser: false,
      say: (line) => {
        const url = /^\s+(https?:\/\/\S+)$/.exec(line)?.[1]
        if (url) {
          printed.push(url)
          void as.authorize(url)
        }
      },
    })
    return new URL(printed[0]!)
  }

  it('the server fetches the document; nothing is registered; tools work and refresh', async () => {
    const { as, ps } = await setUp({ cimd: true })
    let h: McpHarness | undefined
    try {
      const authorizeUrl = await signIn(as, ps)
      assert.equal(authorizeUrl.searchParams.get('client_id'), CLIENT_URL)
      assert.ok(fetched.includes('/yoke/client.json'), 'the authorization server fetched it')
      assert.ok(!as.requests.includes('POST /reg'), 'no dynamic registration')
      const stored = store().read(ps.url)!
      assert.equal(stored.client?.client_id, CLIENT_URL)
      assert.ok(stored.tokens?.refresh_token)

      h = await mcpHarness(dir)
      await h.add('p', {
        serverName: 'p',
        url: ps.url,
        protocol: 'legacy',
        oauth: settings,
      })
      await h.until('connected', () => h!.status('p').state === 'connected')
      assert.equal(text(await h.rt.call('mcp__p__whoami', {})), 'scopes: mcp:read')
      const tokenRequests = as.requests.filter((r) => r === 'POST /token').length
      ps.expireTokens()
      const again = await h.rt.call('mcp__p__whoami', {})
      assert.equal(again.status, 'ok', text(again))
      assert.equal(as.requests.filter((r) => r === 'POST /token').length, tokenRequests + 1)
      assert.notEqual(store().read(ps.url)!.tokens!.access_token, stored.tokens!.access_token)
    } finally {
      await h?.close()
      await ps.close()
      await as.close()
    }
  })

  it('a server that does not advertise support: dynamic registration instead', async () => {
    const { as, ps } = await setUp({ cimd: false })
    try {
      const authorizeUrl = await signIn(as, ps)
      assert.ok(as.requests.includes('POST /reg'), as.requests.join('\n'))
      const registered = store().read(ps.url)!.client!.client_id
      assert.notEqual(registered, CLIENT_URL)
      assert.equal(authorizeUrl.searchParams.get('client_id'), registered)
    } finally {
      await ps.close()
      await as.close()
    }
  })
})
