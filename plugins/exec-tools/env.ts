/**
 * The environment a plugin process gets, after octos's sandbox rules (reference/octos.md §2, §3):
 * variables that make a process load foreign code never pass; secret-looking variables pass only
 * when a tool's `env` lists them; a non-empty `env` switches to strict mode (the listed names plus
 * the runtime essentials). Pure functions: callers pass `process.env` or a fixture.
 *
 * Names are compared in ASCII upper case (Rust's `to_ascii_uppercase`), not `toUpperCase()`:
 * Unicode case mapping would let `ſ` (long s) match `S`, so an allowlist entry could select a
 * variable it does not name.
 */

/** The 18 variables that make a process load foreign code (octos `BLOCKED_ENV_VARS`), uppercase. */
export const BLOCKED_ENV: ReadonlySet<string> = new Set([
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
  'LD_AUDIT',
  'DYLD_INSERT_LIBRARIES',
  'DYLD_LIBRARY_PATH',
  'DYLD_FRAMEWORK_PATH',
  'DYLD_FALLBACK_LIBRARY_PATH',
  'DYLD_VERSIONED_LIBRARY_PATH',
  'NODE_OPTIONS',
  'PYTHONSTARTUP',
  'PYTHONPATH',
  'PERL5OPT',
  'RUBYOPT',
  'RUBYLIB',
  'JAVA_TOOL_OPTIONS',
  'BASH_ENV',
  'ENV',
  'ZDOTDIR',
])

const SECRET_TOKENS = new Set([
  'TOKEN',
  'SECRET',
  'PASSWORD',
  'PASSCODE',
  'PASSPHRASE',
  'CREDENTIAL',
  'CREDENTIALS',
  'PAT',
  'BEARER',
  'AUTHORIZATION',
  'COOKIE',
])
const SECRET_PARTS = ['APIKEY', 'API_KEY', 'ACCESSKEY', 'SECRETKEY', 'PRIVATEKEY']
const ESSENTIALS = new Set([
  'PATH',
  'HOME',
  'PWD',
  'USER',
  'LOGNAME',
  'SHELL',
  'TMPDIR',
  'TMP',
  'TEMP',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'LC_MESSAGES',
  'LC_NUMERIC',
  'LC_TIME',
  'LC_COLLATE',
  'LC_MONETARY',
  'TZ',
  'TERM',
])

const upper = (name: string) => name.replace(/[a-z]+/g, (s) => s.toUpperCase())

/** `isBlockedEnv('ld_preload') === true`: the loader reads names case-insensitively on some systems. */
export function isBlockedEnv(name: string): boolean {
  return BLOCKED_ENV.has(upper(name))
}

/**
 * octos's secret-name rule: `GITHUB_PAT`, `private_key`, `MY_KEY` are secret; `TOKENIZERS_PARALLELISM`,
 * `OPENAI_BASE_URL`, `MONKEY` are not (tokens are whole words, so TOKENIZERS is not TOKEN).
 */
export function isSecretName(name: string): boolean {
  const n = upper(name)
  if (n.split(/[^A-Z0-9]+/).some((token) => SECRET_TOKENS.has(token))) return true
  if (SECRET_PARTS.some((part) => n.includes(part))) return true
  return n === 'KEY' || n.endsWith('_KEY') || n.includes('_KEY_')
}

/** Why an `env` allowlist entry is invalid, in octos's words and order; undefined when it is fine. */
export function envNameProblem(name: string): string | undefined {
  if (name === '') return 'empty name'
  if (name.includes('=')) return "name must not contain '='"
  if (/[\s\p{Cc}]/u.test(name)) return 'name must not contain whitespace or control characters'
  if (/^[0-9]/.test(name)) return 'name must not start with a digit'
  if (!/^[A-Za-z0-9_]+$/.test(name)) return 'name must use only [A-Za-z0-9_]'
  if (isBlockedEnv(name)) return 'name is a known process-hijack env var'
  return undefined
}

/**
 * What strict mode keeps without being listed: locale, paths, the terminal, and the host's own
 * `OCTOS_*` / `YOKE_*` variables (so `YOKE_WORK_DIR` reaches the tool). Case-insensitive, so
 * Windows's `Path` counts as PATH.
 */
export function isEssential(name: string): boolean {
  const n = upper(name)
  return ESSENTIALS.has(n) || n.startsWith('LC_') || n.startsWith('OCTOS_') || n.startsWith('YOKE_')
}

export interface ToolEnvOptions {
  /** the tool's `env` list: empty → default mode, non-empty → strict mode */
  allow: readonly string[]
  /** the variables to choose from (default `process.env`) */
  from?: NodeJS.ProcessEnv
  /** variables the host sets (e.g. YOKE_WORK_DIR): the same gate, and they override `from` */
  extra?: Record<string, string>
}

/**
 * The environment a tool process gets.
 *
 * @example
 * toolEnv({ allow: [], from: { PATH: '/bin', GITHUB_TOKEN: 't' } })              // { PATH: '/bin' }
 * toolEnv({ allow: ['GITHUB_TOKEN'], from: { PATH: '/bin', GITHUB_TOKEN: 't', A: 'x' } }) // { PATH, GITHUB_TOKEN }
 */
export function toolEnv({
  allow,
  from = process.env,
  extra = {},
}: ToolEnvOptions): Record<string, string> {
  const listed = new Set(allow.map(upper))
  const strict = listed.size > 0
  const passes = (name: string) => {
    if (isBlockedEnv(name)) return false // whatever the allowlist says
    if (listed.has(upper(name))) return true
    // a secret passes only when listed: OCTOS_API_KEY is not "essential" for being OCTOS_*
    return !isSecretName(name) && (!strict || isEssential(name))
  }
  const out = new Map<string, string>()
  for (const [name, value] of Object.entries(from))
    if (value !== undefined && passes(name)) out.set(name, value)
  for (const [name, value] of Object.entries(extra)) if (passes(name)) out.set(name, value)
  return Object.fromEntries(out) // own properties only: a variable named __proto__ cannot touch the prototype
}
