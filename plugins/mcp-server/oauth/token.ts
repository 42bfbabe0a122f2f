/**
 * The bearer token HTTP clients must send: from config (`token`), from an environment variable
 * (`tokenEnv`), or from `$YOKE_HOME/mcp-token`, generated there (mode 0600) on first start.
 * Tokens are compared in constant time (as SHA-256 digests, so lengths never differ).
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto'
import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { messageOf, YokeError } from 'yoke'
import '../errors.ts'

export interface Token {
  /** true when `header` (an Authorization header) carries the token */
  check(header: string | undefined): boolean
  /** where the token is, for people (`in ~/.yoke/mcp-token`, `from $VAR`): never the token itself */
  hint: string
  /** set when this start generated it (to be shown once) */
  generated?: { token: string; file: string }
}

export function resolveToken(
  cfg: { token?: string; tokenEnv?: string },
  home: string,
  env: NodeJS.ProcessEnv = process.env,
): Token {
  if (cfg.token) return bearer(cfg.token, "from the mcp-server instance's config (token)")
  if (cfg.tokenEnv) {
    const value = env[cfg.tokenEnv]
    if (!value || value.length < 16)
      throw new YokeError('MCP_TOKEN_INVALID', {
        reason: `tokenEnv names ${cfg.tokenEnv}, which is ${value ? 'shorter than 16 characters' : 'not set'}; set it to a long random string (e.g. \`openssl rand -base64 32\`)`,
      })
    return bearer(value, `from $${cfg.tokenEnv}`)
  }
  const file = join(home, 'mcp-token')
  const existing = readTokenFile(file)
  if (existing) return bearer(existing, `in ${file}`)
  const token = randomBytes(32).toString('base64url')
  mkdirSync(home, { recursive: true, mode: 0o700 })
  // written whole to a private temporary file, then linked into place: a reader never sees it half
  // written, and link fails if another yoke got there first (theirs wins)
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`
  try {
    writeFileSync(temp, token + '\n', { mode: 0o600, flag: 'wx' })
    linkSync(temp, file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new YokeError(
        'MCP_TOKEN_INVALID',
        { reason: `cannot write the MCP token to ${file}: ${messageOf(err)}` },
        { cause: err },
      )
    const theirs = readTokenFile(file)
    if (!theirs)
      throw new YokeError(
        'MCP_TOKEN_INVALID',
        { reason: `${file} exists but holds no token; delete it to have one generated` },
        { cause: err },
      )
    return bearer(theirs, `in ${file}`)
  } finally {
    rmSync(temp, { force: true })
  }
  return { ...bearer(token, `in ${file}`), generated: { token, file } }
}

function readTokenFile(file: string): string | undefined {
  let text: string
  try {
    const stat = lstatSync(file)
    // a link could point the server at any file, and make it the token
    if (!stat.isFile())
      throw new YokeError('MCP_TOKEN_INVALID', {
        reason: `${file} is not a regular file (a link or something else); delete it to have a token generated`,
      })
    if (stat.size > 4096)
      throw new YokeError('MCP_TOKEN_INVALID', {
        reason: `${file} is ${stat.size} bytes; a token file holds one line`,
      })
    if (process.getuid && stat.uid !== process.getuid())
      throw new YokeError('MCP_TOKEN_INVALID', {
        reason: `${file} belongs to another user; delete it to have a token generated`,
      })
    // a token others can read is no secret: tighten it (it is ours, in $YOKE_HOME)
    if (stat.mode & 0o077) chmodSync(file, 0o600)
    text = readFileSync(file, 'utf8').trim()
    if (text && text.length < 16)
      throw new YokeError('MCP_TOKEN_INVALID', {
        reason: `${file} holds a token shorter than 16 characters; delete it to have one generated`,
      })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  return text || undefined
}

/** SHA-256 in one call (a Hash object per request costs about three times as much) */
const digest = (s: string) => hash('sha256', s, 'buffer')

function bearer(token: string, from: string): Token {
  const want = digest(token)
  return {
    hint: from,
    check(header) {
      const m = header && /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
      // compared even when absent, so a missing header takes as long as a wrong one
      return timingSafeEqual(digest(m ? m[1]! : ''), want) && !!m
    },
  }
}
