/**
 * One package: a directory with manifest.json (and with SKILL.md beside it, a skill too). Loading
 * reads the manifest, finds and verifies the executable, and reads the prompt files it includes;
 * the package plugin (package.ts) runs what was loaded.
 */
import { createHash } from 'node:crypto'
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { globToRegExp, messageOf } from 'yoke'
import { findExecutable, IntegrityGate, verify } from './executable.ts'
import {
  executableFormat,
  interpreterWarning,
  THIS_HOST,
  type Format,
  type Host,
} from '../process/api.ts'
import { parseManifest, readManifestText, type Manifest, type ManifestProblem } from './manifest.ts'
import { missingBinary, unmetRequirements } from './requirements.ts'

const PROMPT_FILE_BYTES = 64 * 1024
const PROMPT_FILES = 50

export interface Package {
  dir: string
  manifest: Manifest
  warnings: ManifestProblem[]
  /** the verified executable; none for an extras-only package */
  exe?: { path: string; sha256: string; gate: IntegrityGate }
  /** the files of prompts.include, read at load */
  prompts: Array<{ rel: string; text: string }>
  /** SKILL.md's instructions (frontmatter left out), read when the package has spawn_only tools */
  skillBody?: string
  /** changes when the manifest, the executable's bytes or a prompt file change */
  fingerprint: string
}

export interface PackageFailure {
  dir: string
  errors: ManifestProblem[]
}

export interface LoadOptions {
  /** false: the instance runs without network, so a `requires_network` package is refused (default true) */
  network?: boolean
  /** the machine the requirements are checked against (default this one) */
  host?: Host
}

/** Reads and verifies the package in `dir`. */
export async function loadPackage(
  dir: string,
  requireSigned = false,
  options: LoadOptions = {},
): Promise<Package | PackageFailure> {
  const host = options.host ?? THIS_HOST
  const file = join(dir, 'manifest.json')
  const fail = (message: string, at: Partial<ManifestProblem> = {}): PackageFailure => ({
    dir,
    errors: [{ file, line: 1, col: 1, message, ...at }],
  })
  let text: string
  try {
    text = readManifestText(file)
  } catch (err) {
    return fail(`cannot read manifest.json: ${messageOf(err)}`)
  }
  const { manifest, errors, warnings } = parseManifest(text, file)
  if (!manifest) return { dir, errors }
  // octos's require_signed: an unpinned executable, or extras that nothing pins, are refused
  if (requireSigned && !manifest.sha256)
    return fail(
      `${manifest.id} is not signed (no sha256) and requireSigned is on${manifest.tools.length ? '' : ': an extras-only package cannot be signed'}`,
    )
  // what this machine lacks comes first: a missing program explains more than a missing executable
  const unmet = unmetRequirements(manifest, { host, network: options.network ?? true })
  if (unmet.length)
    return {
      dir,
      errors: unmet.map((reason) => ({
        file,
        line: 1,
        col: 1,
        message: `${manifest.id} cannot load on this machine: ${reason}`,
        code: 'PACKAGE_UNSUPPORTED' as const,
      })),
    }
  let exe: Package['exe']
  const executableWarnings: ManifestProblem[] = []
  if (manifest.tools.length) {
    const loaded = await loadExecutable(dir, manifest, host)
    if ('failure' in loaded) return fail(loaded.failure, loaded.at)
    exe = loaded.exe
    if (loaded.warning)
      executableWarnings.push({ file, line: 1, col: 1, message: `${exe.path}: ${loaded.warning}` })
  }
  const promptWarnings: ManifestProblem[] = []
  const prompts = promptFiles({ dir, manifest }, (message) =>
    promptWarnings.push({ file, line: 1, col: 1, message }),
  )
  const skillBody = manifest.tools.some((t) => t.spawnOnly)
    ? readSkillBody(dir, (message) => promptWarnings.push({ file, line: 1, col: 1, message }))
    : undefined
  // prompt files (and SKILL.md, when it is part of the prompt) count as the package: editing one restarts it
  const fingerprint = createHash('sha256')
    .update(text)
    .update('\0')
    .update(exe?.sha256 ?? '')
    .update(JSON.stringify(prompts))
    .update('\0')
    .update(skillBody ?? '')
    .digest('hex')
  return {
    dir,
    manifest,
    warnings: [...warnings, ...executableWarnings, ...promptWarnings],
    exe,
    prompts,
    ...(skillBody !== undefined && { skillBody }),
    fingerprint,
  }
}

/**
 * The package's one executable, found, verified against the manifest's sha256 and checked to be
 * a format this machine runs (every tool runs this one file); why not, else. `warning`: an
 * interpreter its #! names that is not here.
 */
