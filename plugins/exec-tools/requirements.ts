/**
 * What a package needs from this machine, checked at load so a package that cannot work here says
 * why instead of failing on its first call: octos-plugin's `check_requirements` (`requires.bins`
 * on PATH, `requires.env` set, `requires.os` this system, with `darwin` and `macos` one name),
 * `requires_network` against an instance that runs without network, and a `binaries` map (the
 * prebuilt executables `yoke add` downloads) that has nothing for this machine or was never
 * installed.
 */
import { existsSync, statSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import type { Host } from '../process/api.ts'
import type { Manifest } from './manifest.ts'

/** How the names a manifest may use for this machine's system and CPU are spelled. */
const SYSTEM_NAMES: Partial<Record<NodeJS.Platform, string[]>> = {
  linux: ['linux'],
  darwin: ['darwin', 'macos', 'osx', 'apple'],
  win32: ['windows', 'win32', 'win'],
  freebsd: ['freebsd'],
  openbsd: ['openbsd'],
  netbsd: ['netbsd'],
  android: ['android'],
}
const CPU_NAMES: Record<string, string[]> = {
  x64: ['x86_64', 'x64', 'amd64'],
  arm64: ['aarch64', 'arm64'],
  ia32: ['x86', 'i686', 'i386', 'ia32'],
  arm: ['arm', 'armv7'],
  riscv64: ['riscv64'],
  ppc64: ['powerpc64', 'ppc64', 'ppc64le'],
  s390x: ['s390x'],
  loong64: ['loongarch64', 'loong64'],
}

const systemNames = (host: Host) => SYSTEM_NAMES[host.platform] ?? [host.platform]

/** Whether a `binaries` key (`linux-x86_64`, `darwin-aarch64`, `macos-arm64`) names this machine. */
export function isThisPlatform(key: string, host: Host): boolean {
  const lower = key.trim().toLowerCase()
  const cpus = CPU_NAMES[host.arch] ?? [host.arch]
  return systemNames(host).some((os) => cpus.some((cpu) => lower === `${os}-${cpu}`))
}

/** A program on PATH (a regular file; on Windows with one of PATHEXT's endings). */
export function onPath(program: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const isFile = (p: string) => existsSync(p) && statSync(p).isFile()
  if (program.includes('/') || program.includes('\\')) return isFile(program)
  const endings =
    process.platform === 'win32'
      ? ['', ...(env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter(Boolean)]
      : ['']
  return (env.PATH ?? env.Path ?? '')
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => endings.some((ending) => isFile(join(dir, program + ending))))
}

export interface RequirementOptions {
  host: Host
  /** false: this exec-tools instance runs without network, so `requires_network` packages cannot */
  network: boolean
  env?: NodeJS.ProcessEnv
}

/** Why the package cannot load on this machine (every unmet requirement, one sentence each), or none. */
export function unmetRequirements(manifest: Manifest, options: RequirementOptions): string[] {
  const { host, env = process.env } = options
  const problems: string[] = []
  const requires = manifest.requires
  if (requires) {
    const missingBins = requires.bins.filter((bin) => !onPath(bin, env))
    if (missingBins.length)
      problems.push(
        `it needs ${list(missingBins)} on PATH (requires.bins), and ${missingBins.length > 1 ? 'they are' : 'it is'} not there: install ${missingBins.length > 1 ? 'them' : 'it'}, or put ${missingBins.length > 1 ? 'their' : 'its'} directory on PATH`,
      )
    const missingEnv = requires.env.filter((name) => env[name] === undefined)
    if (missingEnv.length)
      problems.push(
        `it needs the environment variable${missingEnv.length > 1 ? 's' : ''} ${list(missingEnv)} (requires.env), not set: set ${missingEnv.length > 1 ? 'them' : 'it'} where yoke runs`,
      )
    const mine = systemNames(host)
    if (requires.os.length && !requires.os.some((os) => mine.includes(os.trim().toLowerCase())))
      problems.push(
        `it runs on ${requires.os.join(', ')} (requires.os), not on this machine (${mine[0]})`,
      )
  }
  if (manifest.requiresNetwork && !options.network)
    problems.push(
      'it needs network access (requires_network: true), and this exec-tools instance has network: false: set network: true in its config, or leave the package out',
    )
  return problems
}

/**
 * For a package with tools and a `binaries` map but no executable in its directory: why (nothing
 * offered for this machine, naming what is offered; or offered but not installed yet).
 */
export function missingBinary(manifest: Manifest, dir: string, host: Host): string | undefined {
  const offered = Object.keys(manifest.binaries)
  if (!offered.length) return undefined
  const mine = `${systemNames(host)[0]}-${(CPU_NAMES[host.arch] ?? [host.arch])[0]}`
  if (!offered.some((key) => isThisPlatform(key, host)))
    return `${manifest.id} has no prebuilt executable for this machine (${mine}); its manifest's binaries offer ${offered.join(', ')}: build it for ${mine} and put it in ${dir}, or use another machine`
  return `${manifest.id}'s executable for this machine (${mine}) is not installed: run \`yoke add ${dir}\` (it downloads the binary the manifest names and checks its sha256)`
}

const list = (names: string[]) => names.map((n) => `"${n}"`).join(', ')
