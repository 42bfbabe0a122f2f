/**
 * Where a server's OAuth credentials live: the OS keyring (@napi-rs/keyring) when a probe entry
 * can be written, read back and deleted there (on Linux only with a Secret Service session bus:
 * the kernel keyring does not outlive a reboot), else `$YOKE_HOME/mcp-credentials.json`, mode
 * 0600, refused on read when others may read it. A keyring write that fails goes to the file.
 * Keyed as octos keys them, "normalised URL|16 hex of its sha256", so two spellings of one server
 * share one entry. `YOKE_CREDENTIAL_STORE=file` skips the keyring (tests, CI).
 *
 * Several yoke processes share the store: every read-modify-write holds a lock file beside it
 * (proper-lockfile) and reads the file again under it, and `exclusive` is the longer per-server
 * lock a refresh holds, so two processes never redeem one rotating refresh token twice (the second
 * would get invalid_grant, and some authorization servers then revoke the whole grant).
 *
 * The file is outside data: it is read through the config reader's checks (a regular file, at
 * most 1 MiB: a FIFO, a device or a huge file is refused without being read) and each entry is
 * validated on its own, so a bad entry makes that server's credentials unreadable and no other's.
 * A link as the file is followed for writes too: the target is replaced (under a lock beside it),
 * never the link.
 */
import { createHash, randomUUID } from 'node:crypto'
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/client'
import { messageOf, readConfigText, YokeError } from 'yoke'
import { z } from 'zod'
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

/** One stored record, checked field by field (what else it holds is kept as it is). */
const credentialsSchema = z.looseObject({
  url: z.string(),
  issuer: z.string().optional(),
  client: z.looseObject({ client_id: z.string() }).optional(),
  tokens: z
    .looseObject({
      access_token: z.string(),
      token_type: z.string(),
      refresh_token: z.string().optional(),
      scope: z.string().optional(),
    })
    .optional(),
  expiresAt: z.number().finite().optional(),
  grantLostAt: z.number().finite().optional(),
  scope: z.string().optional(),
  savedAt: z.number().finite(),
})

const fileSchema = z.object({
  version: z.literal(1),
  servers: z.record(z.string(), z.unknown()),
})

/** `servers.x.expiresAt: expected number, received string`, the first two issues. */
function issuesOf(error: z.ZodError, at: string): string {
  return error.issues
    .slice(0, 2)
    .map((i) => `${[at, ...i.path.map(String)].filter(Boolean).join('.')}: ${i.message}`)
    .join('; ')
}

const unreadable = (file: string, reason: string, cause?: unknown) =>
  new YokeError('CREDENTIALS_UNREADABLE', { file, reason }, { cause })

/** A record read back (file or keyring): valid, or CREDENTIALS_UNREADABLE naming what is wrong. */
function checked(value: unknown, where: string, key: string): Credentials {
  const result = credentialsSchema.safeParse(value)
  if (!result.success)
    throw unreadable(
      where,
      `its entry ${JSON.stringify(key)} is not valid (${issuesOf(result.error, '')})`,
    )
  return result.data as Credentials
}

const SERVICE = 'yoke MCP credentials'
const require = createRequire(import.meta.url)
/** how long a lock is waited for, and when a holder that died leaves it stale */
export const LOCK_WAIT_MS = 40_000
const STALE_MS = 30_000

/** The URL as one server: scheme and host case-folded (URL does that), no trailing slash. */
export function normaliseUrl(url: string): string {
  return new URL(url).href.replace(/\/+$/, '')
}

export function credentialKey(url: string): string {
  const norm = normaliseUrl(url)
  return `${norm}|${createHash('sha256').update(norm).digest('hex').slice(0, 16)}`
}

type Change = (current: Credentials | undefined) => Credentials | undefined

export interface CredentialStore {
  /** 'keyring' or the file's path */
  readonly where: string
  read(url: string): Credentials | undefined
  /** Read-modify-write under the store's lock: `change` returns the new record, or undefined to keep it. */
  update(url: string, change: Change): void
  write(credentials: Credentials): void
  /** true when there was something to delete */
  remove(url: string): boolean
  /** Runs `fn` holding the server's cross-process refresh lock. */
  exclusive<T>(url: string, fn: () => Promise<T>): Promise<T>
}