async function loadExecutable(
  dir: string,
  manifest: Manifest,
  host: Host,
): Promise<
  | { exe: NonNullable<Package['exe']>; warning?: string }
  | { failure: string; at?: Partial<ManifestProblem> }
> {
  const found = findExecutable(dir, manifest.name)
  if ('problem' in found) {
    // a package of prebuilt binaries ships without one: say which, and how to get it
    const binary = missingBinary(manifest, dir, host)
    return binary
      ? { failure: binary, at: { code: 'PACKAGE_UNSUPPORTED' } }
      : { failure: found.problem }
  }
  let exe: NonNullable<Package['exe']>
  try {
    const verified = await verify(found.path, manifest.sha256)
    exe = { path: verified.path, sha256: verified.sha256, gate: new IntegrityGate(verified) }
  } catch (err) {
    return { failure: `${manifest.id}: integrity check failed: ${messageOf(err)}` }
  }
  let format: Format
  try {
    format = executableFormat(exe.path)
  } catch (err) {
    return { failure: `${manifest.id}: cannot read the executable ${exe.path}: ${messageOf(err)}` }
  }
  if ('problem' in format)
    return {
      failure: `${manifest.id}: the executable ${exe.path} is refused: it ${format.problem}`,
      at: { code: 'EXECUTABLE_INVALID' },
    }
  const warning = interpreterWarning(format)
  return { exe, ...(warning && { warning }) }
}

/**
 * The instructions of the SKILL.md beside the manifest, without its frontmatter (the first
 * `---` … `---` block); undefined when there is none. A link, a non-file or one over the prompt
 * file cap is left out with a warning.
 */
function readSkillBody(dir: string, warn: (message: string) => void): string | undefined {
  const path = join(dir, 'SKILL.md')
  let text: string
  try {
    const st = lstatSync(path)
    if (st.isSymbolicLink() || !st.isFile()) {
      warn('SKILL.md is not a regular file; the background tools go without its instructions')
      return undefined
    }
    if (st.size > PROMPT_FILE_BYTES) {
      warn(
        `SKILL.md is over ${PROMPT_FILE_BYTES} bytes; the background tools go without its instructions`,
      )
      return undefined
    }
    text = readFileSync(path, 'utf8').replace(/^\uFEFF/, '')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    warn(
      `SKILL.md cannot be read (${messageOf(err)}); the background tools go without its instructions`,
    )
    return undefined
  }
  const front = /^\s*---[^\n]*\r?\n[\s\S]*?\r?\n---[^\n]*(\r?\n|$)/.exec(text)
  return (front ? text.slice(front[0].length) : text).trim()
}

/** `prompts.include` globs, relative to the package; a match outside it (`..`, a symlink out) is refused. */
export function promptFiles(
  pkg: Pick<Package, 'dir' | 'manifest'>,
  warn: (message: string) => void,
): Array<{ rel: string; text: string }> {
  const root = realpathSync(pkg.dir)
  const patterns = pkg.manifest.promptsInclude.filter((p) => {
    const bad = p.startsWith('/') || p.split(/[\\/]/).includes('..')
    if (bad) warn(`prompts.include "${p}" escapes the package; it is ignored`)
    return !bad
  })
  if (!patterns.length) return []
  const globs = patterns.map((p) => globToRegExp(p.replace(/^\.\//, '')))
  const found: Array<{ rel: string; text: string }> = []
  const walk = (dir: string, depth: number) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (found.length >= PROMPT_FILES) return
      const path = join(dir, entry.name)
      const rel = relative(pkg.dir, path).split(sep).join('/')
      if (entry.isDirectory() && depth < 8 && !entry.name.startsWith('.')) walk(path, depth + 1)
      else if ((entry.isFile() || entry.isSymbolicLink()) && globs.some((g) => g.test(rel))) {
        try {
          const real = realpathSync(path)
          const st = statSync(real)
          if (!real.startsWith(root + sep))
            warn(`prompts.include: ${rel} points outside the package; it is ignored`)
          else if (!st.isFile())
            warn(`prompts.include: ${rel} is not a regular file; it is ignored`)
          else if (st.size > PROMPT_FILE_BYTES)
            warn(`prompts.include: ${rel} is over ${PROMPT_FILE_BYTES} bytes; it is ignored`)
          else found.push({ rel, text: readFileSync(real, 'utf8') })
        } catch (err) {
          warn(
            `prompts.include: ${rel} cannot be read (${(err as NodeJS.ErrnoException).code ?? messageOf(err)}); it is ignored`,
          )
        }
      }
    }
  }
  walk(pkg.dir, 0)
  return found
}
