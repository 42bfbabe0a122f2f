/**
 * @module config/interpolate
 * `${VAR}` and `${VAR:-default}` in string values (keys are never expanded); `$${` writes a
 * literal `${`. A missing variable without a default is an error at its file:line. Paths whose
 * value took text from the environment are returned so printing can redact them.
 */
import { YokeError } from '../errors.ts'
import { locate, pathKey, type Path, type Position } from './yaml.ts'

const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

export interface Interpolated {
  value: unknown
  /** path keys whose value includes text from an environment variable */
  fromEnv: Set<string>
  errors: YokeError[]
}

export function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  positions: Map<string, Position>,
): Interpolated {
  const fromEnv = new Set<string>()
  const errors: YokeError[] = []
  const visit = (v: unknown, path: Path): unknown => {
    if (typeof v === 'string') {
      if (!v.includes('$')) return v
      let tainted = false
      const out = v.replace(
        PATTERN,
        (match, name: string | undefined, fallback: string | undefined) => {
          if (!name) return '${' // the $${ escape
          const set = env[name]
          if (set !== undefined && (set !== '' || fallback === undefined)) {
            tainted = true
            return set
          }
          if (fallback !== undefined) return fallback
          errors.push(new YokeError('CONFIG_ENV_MISSING', { name }, { ...locate(positions, path) }))
          return match
        },
      )
      if (tainted) fromEnv.add(pathKey(path))
      return out
    }
    if (Array.isArray(v)) return v.map((item, i) => visit(item, [...path, i]))
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v).map(([k, item]) => [k, visit(item, [...path, k])]),
      )
    }
    return v
  }
  return { value: visit(value, []), fromEnv, errors }
}