type Lockfile = typeof import('proper-lockfile')
const lockfile = () => require('proper-lockfile') as Lockfile
const lockedOut = (lock: string) =>
  new YokeError('CREDENTIALS_LOCKED', { lock: `${lock}.lock`, ms: LOCK_WAIT_MS })
const pause = new Int32Array(new SharedArrayBuffer(4))

/** `fn` under a short lock on `target` (a read-modify-write: milliseconds), waited for in place. */
function lockedSync<T>(target: string, fn: () => T): T {
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
  const deadline = Date.now() + LOCK_WAIT_MS
  let release: () => void
  for (;;) {
    try {
      release = lockfile().lockSync(target, {
        realpath: false,
        stale: STALE_MS,
        onCompromised: () => {},
      })
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED' || Date.now() > deadline)
        throw (err as NodeJS.ErrnoException).code === 'ELOCKED' ? lockedOut(target) : err
      Atomics.wait(pause, 0, 0, 10) // the holder is another process: blocking here is brief
    }
  }
  try {
    return fn()
  } finally {
    release()
  }
}

/** `fn` under the long per-server lock `target` (a refresh: network requests). */
async function locked<T>(target: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
  const release = await lockfile()
    .lock(target, {
      realpath: false,
      stale: STALE_MS,
      retries: { retries: LOCK_WAIT_MS / 50, factor: 1, minTimeout: 50, maxTimeout: 50 },
      onCompromised: () => {},
    })
    .catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'ELOCKED' ? lockedOut(target) : err
    })
  try {
    return await fn()
  } finally {
    await release().catch(() => {})
  }
}

const refreshLock = (base: string, url: string) =>
  `${base}.${credentialKey(url).split('|')[1]}.refresh`

/** The keyring when it works here, else the file. */
export function openStore(home: string): CredentialStore {
  const file = fileStore(join(home, 'mcp-credentials.json'))
  if (process.env.YOKE_CREDENTIAL_STORE === 'file') return file
  return keyringStore(file) ?? file
}

function keyringStore(file: CredentialStore): CredentialStore | undefined {
  if (process.platform === 'linux' && !process.env.DBUS_SESSION_BUS_ADDRESS) return undefined
  let Entry: typeof import('@napi-rs/keyring').Entry
  try {
    // a native module: loaded when credentials are needed, and a platform without it uses the file
    Entry = (require('@napi-rs/keyring') as typeof import('@napi-rs/keyring')).Entry
    const probe = new Entry(SERVICE, `probe ${randomUUID()}`)
    probe.setPassword('probe')
    const back = probe.getPassword()
    probe.deleteCredential()
    if (back !== 'probe') return undefined
  } catch {
    return undefined
  }
  const entry = (url: string) => new Entry(SERVICE, credentialKey(url))
  const fromKeyring = (url: string) => {
    const text = entry(url).getPassword()
    if (!text) return undefined
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (err) {
      throw unreadable('the keyring', `its entry for ${url} is not JSON`, err)
    }
    return checked(value, 'the keyring', credentialKey(url))
  }
  // a write the keyring refused went to the file: the newer of the two is the record
  // (a file yoke cannot read does not hide a keyring record: it is said only when nothing else is there)
  const read = (url: string) => {
    const a = fromKeyring(url)
    let b: Credentials | undefined
    try {
      b = file.read(url)
    } catch (err) {
      if (!a) throw err
    }
    return a && b ? (a.savedAt >= b.savedAt ? a : b) : (a ?? b)
  }
  const write = (credentials: Credentials) => {
    try {
      entry(credentials.url).setPassword(JSON.stringify(credentials))
    } catch {
      return file.write(credentials)
    }
    try {
      if (file.read(credentials.url)) file.remove(credentials.url)
    } catch {
      // an older record in a file yoke cannot read: the keyring's is the newer one
    }
  }
  const lockBase = file.where
  return {
    where: 'keyring',
    read,
    write,
    update: (url, change) =>
      // a lock of its own: the file's (taken again inside, by a write that falls back to the file,
      // or the removal of an older file record) would wait for itself until CREDENTIALS_LOCKED
      lockedSync(`${lockBase}.keyring`, () => {
        const next = change(read(url))
        if (next) write(next)
      }),
    remove(url) {
      let removed = false
      try {
        removed = entry(url).deleteCredential()
      } catch {
        // nothing there, or the keyring is gone: the file is checked too
      }
      return file.remove(url) || removed
    },
    exclusive: (url, fn) => locked(refreshLock(lockBase, url), fn),
  }
}

