/**
 * What both engines share: versions, JSON copies, argument checks and log ids. An engine stores
 * text, never the caller's object, so both engines answer alike (a later change to the object is
 * not stored; each read is a new object).
 */
import { randomBytes } from 'node:crypto'
import type { StoreRecord } from './api.ts'

/** A new version token: random, so a record deleted and made again never repeats one (no ABA). */
export const newVersion = () => randomBytes(12).toString('base64url')

/** The JSON text of a value; a value JSON cannot carry is the caller's mistake, said at once. */
export function toText(value: unknown, what: string): string {
  const text = JSON.stringify(value)
  if (text === undefined) throw new TypeError(`store: ${what} must be a JSON value`)
  return text
}

export function recordOf<T>(version: string, text: string, ttlMs?: number): StoreRecord<T> {
  const record: StoreRecord<T> = { value: JSON.parse(text) as T, version }
  if (ttlMs !== undefined && ttlMs >= 0) record.ttlMs = ttlMs
  return record
}

export function checkKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 1024)
    throw new TypeError(`store: a key is 1 to 1024 characters (got ${JSON.stringify(key)})`)
  return key
}

/** A positive whole number of ms, or undefined (none). */
export function checkTtl(ttlMs: number | undefined): number | undefined {
  if (ttlMs === undefined || ttlMs === 0) return undefined
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 0)
    throw new TypeError(`store: ttlMs is a whole number of ms (got ${ttlMs})`)
  return ttlMs
}

export function checkCount(name: string, n: number, min: number): number {
  if (!Number.isSafeInteger(n) || n < min)
    throw new TypeError(`store: ${name} is a whole number ≥ ${min} (got ${n})`)
  return n
}

export function checkDeltas(deltas: Record<string, number>): Array<[string, number]> {
  const entries = Object.entries(deltas)
  for (const [field, n] of entries)
    if (!field || typeof n !== 'number' || !Number.isFinite(n))
      throw new TypeError(`store: counter ${JSON.stringify(field)} needs a finite number`)
  return entries
}

const LOG_ID = /^(\d{1,15})-(\d{1,15})$/

/** A log id's parts (`<ms>-<seq>`, as Redis streams write them). */
export function logId(id: string): [number, number] {
  const m = LOG_ID.exec(id)
  if (!m) throw new TypeError(`store: ${JSON.stringify(id)} is not a log id (<ms>-<seq>)`)
  return [Number(m[1]), Number(m[2])]
}

export const DEFAULT_READ = 100
