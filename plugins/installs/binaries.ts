/**
 * octos `binaries`: a manifest may map `{os}-{arch}` (as octos writes them: `linux-x86_64`,
 * `darwin-aarch64`; `macos` is the same as `darwin`, Node's `x64`/`arm64` are accepted too) to
 * `{url, sha256}`. `yoke add` downloads this machine's entry, checks the sha256, and installs it
 * as the package's executable `main` (mode 755): a raw file as it is, a tarball by its one file
 * (or the file named `main` or after the package). It is part of the tree the lock hashes.
 */
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { arch, platform } from 'node:os'
import { join } from 'node:path'
import { YokeError } from 'yoke/cli'
import { executableFormat } from '../process/api.ts'
import type { InstallSource } from './api.ts'
import { download } from './download.ts'
import { unpack } from './tarball.ts'

const OS: Record<string, string> = {
  darwin: 'darwin',
  macos: 'darwin',
  osx: 'darwin',
  linux: 'linux',
  win32: 'windows',
  windows: 'windows',
  win: 'windows',
  freebsd: 'freebsd',
}
const ARCH: Record<string, string> = {
  x64: 'x86_64',
  x86_64: 'x86_64',
  amd64: 'x86_64',
  arm64: 'aarch64',
  aarch64: 'aarch64',
  ia32: 'x86',
  x86: 'x86',
  i686: 'x86',
  arm: 'arm',
  armv7: 'arm',
  riscv64: 'riscv64',
}

/** `os-arch` in octos's spelling, normalised: `linux-x86_64`. */
export function platformKey(os: string = platform(), cpu: string = arch()): string {
  return `${OS[os] ?? os}-${ARCH[cpu] ?? cpu}`
}

function normalise(key: string): string {
  const dash = key.indexOf('-')
  if (dash < 0) return key.toLowerCase()
  const os = key.slice(0, dash).toLowerCase()
  const cpu = key.slice(dash + 1).toLowerCase()
  return `${OS[os] ?? os}-${ARCH[cpu] ?? cpu}`
}

type Binaries = Record<string, { url?: unknown; sha256?: unknown }>

/** The manifest's `binaries`, or undefined when it has none. */
export function binariesOf(packageDir: string): Binaries | undefined {
  const manifest = JSON.parse(readFileSync(join(packageDir, 'manifest.json'), 'utf8'))
  const binaries = manifest?.binaries
  return binaries && typeof binaries === 'object' && Object.keys(binaries).length
    ? binaries
    : undefined
}

/**
 * Installs this machine's binary into `packageDir` as `main`; returns what the lock records.
 * `work` is a scratch folder.
 */
export async function installBinary(
  packageDir: string,
  name: string,
  work: string,
  progress: (line: string) => void,
  host = platformKey(),
): Promise<NonNullable<InstallSource['binary']>> {
  const binaries = binariesOf(packageDir)!
  const file = join(packageDir, 'manifest.json')
  const key = Object.keys(binaries).find((k) => normalise(k) === host)
  if (!key)
    throw new YokeError(
      'INSTALL_PLATFORM',
      {
        reason: `package ${name} has no prebuilt executable for this machine (${host}): its manifest.json offers ${Object.keys(binaries).join(', ')}`,
      },
      { file },
    )
  const entry = binaries[key]!
  const url = typeof entry.url === 'string' ? entry.url : undefined
  if (!url)
    throw new YokeError(
      'INSTALL_FAILED',
      { reason: `package ${name}: binaries.${key} has no url` },
      { file },
    )
  const sha256 =
    typeof entry.sha256 === 'string' && entry.sha256.trim()
      ? entry.sha256.trim().toLowerCase()
      : undefined
  progress(`downloading ${name}'s executable for ${key}`)
  const scratch = mkdtempSync(join(work, 'binary-'))
  const got = await download(url, join(scratch, 'download'), sha256 ? { sha256 } : {})
  let executable = got.file
  if (/\.(tgz|tar\.gz|tar)(\?.*)?$/i.test(url)) {
    const root = await unpack(got.file, mkdtempSync(join(scratch, 'unpacked-')), url)
    const files = readdirSync(root).filter((f) => statSync(join(root, f)).isFile())
    const pick =
      files.find((f) => f === 'main' || f === name) ?? (files.length === 1 ? files[0] : undefined)
    if (!pick)
      throw new YokeError('INSTALL_FAILED', {
        reason: `${url} should hold one executable (or one named main or ${name}); it has ${files.join(', ') || 'no files at its top'}`,
      })
    executable = join(root, pick)
  }
  // read as exec-tools reads it at load (its first bytes: ELF class and e_machine, Mach-O, PE, #!),
  // so that what would be refused at load is refused now, with the reason, and nothing installed
  const format = executableFormat(executable)
  if ('problem' in format)
    throw new YokeError(
      'INSTALL_PLATFORM',
      {
        reason: `package ${name}: binaries.${key} (${url}) ${format.problem}; this machine is ${host} (the publisher's entry for it is wrong); nothing was installed`,
      },
      { file },
    )
  const target = join(packageDir, 'main')
  copyFileSync(executable, target)
  chmodSync(target, 0o755)
  return { platform: key, url, ...(sha256 && { sha256 }) }
}
