// The executable format check at load (issue 14, item 10): real files with real headers. A file
// this machine cannot run used to pass `plugins check`; the kernel refused it (ENOEXEC) and the C
// library's execvp then ran its bytes with /bin/sh, so a Mach-O or a script without #! ran as
// shell commands. Now it is refused at load, naming the file, and `plugins check` says why.
import assert from 'node:assert/strict'
import { chmodSync, copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { formatOf, type Host } from '../../../plugins/process/api.ts'
import { interpreterWarning } from '../../../plugins/process/api.ts'
import shellHooks from '../../../plugins/shell-hooks/index.ts'
import { execHarness, nodeExe, writePackage, type ExecHarness } from '../../helpers/exec.ts'
import { runYoke, tempProject, type Project } from '../../helpers/project.ts'

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

/** An ELF header: class, byte order, e_type, e_machine, then zeros. */
function elfHeader(machine: number, bits: 32 | 64 = 64, order: 'LE' | 'BE' = 'LE', type = 2) {
  const b = Buffer.alloc(64)
  b.set([0x7f, 0x45, 0x4c, 0x46, bits === 64 ? 2 : 1, order === 'LE' ? 1 : 2, 1], 0)
  if (order === 'LE') {
    b.writeUInt16LE(type, 16)
    b.writeUInt16LE(machine, 18)
  } else {
    b.writeUInt16BE(type, 16)
    b.writeUInt16BE(machine, 18)
  }
  return b
}
const THIS_ELF = { x64: 62, arm64: 183 }[process.arch as 'x64' | 'arm64']
const OTHER_ELF = process.arch === 'arm64' ? 62 : 183 // x86_64 vs aarch64

/** A 64-bit little-endian Mach-O header (MH_MAGIC_64 as bytes cf fa ed fe) for `cpu`. */
function machOHeader(cpu = 0x0100000c) {
  const b = Buffer.alloc(32)
  b.writeUInt32LE(0xfeedfacf, 0)
  b.writeUInt32LE(cpu, 4)
  b.writeUInt32LE(2, 12) // MH_EXECUTE
  return b
}
/** A universal (fat) Mach-O header listing `cpus`. */
function fatHeader(cpus: number[]) {
  const b = Buffer.alloc(8 + 20 * cpus.length)
  b.writeUInt32BE(0xcafebabe, 0)
  b.writeUInt32BE(cpus.length, 4)
  cpus.forEach((cpu, i) => b.writeUInt32BE(cpu, 8 + 20 * i))
  return b
}
/** A PE file's start: "MZ", and a line a shell would run. */
const peBytes = Buffer.concat([Buffer.from('MZ\x90\x00\x03\x00\x00\x00'), Buffer.alloc(56)])

/** Bytes after a foreign header that /bin/sh would run, leaving a marker, if it were handed them. */
const payload = (marker: string) => Buffer.from(`\necho pwned > ${marker}\nexit 0\n`)

const linux: Host = { platform: 'linux', arch: 'x64', endianness: 'LE' }
const mac: Host = { platform: 'darwin', arch: 'arm64', endianness: 'LE' }

describe('executable format: the header rules', () => {
  it('ELF: this architecture passes; another architecture, class or byte order is refused and named', () => {
    assert.equal((formatOf(elfHeader(62), linux) as { kind: string }).kind, 'elf')
    assert.equal((formatOf(elfHeader(62, 64, 'LE', 3), linux) as { kind: string }).kind, 'elf')
    const arm = formatOf(elfHeader(183), linux)
    assert.match(
      (arm as { problem: string }).problem,
      /ELF 64-bit little-endian executable for aarch64; this machine \(linux\/x64\) runs x86_64 64-bit/,
    )
    assert.match(
      (formatOf(elfHeader(3, 32), linux) as { problem: string }).problem,
      /32-bit .* for x86 \(i386\)/,
    )
    assert.match(
      (formatOf(elfHeader(62, 64, 'BE'), linux) as { problem: string }).problem,
      /big-endian/,
    )
    assert.match(
      (formatOf(elfHeader(62, 64, 'LE', 1), linux) as { problem: string }).problem,
      /relocatable \(an object file\), not an executable/,
    )
    assert.match(
      (formatOf(elfHeader(62), mac) as { problem: string }).problem,
      /ELF binaries do not run on darwin\/arm64/,
    )
    assert.match(
      (formatOf(elfHeader(62).subarray(0, 10), linux) as { problem: string }).problem,
      /truncated ELF header/,
    )
  })

  it('Mach-O: refused off macOS; on a Mac, this CPU (thin or in a universal binary) passes', () => {
    assert.match(
      (formatOf(machOHeader(), linux) as { problem: string }).problem,
      /is a macOS \(Mach-O\) executable for arm64; it cannot run on linux\/x64/,
    )
    assert.equal((formatOf(machOHeader(), mac) as { kind: string }).kind, 'mach-o')
    assert.match(
      (formatOf(machOHeader(0x01000007), mac) as { problem: string }).problem,
      /for x86_64; this Mac runs arm64/,
    )
    const fat = fatHeader([0x01000007, 0x0100000c])
    assert.equal((formatOf(fat, mac) as { kind: string }).kind, 'mach-o')
    assert.match(
      (formatOf(fat, linux) as { problem: string }).problem,
      /universal\) executable for x86_64, arm64/,
    )
    const javaClass = Buffer.from([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52])
    assert.match((formatOf(javaClass, mac) as { problem: string }).problem, /Java class file/)
  })

  it('PE ("MZ"): refused except on Windows', () => {
    assert.match(
      (formatOf(peBytes, linux) as { problem: string }).problem,
      /Windows \(PE, "MZ"\) executable; it cannot run on linux\/x64/,
    )
    assert.equal(
      (formatOf(peBytes, { ...linux, platform: 'win32' }) as { kind: string }).kind,
      'pe',
    )
  })

  it('scripts: #! and an absolute interpreter; no #!, a BOM, CR LF, an empty or relative #! are refused', () => {
    const ok = formatOf(Buffer.from('#! /usr/bin/env node\nx'), linux)
    assert.deepEqual(ok, {
      kind: 'script',
      what: 'a script for /usr/bin/env',
      interpreter: '/usr/bin/env',
      args: ['node'],
    })
    const problem = (s: string) => (formatOf(Buffer.from(s), linux) as { problem?: string }).problem
    assert.match(
      problem('echo hi\n')!,
      /nor a script with a #! line .*add a first line such as #!\/bin\/sh/,
    )
    assert.match(problem('\uFEFF#!/bin/sh\necho\n')!, /byte-order mark/)
    assert.match(problem('#!/bin/sh\r\necho\r\n')!, /Windows line endings/)
    assert.match(problem('#!\n')!, /names no interpreter/)
    assert.match(problem('#!python3\n')!, /"python3" is not an absolute path/)
    assert.match(problem('')!, /is empty/)
  })

  it('a missing interpreter, or a program env cannot find on PATH, is a warning', () => {
    const script = (line: string) => formatOf(Buffer.from(`${line}\n`), linux)
    assert.equal(interpreterWarning(script(`#!${process.execPath}`)), undefined)
    assert.match(
      interpreterWarning(script('#!/nonexistent/sh'))!,
      /\/nonexistent\/sh .* does not exist/,
    )
    if (!existsSync('/usr/bin/env')) return
    const bin = dirname(process.execPath)
    assert.equal(interpreterWarning(script('#!/usr/bin/env node'), bin), undefined)
    assert.equal(interpreterWarning(script('#!/usr/bin/env -S node --x'), bin), undefined)
    assert.match(
      interpreterWarning(script('#!/usr/bin/env no-such-program-9'), bin)!,
      /its interpreter no-such-program-9 \(which its #! line runs through \/usr\/bin\/env\) is not on PATH: calls will fail/,
    )
  })
})

describe('executable format: at load, and through `plugins check`', () => {
  let h: ExecHarness
  let project: Project
  const marker = (name: string) => join(h.root, '.yoke/work', name, 'pwned')
  const foreign: Record<string, Buffer> = {
    macho: Buffer.concat([machOHeader(), payload('pwned')]),
    pe: Buffer.concat([peBytes, payload('pwned')]),
    otherelf: Buffer.concat([elfHeader(OTHER_ELF), payload('pwned')]),
    noshebang: Buffer.from('echo pwned > pwned\necho ran as shell\n'),
  }
  const manifestOf = (name: string) => ({
    name,
    version: '1',
    tools: [{ name: `${name}_run`, description: name }],
  })
  const writeAll = (root: string) => {
    for (const [name, bytes] of Object.entries(foreign)) {
      writePackage(root, name, { manifest: manifestOf(name) })
      writeFileSync(join(root, name, name), bytes, { mode: 0o755 })
    }
    writePackage(root, 'thiself', { manifest: manifestOf('thiself') })
    copyFileSync('/bin/true', join(root, 'thiself', 'thiself'))
    chmodSync(join(root, 'thiself', 'thiself'), 0o755)
    writePackage(root, 'script', {
      manifest: manifestOf('script'),
      exe: nodeExe(`process.stdout.write('script ran')`),
    })
  }
  before(async () => {
    h = await execHarness({}, {}, [], (root) => writeAll(join(root, 'packages')))
    project = tempProject({})
    writeAll(project.path('pkgs'))
  })
  after(async () => {
    await h.close()
    project.cleanup()
  })

  it('a foreign binary or a script without #! is refused at load, naming the file and why; the other packages load', async () => {
    const by = Object.fromEntries(h.api.list().map((p) => [p.dir.split('/').at(-1), p]))
    const why: Record<string, RegExp> = {
      macho: /is a macOS \(Mach-O\) executable for arm64; it cannot run on/,
      pe: /is a Windows \(PE, "MZ"\) executable/,
      otherelf: /is an ELF 64-bit little-endian executable for (aarch64|x86_64); this machine/,
      noshebang: /is neither a binary for .* nor a script with a #! line/,
    }
    for (const [name, pattern] of Object.entries(why)) {
      const p = by[name]!
      assert.equal(p.state, 'failed', name)
      const file = join(h.root, 'packages', name, name)
      assert.match(p.errors[0]!.message, new RegExp(`the executable ${file} is refused: it `))
      assert.match(p.errors[0]!.message, pattern)
      assert.equal(p.errors[0]!.code, 'EXECUTABLE_INVALID')
      assert.ok(!h.rt.list().some((t) => t.name === `${name}_run`), `${name}_run is not a tool`)
      assert.ok(
        h.logs.some(
          (l) =>
            l.level === 'error' && (l.error as { code?: string })?.code === 'EXECUTABLE_INVALID',
        ),
        'logged with its code',
      )
    }
    for (const name of ['macho', 'pe', 'otherelf', 'noshebang'])
      assert.equal(existsSync(marker(name)), false, `${name}'s bytes never reached a shell`)
    assert.equal(by.script!.state, 'loaded')
    assert.equal(text(await h.rt.call('script_run', {})), 'script ran')
  })

  it('an ELF binary for this machine (a copy of /bin/true) loads and runs', async (t) => {
    if (!THIS_ELF) return t.skip(`no ELF machine number known for ${process.arch} in this test`)
    assert.equal(
      readFileSync('/bin/true').readUInt16LE(18),
      THIS_ELF,
      '/bin/true is for this machine',
    )
    const p = h.api.list().find((i) => i.id === 'thiself')!
    assert.equal(p.state, 'loaded', JSON.stringify(p.errors))
    const r = await h.rt.call('thiself_run', {})
    assert.equal(r.status, 'ok', text(r))
  })

  it('`yoke plugins check DIR` reports each refused file and exits 1; a good package alone passes', async () => {
    const all = await runYoke(['plugins', 'check', 'pkgs', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(all.code, 1, all.stdout + all.stderr)
    for (const name of ['macho', 'pe', 'otherelf', 'noshebang'])
      assert.match(
        all.stdout,
        new RegExp(
          `✗ pkgs/${name}\\n  error pkgs/${name}/manifest\\.json:1:1: ${name}: the executable \\S*pkgs/${name}/${name} is refused: it `,
        ),
      )
    assert.match(all.stdout, /✓ script · script_run/)
    const json = await runYoke(['plugins', 'check', 'pkgs', '--json', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    const report = JSON.parse(json.stdout) as {
      packages: Array<{ dir: string; errors: Array<{ code?: string; message: string }> }>
    }
    const macho = report.packages.find((p) => p.dir.endsWith('/macho'))!
    assert.equal(macho.errors[0]!.code, 'EXECUTABLE_INVALID')
    const one = await runYoke(['plugins', 'check', 'pkgs/script', '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(one.code, 0, one.stdout + one.stderr)
  })

  it('a script whose interpreter is missing loads with a warning that says calls will fail', async () => {
    const dir = writePackage(project.path('more'), 'lost', {
      manifest: manifestOf('lost'),
      exe: '#!/nonexistent/python9\nprint(1)\n',
    })
    const r = await runYoke(['plugins', 'check', dir, '--cwd', project.dir], {
      cwd: project.dir,
      home: project.home,
    })
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(
      r.stdout,
      /warning .*lost\/lost: its interpreter \/nonexistent\/python9 \(from its #! line\) does not exist on this machine/,
    )
  })
})

describe('executable format: shell hooks given by path', () => {
  it('a hook program without #! is refused (a failure that never blocks), not run by /bin/sh', async () => {
    let marker = ''
    const h = await execHarness(
      {
        hooked: {
          manifest: manifestFor('hooked_run'),
          exe: nodeExe(`process.stdout.write('tool ran')`),
        },
      },
      {},
      [[shellHooks, { hooks: [{ event: 'before_tool_call', command: ['./guard'] }] }, 'guards']],
      (root) => {
        marker = join(root, 'pwned')
        // today /bin/sh runs it: it would leave the marker and deny the call (exit 1)
        writeFileSync(join(root, 'guard'), `touch ${marker}\necho denied by a shell; exit 1\n`, {
          mode: 0o755,
        })
      },
    )
    try {
      const r = await h.rt.call('hooked_run', {})
      assert.equal(r.status, 'ok', text(r))
      assert.equal(text(r), 'tool ran')
      assert.equal(existsSync(marker), false, 'the shell never ran it')
      assert.ok(
        h.logs.some((l) =>
          /guard is refused: it is neither a binary .* nor a script with a #! line/.test(l.message),
        ),
        h.logs.map((l) => l.message).join('\n'),
      )
    } finally {
      await h.close()
    }
  })
})

function manifestFor(tool: string) {
  return { name: 'hooked', version: '1', tools: [{ name: tool, description: tool }] }
}
