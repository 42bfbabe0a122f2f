/**
 * @module config/explain
 * The effective config as `yoke config print --explain --json` shows it, and as the `project`
 * service gives it to plugins (a web console): values that came from the environment redacted,
 * every value's origin as file:line:col, and the layers lowest first.
 */
import type { ResolvedConfig } from './resolve.ts'
import { pathKey } from './yaml.ts'

export const REDACTED = '«from env, redacted»'

export interface ExplainedConfig {
  preset: string
  layers: Array<{ kind: string; file: string }>
  /** the merged config, with what came from the environment redacted */
  value: unknown
  /** dotted path → `file:line:col` (or the file) that set it */
  origins: Record<string, string>
}

/** `where` writes a file (default: as it is). */
export function explainConfig(
  resolved: ResolvedConfig,
  where: (file: string) => string = (file) => file,
): ExplainedConfig {
  const { value, origins, fromEnv } = resolved.merged
  return {
    preset: resolved.stack.preset,
    layers: resolved.stack.layers.map((l) => ({ kind: l.kind, file: l.file })),
    value: redacted(value, fromEnv),
    origins: Object.fromEntries(
      [...origins].map(([key, pos]) => [
        key.split('\u001f').join('.'),
        pos.line ? `${where(pos.file)}:${pos.line}:${pos.col}` : where(pos.file),
      ]),
    ),
  }
}

/** The value with each leaf that came from the environment replaced by REDACTED. */
export function redacted(value: unknown, fromEnv: Set<string>, path: string[] = []): unknown {
  if (fromEnv.has(pathKey(path))) return REDACTED
  if (Array.isArray(value)) return value.map((v, i) => redacted(v, fromEnv, [...path, String(i)]))
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, redacted(v, fromEnv, [...path, k])]),
    )
  return value
}
