/**
 * @module config/merge
 * Merges layers, lowest first: objects deep-merge (deepmerge), arrays replace, `null` deletes.
 * Alongside the value it keeps, for every path, the position of the layer that set it last.
 * No layer's value is mutated.
 */
import deepmerge from 'deepmerge'
import { pathKey, type Path, type Position } from './yaml.ts'

export interface LayerValue {
  value: Record<string, unknown>
  positions: Map<string, Position>
  fromEnv: Set<string>
}

export interface Merged {
  value: Record<string, unknown>
  origins: Map<string, Position>
  fromEnv: Set<string>
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)

export function mergeLayers(layers: LayerValue[]): Merged {
  // deepmerge skips keys that objects inherit (constructor, toString, __proto__, …): every key
  // travels through it with a prefix no inherited name has, and comes back without it
  const merged = escapeKeys(
    deepmerge.all(
      layers.map((l) => escapeKeys(withoutExtensions(l.value), '\u0001') as object),
      { arrayMerge: (_target, source) => source, isMergeableObject: isPlainObject },
    ),
    '',
  ) as Record<string, unknown>
  const origins = new Map<string, Position>()
  const fromEnv = new Set<string>()
  for (const layer of layers) record(layer, layer.value, [], origins, fromEnv)
  return { value: dropNulls(merged) as Record<string, unknown>, origins, fromEnv }
}

/** Copies `layer`'s positions for `value` at `path`; a leaf or null replaces everything beneath it. */
function record(
  layer: LayerValue,
  value: unknown,
  path: Path,
  origins: Map<string, Position>,
  fromEnv: Set<string>,
) {
  const key = pathKey(path)
  const pos = layer.positions.get(key)
  if (!isPlainObject(value)) forget(key, origins, fromEnv)
  // a null removes what lower layers set, and says so: who removed a value is its origin too
  if (pos && path.length) origins.set(key, pos)
  if (value === null) return
  if (layer.fromEnv.has(key)) fromEnv.add(key)
  if (isPlainObject(value))
    for (const [k, v] of Object.entries(value)) record(layer, v, [...path, k], origins, fromEnv)
  else if (Array.isArray(value))
    value.forEach((v, i) => record(layer, v, [...path, i], origins, fromEnv))
}

function forget(key: string, origins: Map<string, Position>, fromEnv: Set<string>) {
  const prefix = key + '\u001f'
  for (const map of [origins, fromEnv] as const) {
    for (const k of map.keys()) if (k === key || k.startsWith(prefix)) map.delete(k)
  }
}

/** Top-level x-… keys only hold YAML anchors. */
function withoutExtensions(value: Record<string, unknown>) {
  return Object.fromEntries(Object.entries(value).filter(([k]) => !k.startsWith('x-')))
}

/** Adds `prefix` to every object key (or, with '', removes the one added). */
function escapeKeys(v: unknown, prefix: string): unknown {
  if (Array.isArray(v)) return v.map((item) => escapeKeys(item, prefix))
  if (!isPlainObject(v)) return v
  return Object.fromEntries(
    Object.entries(v).map(([k, item]) => [
      prefix ? prefix + k : k.slice(1),
      escapeKeys(item, prefix),
    ]),
  )
}

function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls)
  if (!isPlainObject(v)) return v
  return Object.fromEntries(
    Object.entries(v).flatMap(([k, item]) => (item === null ? [] : [[k, dropNulls(item)]])),
  )
}
