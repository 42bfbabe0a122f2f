/**
 * Where a server's OAuth credentials live: the OS keyring (@napi-rs/keyring) when it answers,
 * else `$YOKE_HOME/mcp-credentials.json`, mode 0600, refused on read when others may read it.
 * Keyed as octos keys them, "normalised URL|16 hex of its sha256", so two spellings of one
 * server share one entry. `YOKE_CREDENTIAL_STORE=file` skips the keyring (tests, CI).
 */
import { createHash, randomUUID } from 'node:crypto'
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/client'
import { YokeError } from 'yoke'
import '../errors.ts'

/** What yoke keeps for one server. Never printed, logged or put in an error. */
export interface Credentials {
  url: string
  /** the authorization server that issued them */
  issuer?: string
  client?: OAuthClientInformationMixed
  tokens?: OAuthTokens
  /** when the access token expires (ms since the epoch), from expires_in */
  expiresAt?: number
  /** when the authorization server refused the stored grant (revoked, expired); a login clears it */
  grantLostAt?: number
  /** every scope asked for so far (a step-up widens it) */
  scope?: string
  savedAt: number
}

const SERVICE = 'yoke MCP credentials'
const require = createRequire(import.meta.url)

/** The URL as one server: scheme and host case-folded (URL does that), no trailing slash. */
export function normaliseUrl(url: string): string {
  return new URL(url).href.replace(/\/+$/, '')
}

export function credentialKey(url: string): string {
  const norm = normaliseUrl(url)
  return `${norm}|${createHash('sha256').update(norm).digest('hex').slice(0, 16)}`
}

export interface CredentialStore {
  /** 'keyring' or the file's path */
  readonly where: string
  read(url: string): Credentials | undefined
  write(credentials: Credentials): void
  /** true when there was something to delete */
  remove(url: string): boolean
}

/** The keyring when it works here (a probe read), else the file. */
export function openStore(home: string): CredentialStore {
  if (process.env.YOKE_CREDENTIAL_STORE !== 'file') {
    const keyring = keyringStore()
    if (keyring) return keyring
  }
  return fileStore(join(home, 'mcp-credentials.json'))
}

function keyringStore(): CredentialStore | undefined {
  let Entry: typeof import('@napi-rs/keyring').Entry
  try {
    // a native module: loaded when credentials are needed, and a platform without it uses the file
    Entry = (require('@napi-rs/keyring') as typeof import('@napi-rs/keyring')).Entry
    new Entry(SERVICE, 'probe').getPassword()
  } catch {
    return undefined
  }
  const entry = (url: string) => new Entry(SERVICE, credentialKey(url))
  return {
    where: 'keyring',
    read(url) {
      const text = entry(url).getPassword()
      return text ? (JSON.parse(text) as Credentials) : undefined
    },
    write(credentials) {
      entry(credentials.url).setPassword(JSON.stringify(credentials))
    },
    remove: (url) => entry(url).deleteCredential(),
  }
}

type FileShape = { version: 1; servers: Record<string, Credentials> }

export function fileStore(file: string): CredentialStore {
  const load = (): FileShape => {
    let text: string
    try {
      const mode = statSync(file).mode & 0o777
      if (mode & 0o077) throw new YokeError('CREDENTIALS_EXPOSED', { file, mode: mode.toString(8) })
      text = readFileSync(file, 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, servers: {} }
      throw err
    }
    try {
      return JSON.parse(text) as FileShape
    } catch {
      throw new YokeError('CREDENTIALS_UNREADABLE', { file })
    }
  }
  const save = (shape: FileShape) => {
    mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 })
    const temp = `${file}.${randomUUID().slice(0, 8)}.tmp`
    writeFileSync(temp, JSON.stringify(shape, null, 2) + '\n', { mode: 0o600 })
    chmodSync(temp, 0o600) // whatever the umask
    renameSync(temp, file)
  }
  return {
    where: file,
    read: (url) => load().servers[credentialKey(url)],
    write(credentials) {
      const shape = load()
      shape.servers[credentialKey(credentials.url)] = credentials
      save(shape)
    },
    remove(url) {
      const shape = load()
      const key = credentialKey(url)
      if (!shape.servers[key]) return false
      delete shape.servers[key]
      save(shape)
      return true
    },
  }
}
