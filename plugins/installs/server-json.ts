/**
 * An MCP Registry `server.json` (schema 2025-12-11: `packages[]` with `registryType`,
 * `identifier`, `version`, `runtimeHint`, `transport`, `runtimeArguments`, `packageArguments`,
 * `environmentVariables`; `remotes[]` with `type`, `url`, `headers`) as what yoke runs: one MCP
 * server, written as a Claude Code plugin folder (`.claude-plugin/plugin.json`, `.mcp.json`,
 * and the `server.json` itself), so the claude-plugins plugin starts it as an mcp-client
 * instance, named as Claude Code names a plugin's server.
 *
 * Which way it runs, the first that fits: a stdio package whose runtime is on PATH (npm: npx,
 * pypi: uvx, oci: docker, nuget: dnx), else a remote (Streamable HTTP or SSE), else a known
 * package whose runtime is missing, with a warning that says it cannot run here until that
 * runtime is installed. An `mcpb` bundle, a package that serves HTTP itself, and a package type
 * yoke does not know are never chosen, each said why; with nothing left the install is refused.
 *
 * Nothing here runs a shell, and the values go to the runtime as separate arguments; still a
 * value that reads as a shell command (`$(…)`, backticks, `;`, `&&`, `|`, a newline), an
 * identifier or version that reads as an option, a runtime argument that makes the runtime run
 * something else (`npx -c`, `uvx --from`, `docker --privileged`), or an environment variable that
 * hijacks a process (`NODE_OPTIONS`, `LD_PRELOAD`) refuses the install, naming the source and the
 * field: a server.json that carries one is not a description of a server.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { YokeError } from 'yoke/cli'
import { envNameProblem } from '../process/api.ts'

/** The registry yoke asks by default (`YOKE_MCP_REGISTRY` or `--registry` points elsewhere). */
export const DEFAULT_REGISTRY = 'https://registry.modelcontextprotocol.io'

type Doc = Record<string, unknown>

export interface ServerPlan {
  /** the server's key in `.mcp.json` */
  key: string
  /** the `.mcp.json` entry: command/args/env, or type/url/headers */
  entry: Record<string, unknown>
  /** what was chosen, said in the add's output (`npm @acme/server@1.2.0 through npx`) */
  chosen: string
  warnings: string[]
  name: string
  version?: string
  description?: string
}

