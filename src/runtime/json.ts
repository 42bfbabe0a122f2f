/**
 * @module runtime/json
 * What crosses the pipeline is JSON data, copied once and frozen: arguments on the way in, results
 * on the way out. A body or a tap keeps its own objects; nobody can change what others see.
 */

/**
 * A frozen copy of `value` as JSON would carry it (undefined and functions dropped, toJSON
 * honoured), or undefined when it is not JSON data (a cycle, a BigInt). Taps and the body see it.
 */
export function cloneArgs(value: unknown): Record<string, unknown> | undefined {
  try {
    return copyJson(value ?? {}, 0) as Record<string, unknown>
  } catch {
    return undefined
  }
}

/** A deep copy of JSON data, frozen as it is built (one walk); throws on what is not JSON data. */
export function copyJson(v: unknown, depth: number): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v
  if (typeof v === 'number') return Number.isFinite(v) ? v : null
  if (typeof v !== 'object' || depth > 64) throw new Error('not JSON data')
  if (Array.isArray(v))
    return Object.freeze(
      v.map((item) =>
        item === undefined || typeof item === 'function' ? null : copyJson(item, depth + 1),
      ),
    )
  const o = v as Record<string, unknown> & { toJSON?: () => unknown }
  if (typeof o.toJSON === 'function') return copyJson(o.toJSON(), depth + 1)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(o)) {
    const item = o[key]
    if (item === undefined || typeof item === 'function' || typeof item === 'symbol') continue
    if (key === '__proto__')
      Object.defineProperty(out, key, {
        value: copyJson(item, depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      })
    else out[key] = copyJson(item, depth + 1)
  }
  return Object.freeze(out)
}

export function freezeDeep<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value
  Object.freeze(value)
  if (Array.isArray(value)) for (const item of value) freezeDeep(item)
  else for (const key in value) freezeDeep((value as Record<string, unknown>)[key]) // plain data: no inherited keys
  return value
}

/**
 * How deep `value` nests (a scalar 0, `{}` 1), counted up to `cap` + 1 (a cycle counts as deeper):
 * outside data is measured before any unbounded walk (stringify, a parser, a copy) sees it. The
 * recursion goes no deeper than `cap` + 1 levels, and allocates nothing.
 */
export function depthOf(value: unknown, cap = 64): number {
  return depthWithin(value, cap + 1)
}

/** min(the depth of `node`, `limit`) for a limit ≥ 1. */
function depthWithin(node: unknown, limit: number): number {
  if (typeof node !== 'object' || node === null) return 0
  if (limit === 1) return 1
  let max = 0
  for (const key in node) {
    if (!Object.hasOwn(node, key)) continue // an array's indices are its own keys too
    max = Math.max(max, depthWithin((node as Record<string, unknown>)[key], limit - 1))
    if (max === limit - 1) break
  }
  return max + 1
}

/** True when `value` nests deeper than `limit` levels (depthOf). */
export const nestsDeeper = (value: unknown, limit: number) => depthOf(value, limit) > limit
