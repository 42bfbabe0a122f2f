/**
 * The environment a plugin process gets: an allowlist, like an MCP server's. A tool receives the
 * runtime essentials (PATH, HOME, the locale, …, and the host's `OCTOS_*` / `YOKE_*`) and the
 * names its `env` lists, nothing else. octos's blocked variables (reference/octos.md §2, §3) never
 * pass, not even listed; secret-looking names, values that are URLs with credentials in them and
 * the shell hijack variables (PS4, SHELLOPTS, …) pass only when listed. octos's default mode
 * (the whole host environment minus secrets, when `env` is empty) is gone: its secret test missed
 * PGPASSWORD, MYSQL_PWD, DATABASE_URL's password and NPM_CONFIG__AUTH. Pure functions: callers
 * pass `process.env` or a fixture.
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

/**
 * Variables that make a shell script (or another runtime) run code they name; unlike BLOCKED_ENV
 * a tool may need one (a Python tool its PYTHONHOME), so they pass when its `env` lists them.
 * `BASH_FUNC_*` (exported bash functions, which replace commands in every bash script) is a prefix.
 */
export const HIJACK_ENV: ReadonlySet<string> = new Set([
  'PS4',
  'PS1',
  'PS2',
  'PROMPT_COMMAND',
  'SHELLOPTS',
  'BASHOPTS',
  'BASH_XTRACEFD',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'GCONV_PATH',
  'PERL5LIB',
  'PERLLIB',
  'PERL5DB',
  'PYTHONHOME',
  'PYTHONWARNINGS',
  'PYTHONBREAKPOINT',
  'NODE_PATH',
  'LUA_INIT',
  'LUA_PATH',
  'LUA_CPATH',
  '_JAVA_OPTIONS',
  'JDK_JAVA_OPTIONS',
  'CLASSPATH',
  'GIT_SSH_COMMAND',
  'GIT_EXEC_PATH',
])

/** Contained anywhere in a name (ASCII case-insensitive), these make it secret-looking. */
const SECRET_PARTS = [
  'KEY',
  'TOKEN',
  'SECRET',
  'PASSWORD',
  'PASSWD',
  'PWD',
  'AUTH',
  'CREDENTIAL',
  'PASSCODE',
  'PASSPHRASE',
  'BEARER',
  'COOKIE',
]
/** Secret as whole words only: PAT (a personal access token) is also the start of PATH. */
const SECRET_WORDS = new Set(['PAT'])
/** The working-directory variables are not passwords, whatever their spelling suggests. */
const NOT_SECRET = new Set(['PWD', 'OLDPWD'])
const ESSENTIALS = new Set([
  'PATH',
  'HOME',
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
 * Secret-looking names: any that contains KEY, TOKEN, SECRET, PASSWORD, PASSWD, PWD, AUTH,
 * CREDENTIAL, PASSCODE, PASSPHRASE, BEARER or COOKIE (ASCII case-insensitive, anywhere: `APITOKEN`,
 * `PGPASSWORD`, `MYSQL_PWD`, `NPM_CONFIG__AUTH`), or has PAT as a whole word (`GITHUB_PAT`, not
 * `PATH`). `PWD` and `OLDPWD` (the working directories) are not secret. Substrings err on the
 * safe side: `KEYBOARD` and `TOKENIZERS_PARALLELISM` look secret too, and pass when listed.
 */
export function isSecretName(name: string): boolean {
  const n = upper(name)
  if (NOT_SECRET.has(n)) return false
  if (SECRET_PARTS.some((part) => n.includes(part))) return true
  return n.split(/[^A-Z0-9]+/).some((word) => SECRET_WORDS.has(word))
}

/** A shell hijack variable (HIJACK_ENV, or an exported bash function `BASH_FUNC_…`). */
export function isHijackEnv(name: string): boolean {
  const n = upper(name)
  return HIJACK_ENV.has(n) || n.startsWith('BASH_FUNC_')
}

/**
 * A value that carries a credential whatever its name: a URL with userinfo
 * (`postgres://app:hunter2@db/app`, `https://ghp_x@github.com/…`: a user name alone is often a
 * token).
 */
export function isSecretValue(value: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#\s]*@/.test(value)
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
 * What every tool gets without listing it: locale, paths, the terminal, and the host's own
 * `OCTOS_*` / `YOKE_*` variables (so `YOKE_WORK_DIR` reaches the tool). Case-insensitive, so
 * Windows's `Path` counts as PATH. Not PWD: the caller sets it to the process's own directory.
 */
export function isEssential(name: string): boolean {
  const n = upper(name)
  return ESSENTIALS.has(n) || n.startsWith('LC_') || n.startsWith('OCTOS_') || n.startsWith('YOKE_')
}

export interface ToolEnvOptions {
  /** the names the tool's `env` lists: they pass whatever they look like (except BLOCKED_ENV) */
  allow: readonly string[]
  /** the variables to choose from (default `process.env`) */
  from?: NodeJS.ProcessEnv
  /** variables the host sets (e.g. YOKE_WORK_DIR): the same gate, and they override `from` */
  extra?: Record<string, string>
  /** the process's working directory: becomes PWD (the host's own PWD is never passed on) */
  cwd?: string
}

/**
 * The environment a tool process gets: the essentials and the listed names, no blocked variable
 * ever, and no secret-looking name, credential-carrying value or hijack variable unless listed.
 *
 * @example
 * toolEnv({ allow: [], from: { PATH: '/bin', GITHUB_TOKEN: 't', A: 'x' } })              // { PATH: '/bin' }
 * toolEnv({ allow: ['GITHUB_TOKEN'], from: { PATH: '/bin', GITHUB_TOKEN: 't', A: 'x' } }) // { PATH, GITHUB_TOKEN }
 */
export function toolEnv({
  allow,
  from = process.env,
  extra = {},
  cwd,
}: ToolEnvOptions): Record<string, string> {
  const listed = new Set(allow.map(upper))
  const passes = (name: string, value: string) => {
    if (isBlockedEnv(name)) return false // whatever the allowlist says
    if (listed.has(upper(name))) return true
    // OCTOS_API_KEY is not passed on for being OCTOS_*, nor YOKE_DB=postgres://u:pw@h for being
    // YOKE_*; a value that starts "()" is a bash function definition (what shellshock parsed)
    return (
      isEssential(name) &&
      !isSecretName(name) &&
      !isHijackEnv(name) &&
      !isSecretValue(value) &&
      !value.startsWith('()')
    )
  }
  const out = new Map<string, string>()
  for (const [name, value] of Object.entries(from))
    if (value !== undefined && passes(name, value)) out.set(name, value)
  for (const [name, value] of Object.entries(extra)) if (passes(name, value)) out.set(name, value)
  if (cwd !== undefined) out.set('PWD', cwd)
  return Object.fromEntries(out) // own properties only: a variable named __proto__ cannot touch the prototype
}