const RUNTIMES: Record<string, string> = { npm: 'npx', pypi: 'uvx', oci: 'docker', nuget: 'dnx' }
const KNOWN_HINTS = new Set(['npx', 'uvx', 'docker', 'dnx', 'bunx', 'pnpm', 'yarn', 'podman'])
const IDENTIFIER: Record<string, RegExp> = {
  npm: /^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i,
  pypi: /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
  nuget: /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
  oci: /^[a-z0-9][a-z0-9._-]*(:[0-9]+)?(\/[a-z0-9][a-z0-9._-]*)*(:[\w][\w.-]{0,127})?(@sha256:[0-9a-f]{64})?$/,
}
const VERSION = /^[\w][\w.+-]{0,127}$/
/** what a shell would read as a command: yoke runs none, a server.json that carries one is refused */
const SHELLISH = /\$\(|`|;|&&|\|\||\||[\r\n\0]/
/** runtime arguments that make the runtime run something other than the package */
const RUNTIME_DENY: Record<string, RegExp> = {
  npm: /^(-c|--call|--shell|--script-shell|--node-options|--userconfig|--prefix)(=|$)/,
  pypi: /^(--from|--with|--with-requirements|--with-editable|--python|-p)(=|$)/,
  oci: /^(--privileged|--cap-add|--security-opt|--pid|--ipc|--uts|--userns|--cgroupns|--device|--entrypoint|--network=host|--net=host)(=|$)/,
  nuget: /^(--source|--add-source|--configfile)(=|$)/,
}

const isObject = (v: unknown): v is Doc => !!v && typeof v === 'object' && !Array.isArray(v)
const str = (v: unknown) => (typeof v === 'string' && v ? v : undefined)
const list = (v: unknown): Doc[] => (Array.isArray(v) ? v.filter(isObject) : [])

/** On PATH, as a spawn would find it. */
function onPath(command: string): boolean {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .some((dir) => dir && existsSync(join(dir, command)))
}

/**
 * A `{name}` in a value becomes `${NAME}`, read from the environment at load: with its default
 * after `:-`, or empty when it is optional (a literal `${NAME}` would reach the server as a value).
 */
function withVariables(value: string, variables: unknown): string {
  return value.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = isObject(variables) && isObject(variables[name]) ? variables[name] : {}
    const fallback = str(v.default) ?? str(v.value) ?? (v.isRequired === true ? undefined : '')
    const env = name.toUpperCase()
    return fallback !== undefined ? `\${${env}:-${fallback}}` : `\${${env}}`
  })
}

/** `${VERSION}` and the like: a template its publisher fills in when publishing, not a server.json. */
const PLACEHOLDER = /\$\{[A-Za-z_]+\}/

class Checker {
  constructor(readonly label: string) {}
  refuse(field: string, why: string): never {
    throw new YokeError('INSTALL_REFUSED', {
      reason: `${this.label}: ${field} ${why}: refused (a server.json describes a server, it carries no commands)`,
    })
  }
  value(field: string, value: string): string {
    if (value.length > 4096) this.refuse(field, 'is longer than 4096 characters')
    if (SHELLISH.test(value))
      this.refuse(field, `reads as a shell command (${JSON.stringify(value.slice(0, 80))})`)
    return value
  }
}

/** The arguments of a list, in order: named ones as `--name value`, positional ones as values. */
function argumentsOf(items: Doc[], field: string, c: Checker, deny?: RegExp): string[] {
  const out: string[] = []
  items.forEach((arg, i) => {
    const at = `${field}[${i}]`
    const raw = str(arg.value) ?? (arg.isRequired ? str(arg.default) : undefined)
    const value = raw === undefined ? undefined : withVariables(c.value(at, raw), arg.variables)
    if (arg.type === 'named') {
      const name = str(arg.name)
      if (!name || !/^-{1,2}[A-Za-z0-9][\w.-]*$/.test(name))
        c.refuse(`${at}.name`, `${JSON.stringify(name)} is not an option name (-x, --name)`)
      if (deny?.test(name)) c.refuse(at, `(${name}) makes the runtime run something else`)
      if (value === undefined && !arg.isRequired && arg.default !== undefined) return
      out.push(name, ...(value !== undefined ? [value] : []))
    } else if (arg.type === 'positional') {
      if (value === undefined) return // optional, with no value: left out
      if (deny?.test(value)) c.refuse(at, `(${value}) makes the runtime run something else`)
      out.push(value)
    } else c.refuse(`${at}.type`, `${JSON.stringify(arg.type)} is not positional or named`)
  })
  return out
}

function environmentOf(items: Doc[], field: string, c: Checker): Record<string, string> {
  const env: Record<string, string> = {}
  items.forEach((v, i) => {
    const name = str(v.name) ?? ''
    const problem = envNameProblem(name)
    if (problem) c.refuse(`${field}[${i}].name`, `${JSON.stringify(name)}: ${problem}`)
    const value = str(v.value)
    const fallback = str(v.default) ?? (v.isRequired === true ? undefined : '')
    env[name] =
      value !== undefined
        ? withVariables(c.value(`${field}[${i}].value`, value), v.variables)
        : fallback !== undefined
          ? `\${${name}:-${c.value(`${field}[${i}].default`, fallback)}}`
          : `\${${name}}`
  })
  return env
}

/** One package as a stdio `.mcp.json` entry, or why it is not one. */
function packageEntry(
  pkg: Doc,
  i: number,
  c: Checker,
): { entry: Record<string, unknown>; runtime: string; chosen: string } | { skip: string } {
  const at = `packages[${i}]`
  const type = str(pkg.registryType) ?? str(pkg.registry_name) ?? ''
  const identifier = str(pkg.identifier) ?? str(pkg.name) ?? ''
  if (type === 'mcpb')
    return { skip: `${at} is an mcpb bundle (${identifier}): yoke does not unpack bundles` }
  if (!RUNTIMES[type])
    return {
      skip: `${at} has registryType ${JSON.stringify(type)}, which yoke does not know (npm, pypi, oci, nuget)`,
    }
  const transport = isObject(pkg.transport) ? str(pkg.transport.type) : 'stdio'
  if (transport && transport !== 'stdio')
    return {
      skip: `${at} (${type} ${identifier}) serves ${transport} itself at ${str((pkg.transport as Doc).url) ?? 'a URL'}: start it yourself and add that URL`,
    }
  if (!IDENTIFIER[type]!.test(identifier))
    c.refuse(`${at}.identifier`, `${JSON.stringify(identifier)} is not a ${type} package name`)
  const version = str(pkg.version)
  if (version !== undefined && !VERSION.test(version))
    c.refuse(`${at}.version`, `${JSON.stringify(version)} is not a version`)
  const hint = str(pkg.runtimeHint)
  if (hint !== undefined && !KNOWN_HINTS.has(hint))
    c.refuse(
      `${at}.runtimeHint`,
      `${JSON.stringify(hint)} is not a runtime yoke runs packages with`,
    )
  const runtime = hint ?? RUNTIMES[type]!
  const runtimeArgs = argumentsOf(
    list(pkg.runtimeArguments),
    `${at}.runtimeArguments`,
    c,
    RUNTIME_DENY[type],
  )
  const packageArgs = argumentsOf(list(pkg.packageArguments), `${at}.packageArguments`, c)
  const env = environmentOf(list(pkg.environmentVariables), `${at}.environmentVariables`, c)
  const pinned =
    type === 'npm' || type === 'nuget'
      ? `${identifier}${version ? `@${version}` : ''}`
      : type === 'pypi'
        ? `${identifier}${version ? `==${version}` : ''}`
        : identifier.includes(':') || identifier.includes('@') || !version
          ? identifier
          : `${identifier}:${version}`
  const args =
    type === 'npm'
      ? [...(runtimeArgs.length ? runtimeArgs : ['-y']), pinned, ...packageArgs]
      : type === 'pypi'
        ? [...runtimeArgs, pinned, ...packageArgs]
        : type === 'nuget'
          ? [...runtimeArgs, pinned, '--yes', ...(packageArgs.length ? ['--', ...packageArgs] : [])]
          : [
              'run',
              '-i',
              '--rm',
              ...runtimeArgs,
              ...Object.keys(env).flatMap((name) => ['-e', name]),
              pinned,
              ...packageArgs,
            ]
  return {
    entry: { command: runtime, args, ...(Object.keys(env).length && { env }) },
    runtime,
    chosen: `${type} ${pinned} through ${runtime}`,
  }
}

function remoteEntry(
  remote: Doc,
  i: number,
  c: Checker,
): Record<string, unknown> | { skip: string } {
  const at = `remotes[${i}]`
  const type = str(remote.type)
  const url = str(remote.url)
  if (type !== 'streamable-http' && type !== 'sse')
    return { skip: `${at} has type ${JSON.stringify(type)} (streamable-http or sse are run)` }
  if (!url || !/^(https:\/\/|http:\/\/(localhost|127\.0\.0\.1|\[::1\])[:/])/i.test(url))
    c.refuse(`${at}.url`, `${JSON.stringify(url)} is not an https URL (nor http to this machine)`)
  const headers: Record<string, string> = {}
  list(remote.headers).forEach((h, j) => {
    const name = str(h.name) ?? ''
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name))
      c.refuse(`${at}.headers[${j}].name`, `${JSON.stringify(name)} is not a header name`)
    const value = str(h.value)
    headers[name] =
      value !== undefined
        ? withVariables(c.value(`${at}.headers[${j}].value`, value), h.variables)
        : `\${${name.toUpperCase().replace(/[^A-Z0-9_]/g, '_')}}`
  })
  return {
    type: type === 'sse' ? 'sse' : 'http',
    url: withVariables(c.value(`${at}.url`, url), remote.variables),
    ...(Object.keys(headers).length && { headers }),
  }
}

/** What yoke runs for a server.json, or INSTALL_REFUSED naming the source and why. */
export function planServer(doc: unknown, label: string, has = onPath): ServerPlan {
  const c = new Checker(label)
  if (!isObject(doc) || typeof doc.name !== 'string')
    throw new YokeError('INSTALL_FAILED', {
      reason: `${label} is not a server.json: it needs "name" and "packages" or "remotes"`,
    })
  const name = doc.name
  if (!/^[A-Za-z0-9.-]+\/[A-Za-z0-9._-]+$/.test(name))
    c.refuse(
      'name',
      `${JSON.stringify(name.slice(0, 100))} is not a registry name (reverse-DNS/name)`,
    )
  const version =
    str(doc.version) ?? str(isObject(doc.version_detail) ? doc.version_detail.version : undefined)
  if (version && PLACEHOLDER.test(version))
    throw new YokeError('INSTALL_FAILED', {
      reason: `${label}: version ${JSON.stringify(version)} is a placeholder its publisher fills in when publishing: install the registry's copy (mcp:${name})`,
    })
  if (version !== undefined && !VERSION.test(version))
    c.refuse('version', `${JSON.stringify(version)} is not a version`)
  const key = name
    .split('/')
    .pop()!
    .replace(/[^A-Za-z0-9_-]/g, '-')
    .slice(0, 32)
  const skipped: string[] = []
  const missing: Array<{ entry: Record<string, unknown>; chosen: string; runtime: string }> = []
  const base = {
    key,
    name,
    ...(version && { version }),
    ...(str(doc.description) && { description: str(doc.description)! }),
  }
  const packages = list(doc.packages)
  for (const [i, pkg] of packages.entries()) {
    const planned = packageEntry(pkg, i, c)
    if ('skip' in planned) skipped.push(planned.skip)
    else if (has(planned.runtime))
      return { ...base, entry: planned.entry, chosen: planned.chosen, warnings: skipped }
    else missing.push(planned)
  }
  for (const [i, remote] of list(doc.remotes).entries()) {
    const planned = remoteEntry(remote, i, c)
    if ('skip' in planned) skipped.push(planned.skip as string)
    else
      return {
        ...base,
        entry: planned,
        chosen: `remote ${planned.type} ${String(planned.url)}`,
        warnings: [
          ...skipped,
          ...missing.map((m) => `${m.chosen}: ${m.runtime} is not on PATH here`),
        ],
      }
  }
  const first = missing[0]
  if (first)
    return {
      ...base,
      entry: first.entry,
      chosen: first.chosen,
      warnings: [
        ...skipped,
        `it cannot run here: ${first.runtime} is not on PATH (${first.chosen}); it starts once ${first.runtime} is installed`,
      ],
    }
  throw new YokeError('INSTALL_REFUSED', {
    reason: `${label} (${name}) has nothing yoke can run: ${skipped.join('; ') || 'no packages and no remotes'}`,
  })
}

/**
 * Writes the plan as a Claude Code plugin folder in `dir`: plugin.json (name, version,
 * description), `.mcp.json` with the one server, and the server.json as it was read.
 */
export function writeServer(
  dir: string,
  plan: ServerPlan,
  text: string,
  installName: string,
): void {
  mkdirSync(join(dir, '.claude-plugin'), { recursive: true })
  const manifest = {
    name: installName,
    ...(plan.version && { version: plan.version }),
    description: plan.description ?? `MCP server ${plan.name}`,
  }
  writeFileSync(
    join(dir, '.claude-plugin', 'plugin.json'),
    JSON.stringify(manifest, null, 2) + '\n',
  )
  writeFileSync(
    join(dir, '.mcp.json'),
    JSON.stringify({ mcpServers: { [plan.key]: plan.entry } }, null, 2) + '\n',
  )
  writeFileSync(join(dir, 'server.json'), text.endsWith('\n') ? text : text + '\n')
}

/** The install name a registry name suggests: its last part (`io.github.acme/weather` → weather). */
export const serverInstallName = (name: string) =>
  name
    .split('/')
    .pop()!
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64) || 'server'
