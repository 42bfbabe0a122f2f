/**
 * @module config/interpolate
 * `${VAR}` and `${VAR:-default}` in string values (keys are never expanded); `$${` writes a
 * literal `${`. A missing variable without a default is reported with its path and file:line (and
 * left as written); the caller decides what it means: a config error, or one instance that waits.
 * Paths whose value took text from the environment are returned so printing can redact them.
 */
import { YokeError } from '../errors.ts'
import { locate, pathKey, type Path, type Position } from './yaml.ts'

const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g

/** One `${NAME}` with no value and no default: where it is written. */
export interface MissingVar {
  name: string
  path: Path
  at?: Position
}

export interface Interpolated {
  value: unknown
  /** path keys whose value includes text from an environment variable */
  fromEnv: Set<string>
  /** CONFIG_ENV_MISSING for each entry of `missing` */
  errors: YokeError[]
  missing: MissingVar[]
}

export function interpolate(
  value: unknown,
  env: NodeJS.ProcessEnv,
  positions: Map<string, Position>,
): Interpolated {
  const fromEnv = new Set<string>()
  const errors: YokeError[] = []
  const missing: MissingVar[] = []
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
          const at = locate(positions, path)
          missing.push({ name, path, at })
          errors.push(new YokeError('CONFIG_ENV_MISSING', { name }, { ...at }))
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
  return { value: visit(value, []), fromEnv, errors, missing }
}
