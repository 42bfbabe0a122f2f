/**
 * One access token checked (RFC 9068, RFC 8725): jose verifies the signature against the issuer's
 * keys, `iss`, `aud`, `exp` (required) and `nbf`; then the checks jose leaves to its caller: the
 * type, a future `iat`, a key binding, and who holds the token. A failure is either the token's
 * (`Refused`, or a jose error explained in words for its client) or the issuer's
 * (`IssuerUnavailable`: its keys could not be had), and only the latter makes the gateway answer 503.
 */
import { errors as jose, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { messageOf } from 'yoke'
import { IssuerUnavailable } from './issuer.ts'

/** asymmetric only: a key set from an issuer never holds a shared secret to check HMACs with */
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]
/** RFC 9068 §4: what a resource server takes as an access token's `typ` */
const ACCESS_TOKEN_TYPES = new Set(['at+jwt', 'application/at+jwt'])
/** and what issuers that predate RFC 9068 put there (a missing typ is taken unless strict) */
const LEGACY_TYPES = new Set(['jwt', 'application/jwt'])
/** the key-set errors that are the token's fault: it names a key the issuer does not have */
const TOKEN_KEY_ERRORS = new Set(['ERR_JWKS_NO_MATCHING_KEY', 'ERR_JWKS_MULTIPLE_MATCHING_KEYS'])

export interface TokenRules {
  issuer: string
  audience: string | string[]
  clockToleranceSec: number
  /** RFC 9068 to the letter: `typ` must be at+jwt (no plain JWT, no missing typ) */
  strictType: boolean
}

/** A check of ours that the token failed, in words for its client. */
export class Refused extends Error {}

/**
 * The token's claims, once every check passed. Throws `Refused` or a jose error for a bad token,
 * `IssuerUnavailable` when the issuer's keys cannot be fetched.
 */
export async function verifyAccessToken(
  token: string,
  keys: JWTVerifyGetKey,
  rules: TokenRules,
): Promise<JWTPayload> {
  const verified = await jwtVerify(token, issuerFailuresMarked(keys), {
    issuer: rules.issuer,
    audience: rules.audience,
    algorithms: ALGORITHMS,
    requiredClaims: ['exp'],
    clockTolerance: rules.clockToleranceSec,
  })
  checkType(verified.protectedHeader.typ, rules.strictType)
  const { payload } = verified
  // jose checks iat only against a maximum age; a token from the future says a clock is off
  if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + rules.clockToleranceSec)
    throw new Refused(
      "the access token was issued in the future (iat): this machine's clock or the issuer's is off",
    )
  if (payload.cnf !== undefined)
    throw new Refused('the access token is bound to a key (cnf); only bearer tokens are taken')
  return payload
}

function checkType(typ: unknown, strict: boolean): void {
  if (typ === undefined) {
    if (strict)
      throw new Refused('the access token has no type (typ); oauth.strictType takes at+jwt only')
    return // an issuer that omits it: aud (the resource, never a client) keeps ID tokens out
  }
  if (typeof typ !== 'string') throw new Refused("the access token's type (typ) is not a string")
  const type = typ.toLowerCase()
  if (ACCESS_TOKEN_TYPES.has(type) || (!strict && LEGACY_TYPES.has(type))) return
  throw new Refused(
    `the token's type is ${JSON.stringify(typ.slice(0, 40))}, not an access token's (at+jwt)`,
  )
}

/** The key lookup with a failure to fetch the keys marked as the issuer's, not the token's. */
function issuerFailuresMarked(keys: JWTVerifyGetKey): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await keys(header, token)
    } catch (err) {
      if (TOKEN_KEY_ERRORS.has((err as { code?: string }).code ?? '')) throw err
      throw new IssuerUnavailable(`the issuer's keys cannot be had: ${messageOf(err)}`, {
        cause: err,
      })
    }
  }
}

/**
 * Who holds the token, for binding sessions: the issuer and its subject (`sub`), else the client
 * (`client_id`), else the token itself (`jti`); undefined when it names none of them (such tokens
 * cannot be told apart, so none may hold a session). Kinds and values cannot run together.
 */
export function holderOf(payload: JWTPayload, issuer: string): string | undefined {
  for (const claim of ['sub', 'client_id', 'jti'] as const) {
    const value = (payload as Record<string, unknown>)[claim]
    if (typeof value === 'string' && value) return JSON.stringify([issuer, claim, value])
  }
  return undefined
}

/** The scopes a token holds: RFC 9068's space-separated `scope`, or a `scp` list (some issuers). */
export function scopesIn(payload: JWTPayload): Set<string> {
  const { scope, scp } = payload as { scope?: unknown; scp?: unknown }
  const held = new Set<string>()
  if (typeof scope === 'string') for (const s of scope.split(' ')) if (s) held.add(s)
  if (Array.isArray(scp)) for (const s of scp) if (typeof s === 'string') held.add(s)
  if (typeof scp === 'string') for (const s of scp.split(' ')) if (s) held.add(s)
  return held
}

/** What was wrong with a token, in words for its client (never the token). */
export function explain(err: unknown, audience: string | string[], issuer: string): string {
  if (err instanceof Refused) return err.message
  switch ((err as { code?: string }).code) {
    case 'ERR_JWT_EXPIRED':
      return 'the access token expired'
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason } = err as jose.JWTClaimValidationFailed
      if (reason === 'missing') return `the access token has no ${claim} claim`
      if (claim === 'aud')
        return `the access token is for another resource: its aud must be ${[audience].flat().join(' or ')}`
      if (claim === 'iss')
        return `the access token is from another issuer: its iss must be ${issuer}`
      if (claim === 'nbf') return 'the access token is not valid yet (nbf)'
      return `the access token's ${claim} claim is not acceptable`
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return "the access token's signature does not verify with the issuer's keys"
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return "the access token is not signed with a key of the issuer's (kid)"
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'the access token is not signed with an asymmetric algorithm'
    default:
      // a malformed JWS or JWT, or one jose cannot take apart: still the token's fault
      return 'the access token is not a signed JWT this gateway can check'
  }
}
