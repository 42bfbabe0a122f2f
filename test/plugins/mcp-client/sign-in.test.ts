// The sign-in decisions of mcp-client, without a kernel, a server or an authorization server:
// when a request refreshes first (oauth/client.ts tokenStep), what a refused refresh means
// (refusalOf: sign in again, or an outage that keeps the grant), why a server is signed out,
// when new credentials in the store reconnect a waiting server (signedInSince), and what a call
// of a tool of a server that is away answers (instance.ts awayReason: OAUTH_LOGIN_REQUIRED naming
// `yoke mcp login`, MCP_SERVER_HELD, SERVER_UNAVAILABLE; never UNKNOWN_TOOL).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { OAuthError, OAuthErrorCode } from '@modelcontextprotocol/client'
import {
  LoginRequired,
  refusalOf,
  REFRESH_SKEW_MS,
  signedInSince,
  signedOutWhy,
  tokenStep,
} from '../../../plugins/mcp-client/oauth/client.ts'
import type { Credentials } from '../../../plugins/mcp-client/oauth/store.ts'
import { awayReason, type AwayFacts } from '../../../plugins/mcp-client/instance.ts'
import { YokeError } from '../../../src/index.ts'

const NOW = 1_000_000_000
const url = 'https://mcp.example.com/mcp'
const signedIn = (over: Partial<Credentials> = {}, tokens: Partial<Credentials['tokens']> = {}) =>
  ({
    url,
    savedAt: NOW - 10_000,
    tokens: {
      access_token: 'a',
      token_type: 'Bearer',
      refresh_token: 'r',
      expires_in: 3600,
      ...tokens,
    },
    expiresAt: NOW + 3_600_000,
    ...over,
  }) as Credentials

describe('tokenStep: before each request', () => {
  it('no tokens: sent without one (the 401 says why)', () => {
    assert.equal(tokenStep(undefined, NOW), 'none')
    assert.equal(tokenStep({ url, savedAt: NOW } as Credentials, NOW), 'none')
  })

  it('a token far from expiry is used as it is', () => {
    assert.equal(tokenStep(signedIn(), NOW), 'use')
    assert.equal(tokenStep(signedIn({ expiresAt: undefined }), NOW), 'use')
  })

  it(`refreshes within ${REFRESH_SKEW_MS / 1000} s of expiry, or a third of a short lifetime`, () => {
    assert.equal(tokenStep(signedIn({ expiresAt: NOW + REFRESH_SKEW_MS - 1 }), NOW), 'refresh')
    assert.equal(tokenStep(signedIn({ expiresAt: NOW + REFRESH_SKEW_MS + 1 }), NOW), 'use')
    // a 30 s token: refreshed 10 s ahead, not at once
    const short = (left: number) => signedIn({ expiresAt: NOW + left }, { expires_in: 30 })
    assert.equal(tokenStep(short(9_999), NOW), 'refresh')
    assert.equal(tokenStep(short(10_001), NOW), 'use')
  })

  it('an expiring token without a refresh token is sent as it is (the 401 asks for a sign-in)', () => {
    const c = signedIn({ expiresAt: NOW + 1 }, { refresh_token: undefined })
    assert.equal(tokenStep(c, NOW), 'use')
  })
})

describe('refusalOf: a refused refresh', () => {
  it('invalid_grant: the grant is gone, sign in again', () => {
    assert.equal(refusalOf(new OAuthError(OAuthErrorCode.InvalidGrant, 'revoked')), 'grant')
  })

  it("invalid_client or unauthorized_client: yoke's client is gone, sign in again", () => {
    assert.equal(refusalOf(new OAuthError(OAuthErrorCode.InvalidClient, 'x')), 'client')
    assert.equal(refusalOf(new OAuthError(OAuthErrorCode.UnauthorizedClient, 'x')), 'client')
  })

  it('anything else is an outage: the grant is kept and the supervisor retries', () => {
    assert.equal(refusalOf(new OAuthError(OAuthErrorCode.ServerError, 'down')), 'outage')
    assert.equal(refusalOf(new TypeError('fetch failed')), 'outage')
    assert.equal(refusalOf('?'), 'outage')
  })
})

describe('signed out, and signed in again', () => {
  it('says whether it never signed in or lost its sign-in', () => {
    assert.equal(signedOutWhy(undefined), 'it has not been signed in to yet')
    assert.equal(
      signedOutWhy({ url, savedAt: NOW, grantLostAt: NOW } as Credentials),
      'its sign-in expired or was revoked',
    )
  })

  it('reconnects when tokens were saved after the ones it saw', () => {
    const seen = NOW - 10_000
    assert.equal(signedInSince(seen, signedIn()), false, 'the same record')
    assert.equal(signedInSince(seen, signedIn({ savedAt: NOW })), true, 'a new login')
    assert.equal(signedInSince(undefined, signedIn()), true, 'a first login')
    assert.equal(
      signedInSince(seen, { url, savedAt: NOW, grantLostAt: NOW } as Credentials),
      false,
      'a record without tokens (a refusal written) is no sign-in',
    )
    assert.equal(signedInSince(seen, undefined), false, 'logged out')
  })
})

describe('awayReason: a call of a tool of a server that is away', () => {
  const facts = (over: Partial<AwayFacts>): AwayFacts => ({
    server: 's',
    state: 'reconnecting',
    detail: 'reconnecting, attempt 2 of 10 (last error: refused)',
    ...over,
  })
  const code = (err: YokeError | undefined) => err?.code

  it('a server waiting for a sign-in answers OAUTH_LOGIN_REQUIRED naming yoke mcp login', () => {
    const login = new LoginRequired('s', 'its sign-in expired or was revoked')
    assert.equal(awayReason(facts({ state: 'needs-login', login })), login)
    const made = awayReason(facts({ state: 'needs-login', lastError: 'HTTP 401' }))
    assert.equal(code(made), 'OAUTH_LOGIN_REQUIRED')
    assert.match(made!.message, /HTTP 401/)
    assert.match(made!.hint ?? '', /yoke mcp login s/)
  })

  it('held: MCP_SERVER_HELD with why; connected: nothing (it has no such tool)', () => {
    assert.equal(code(awayReason(facts({ state: 'held', heldFor: 'a test' }))), 'MCP_SERVER_HELD')
    assert.equal(awayReason(facts({ state: 'connected' })), undefined)
  })

  it('reconnecting, gave up, connecting: SERVER_UNAVAILABLE with the state', () => {
    for (const state of ['reconnecting', 'gave-up', 'connecting'] as const) {
      const err = awayReason(facts({ state }))
      assert.equal(code(err), 'SERVER_UNAVAILABLE')
      assert.match(err!.message, /attempt 2 of 10/)
    }
  })
})
