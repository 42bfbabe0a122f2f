/**
 * Is the executable a program this machine runs? Read at load from the file's first bytes: an ELF
 * binary for this machine's architecture (its header's class, byte order and e_machine), a Mach-O
 * for this CPU on macOS, a PE on Windows, or a script whose first line is `#!` and an absolute
 * interpreter path. Anything else is refused with the reason: the kernel would refuse it (ENOEXEC)
 * and the C library's execvp would then hand its bytes to `/bin/sh`, so a Mach-O binary or a
 * script without `#!` would run as shell commands and garbage would reach the model.
 *
 * The manifest has no interpreter field (octos's format has none): a script names its own
 * interpreter on its `#!` line.
 */
import { closeSync, constants, existsSync, openSync, readSync } from 'node:fs'
import { arch, endianness, platform } from 'node:os'
import { delimiter, join } from 'node:path'

/** The machine a file must run on: `process.platform`, `process.arch` and the byte order. */
export interface Host {
  platform: NodeJS.Platform
  arch: string
  endianness: 'LE' | 'BE'
}

export const THIS_HOST: Host = { platform: platform(), arch: arch(), endianness: endianness() }

/** What an acceptable file is; a refused one has `problem` (a sentence that follows the file's path). */
export type Format =
  | { kind: 'elf' | 'mach-o' | 'pe'; what: string }
  | { kind: 'script'; what: string; interpreter: string; args: string[] }
  | { problem: string }

const HEAD_BYTES = 1024

/** ELF e_machine per Node's `process.arch`, with its class (32/64 bit). */
const ELF_ARCH: Record<string, { machine: number; bits: 32 | 64 }> = {
  x64: { machine: 62, bits: 64 },
  arm64: { machine: 183, bits: 64 },
  ia32: { machine: 3, bits: 32 },
  arm: { machine: 40, bits: 32 },
  riscv64: { machine: 243, bits: 64 },
  ppc64: { machine: 21, bits: 64 },
  ppc: { machine: 20, bits: 32 },
  s390x: { machine: 22, bits: 64 },
  s390: { machine: 22, bits: 32 },
  mips: { machine: 8, bits: 32 },
  mipsel: { machine: 8, bits: 32 },
  mips64el: { machine: 8, bits: 64 },
  loong64: { machine: 258, bits: 64 },
}

const ELF_MACHINE: Record<number, string> = {
  2: 'sparc',
  3: 'x86 (i386)',
  8: 'mips',
  20: 'powerpc',
  21: 'powerpc64',
  22: 's390',
  40: 'arm',
  43: 'sparcv9',
  50: 'ia64',
  62: 'x86_64',
  183: 'aarch64',
  243: 'riscv',
  258: 'loongarch',
}

/** Mach-O cputype per `process.arch`. */
const MACHO_CPU: Record<string, number> = { x64: 0x01000007, arm64: 0x0100000c }
const MACHO_NAME: Record<number, string> = {
  7: 'i386',
  0x01000007: 'x86_64',
  12: 'arm',
  0x0100000c: 'arm64',
  18: 'powerpc',
  0x01000012: 'powerpc64',
}

const machineName = (m: number) => ELF_MACHINE[m] ?? `machine ${m}`
const hostName = (h: Host) => `${h.platform}/${h.arch}`

/**
 * The format of the file at `path` (a regular file the caller has checked), read through one
 * descriptor that does not follow symlinks.
 *
 * @example
 * const f = executableFormat('/pkg/tool')
 * if ('problem' in f) refuse(`${path} ${f.problem}`)
 */
export function executableFormat(path: string, host: Host = THIS_HOST): Format {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const head = Buffer.alloc(HEAD_BYTES)
    const read = readSync(fd, head, 0, HEAD_BYTES, 0)
    return formatOf(head.subarray(0, read), host)
  } finally {
    closeSync(fd)
  }
}

/** The format of a file whose first bytes are `head` (up to 1 KiB), for `host`. Pure. */
export function formatOf(head: Buffer, host: Host = THIS_HOST): Format {
  if (head.length === 0) return { problem: 'is empty: there is no program to run' }
  if (head[0] === 0x23 && head[1] === 0x21) return shebang(head)
  if (head.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]))) return elf(head, host)
  const magic = head.length >= 4 ? head.readUInt32BE(0) : 0
  if ([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe, 0xcafebabe].includes(magic))
    return machO(head, magic, host)
  if (head[0] === 0x4d && head[1] === 0x5a)
    return host.platform === 'win32'
      ? { kind: 'pe', what: 'a Windows (PE) executable' }
      : {
          problem: `is a Windows (PE, "MZ") executable; it cannot run on ${hostName(host)}`,
        }
  if (head.subarray(0, 5).equals(Buffer.from('\uFEFF#!', 'utf8')))
    return {
      problem:
        'starts with a byte-order mark before its #! line, so the kernel does not see the #!: save it without the BOM',
    }
  return {
    problem: `is neither a binary for ${hostName(host)} nor a script with a #! line (its first bytes: ${[
      ...head.subarray(0, 4),
    ]
      .map((b) => b.toString(16).padStart(2, '0'))
      .join(
        ' ',
      )}); yoke does not run files through a shell: add a first line such as #!/bin/sh naming its interpreter`,
  }
}

