/**
 * octos `binaries`: a manifest may map `{os}-{arch}` (as octos writes them: `linux-x86_64`,
 * `darwin-aarch64`; `macos` is the same as `darwin`, Node's `x64`/`arm64` are accepted too) to
 * `{url, sha256}`. `yoke add` downloads this machine's entry, checks the sha256, and installs it
 * as the package's executable `main` (mode 755): a raw file as it is, a tarball by its one file
 * (or the file named `main` or after the package). It is part of the tree the lock hashes.
 */
import {
  chmodSync,
  closeSync,
  copyFileSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
} from 'node:fs'
import { arch, platform } from 'node:os'
import { join } from 'node:path'
import { YokeError } from 'yoke/cli'
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
  const foreign = foreignFormat(executable)
  if (foreign)
    throw new YokeError(
      'INSTALL_PLATFORM',
      {
        reason: `package ${name}: binaries.${key} (${url}) is ${foreign}, which this machine (${host}, ${platform()} ${arch()}) cannot run: the package's publisher listed it under the wrong platform; nothing was installed`,
      },
      { file },
    )
  const target = join(packageDir, 'main')
  copyFileSync(executable, target)
  chmodSync(target, 0o755)
  return { platform: key, url, ...(sha256 && { sha256 }) }
}

/** ELF e_machine for each Node arch (elf.h). */
const ELF_MACHINE: Record<string, number> = {
  ia32: 3,
  mips: 8,
  mipsel: 8,
  ppc: 20,
  ppc64: 21,
  s390x: 22,
  arm: 40,
  x64: 62,
  arm64: 183,
  riscv64: 243,
  loong64: 258,
}
const ELF_NAME: Record<number, string> = {
  3: 'x86',
  8: 'MIPS',
  20: 'PowerPC',
  21: 'PowerPC 64',
  22: 's390',
  40: 'ARM',
  62: 'x86_64',
  183: 'AArch64',
  243: 'RISC-V',
  258: 'LoongArch',
}

/**
 * What kind of executable the file is when this machine cannot run it (its first bytes: ELF's
 * e_machine against process.arch, a Mach-O or PE header on another OS), else undefined: a script
 * (`#!`), an executable for this machine, or a format yoke does not know is left to the loader.
 * @example foreignFormat('main') // 'a Mach-O executable (macOS)' on Linux
 */
export function foreignFormat(file: string, os = platform(), cpu = arch()): string | undefined {
  const head = Buffer.alloc(64)
  const fd = openSync(file, 'r')
  let n: number
  try {
    n = readSync(fd, head, 0, head.length, 0)
  } finally {
    closeSync(fd)
  }
  const bytes = head.subarray(0, n)
  if (bytes.length >= 20 && bytes.readUInt32BE(0) === 0x7f454c46) {
    const machine = bytes[5] === 2 ? bytes.readUInt16BE(18) : bytes.readUInt16LE(18)
    const what = `an ELF executable for ${ELF_NAME[machine] ?? `machine ${machine}`}`
    if (os !== 'linux' && os !== 'freebsd' && os !== 'android') return `${what} (Linux)`
    const want = ELF_MACHINE[cpu]
    return want !== undefined && machine !== want ? what : undefined
  }
  if (bytes.length >= 4) {
    const magic = bytes.readUInt32BE(0)
    if ([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe].includes(magic))
      return os === 'darwin' ? undefined : 'a Mach-O executable (macOS)'
  }
  if (bytes.length >= 2 && bytes[0] === 0x4d && bytes[1] === 0x5a)
    return os === 'win32' ? undefined : 'a PE executable (Windows)'
  return undefined
}