/** The file as stored: each server's entry still unchecked (a bad one costs that server only). */
type FileShape = { version: 1; servers: Record<string, unknown> }

/** What writes replace: the file, or the file a link there points to (never the link). */
function writeTarget(file: string): string {
  let link: boolean
  try {
    link = lstatSync(file).isSymbolicLink()
  } catch {
    return file // not there yet: written where it is named
  }
  if (!link) return file
  try {
    return realpathSync(file)
  } catch (err) {
    // a link to nothing: its target is created (the link stays the user's)
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    return resolve(dirname(file), readlinkSync(file))
  }
}

/** The file as stored, checked as outside data (mode, size, kind, JSON, shape); none: empty. */
function loadFile(file: string): FileShape {
  let text: string
  try {
    // stat never opens: a FIFO is refused by readConfigText below without blocking
    const mode = statSync(file).mode & 0o777
    if (mode & 0o077) throw new YokeError('CREDENTIALS_EXPOSED', { file, mode: mode.toString(8) })
    text = readConfigText(file)
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ENOENT' || code === 'CONFIG_NOT_FOUND') return { version: 1, servers: {} }
    if (code === 'CREDENTIALS_EXPOSED') throw err
    if (code === 'CONFIG_TOO_LARGE')
      throw unreadable(file, 'it is over 1 MiB, more than credentials take', err)
    throw unreadable(file, reasonOf(err as Error, file), err)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw unreadable(file, 'not JSON', err)
  }
  const shape = fileSchema.safeParse(value)
  if (!shape.success) throw unreadable(file, issuesOf(shape.error, ''))
  return shape.data as FileShape
}

export function fileStore(file: string): CredentialStore {
  const target = () => writeTarget(file)
  const load = () => loadFile(file)
  const entryOf = (shape: FileShape, key: string): Credentials | undefined =>
    shape.servers[key] === undefined ? undefined : checked(shape.servers[key], file, key)
  const save = (shape: FileShape, to: string) => {
    const temp = `${to}.${randomUUID().slice(0, 8)}.tmp`
    writeFileSync(temp, JSON.stringify(shape, null, 2) + '\n', { mode: 0o600 })
    chmodSync(temp, 0o600) // whatever the umask
    renameSync(temp, to)
  }
  /** A read-modify-write: the lock is on the file writes replace, and the file is read under it. */
  const modify = <T>(fn: (shape: FileShape, save: (shape: FileShape) => void) => T): T => {
    const to = target()
    return lockedSync(to, () => fn(load(), (shape) => save(shape, to)))
  }
  const update = (url: string, change: Change) =>
    modify((shape, save) => {
      const key = credentialKey(url)
      // a record that is not valid is replaced by what a login writes (the change sees none)
      let now: Credentials | undefined
      try {
        now = entryOf(shape, key)
      } catch {
        now = undefined
      }
      const next = change(now)
      if (!next) return
      shape.servers[key] = next
      save(shape)
    })
  return {
    where: file,
    read: (url) => entryOf(load(), credentialKey(url)),
    update,
    write: (credentials) => update(credentials.url, () => credentials),
    remove: (url) =>
      modify((shape, save) => {
        const key = credentialKey(url)
        if (shape.servers[key] === undefined) return false
        delete shape.servers[key]
        save(shape)
        return true
      }),
    exclusive: (url, fn) => locked(refreshLock(target(), url), fn),
  }
}

/** Why the config reader refused the file: "it is not a regular file (a FIFO)". */
function reasonOf(err: Error, file: string): string {
  const message = messageOf(err)
  if (message.startsWith(`cannot read ${file}: `))
    return message.slice(`cannot read ${file}: `.length)
  return message.startsWith(file) ? `it${message.slice(file.length)}` : message
}