function shebang(head: Buffer): Format {
  const end = head.indexOf(0x0a)
  const line = head.subarray(2, end === -1 ? head.length : end).toString('latin1')
  if (end === -1 && head.length >= HEAD_BYTES)
    return { problem: `has a #! line longer than ${HEAD_BYTES} bytes` }
  if (line.endsWith('\r'))
    return {
      problem:
        'has Windows line endings (CR LF): its #! line names an interpreter ending in a CR, which does not exist; convert it to LF',
    }
  const [interpreter = '', ...args] = line.trim().split(/[ \t]+/)
  if (interpreter === '') return { problem: 'has a #! line that names no interpreter' }
  if (!interpreter.startsWith('/'))
    return {
      problem: `has a #! line whose interpreter "${interpreter}" is not an absolute path (it would be looked up in the work directory); write e.g. #!/usr/bin/env ${interpreter}`,
    }
  return { kind: 'script', what: `a script for ${interpreter}`, interpreter, args }
}

function elf(head: Buffer, host: Host): Format {
  if (head.length < 20) return { problem: 'has a truncated ELF header' }
  const bits = head[4] === 1 ? 32 : head[4] === 2 ? 64 : undefined
  const order = head[5] === 1 ? 'LE' : head[5] === 2 ? 'BE' : undefined
  if (!bits || !order)
    return { problem: `has an ELF header with an invalid class (${head[4]}) or byte order` }
  const type = order === 'LE' ? head.readUInt16LE(16) : head.readUInt16BE(16)
  const machine = order === 'LE' ? head.readUInt16LE(18) : head.readUInt16BE(18)
  const what = `an ELF ${bits}-bit ${order === 'LE' ? 'little' : 'big'}-endian executable for ${machineName(machine)}`
  if (host.platform === 'darwin' || host.platform === 'win32')
    return { problem: `is ${what}; ELF binaries do not run on ${hostName(host)}` }
  if (type !== 2 && type !== 3)
    return {
      problem: `is an ELF file of type ${type === 1 ? 'relocatable (an object file)' : type === 4 ? 'core (a core dump)' : type}, not an executable`,
    }
  const want = ELF_ARCH[host.arch]
  if (!want) return { kind: 'elf', what } // an architecture we have no table entry for: the kernel decides
  if (machine !== want.machine || bits !== want.bits || order !== host.endianness)
    return {
      problem: `is ${what}; this machine (${hostName(host)}) runs ${machineName(want.machine)} ${want.bits}-bit ${host.endianness === 'LE' ? 'little' : 'big'}-endian binaries: build it for this architecture`,
    }
  return { kind: 'elf', what }
}

function machO(head: Buffer, magic: number, host: Host): Format {
  const fat = magic === 0xcafebabe
  const cpus: number[] = []
  if (fat) {
    const count = head.length >= 8 ? head.readUInt32BE(4) : 0
    // Java class files share the magic; their "count" (the class version) is 45 or more
    if (count === 0 || count > 30)
      return {
        problem:
          'starts with 0xCAFEBABE but is not a universal Mach-O (a Java class file?): it is not a program this machine runs',
      }
    for (let i = 0; i < count && 8 + 20 * i + 4 <= head.length; i++)
      cpus.push(head.readUInt32BE(8 + 20 * i))
  } else if (head.length >= 8) {
    const le = magic === 0xcefaedfe || magic === 0xcffaedfe
    cpus.push(le ? head.readUInt32LE(4) : head.readUInt32BE(4))
  }
  const names = cpus.map((c) => MACHO_NAME[c] ?? `cputype ${c}`).join(', ') || 'an unknown CPU'
  const what = `a macOS (Mach-O${fat ? ', universal' : ''}) executable for ${names}`
  if (host.platform !== 'darwin')
    return { problem: `is ${what}; it cannot run on ${hostName(host)}` }
  const want = MACHO_CPU[host.arch]
  if (want !== undefined && !cpus.includes(want))
    return { problem: `is ${what}; this Mac runs ${MACHO_NAME[want]}: build it for ${host.arch}` }
  return { kind: 'mach-o', what }
}

/**
 * A warning for a script whose interpreter is not on this machine (calls would fail), else
 * undefined. For `#!/usr/bin/env NAME`, NAME is looked up on `path` (the PATH a tool gets).
 */
export function interpreterWarning(
  format: Format,
  path = process.env.PATH ?? '',
): string | undefined {
  if (!('kind' in format) || format.kind !== 'script') return undefined
  const fails = 'calls will fail until it is installed'
  if (!existsSync(format.interpreter))
    return `its interpreter ${format.interpreter} (from its #! line) does not exist on this machine: ${fails}`
  if (!/\/env$/.test(format.interpreter)) return undefined
  const program = format.args.find((a) => !a.startsWith('-') && !a.includes('='))
  if (!program) return undefined
  const found = program.includes('/')
    ? existsSync(program)
    : path.split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, program)))
  return found
    ? undefined
    : `its interpreter ${program} (which its #! line runs through ${format.interpreter}) is not on PATH: ${fails}`
}
