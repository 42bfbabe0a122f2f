// The installs' state against hostile material (issue 27): a plugin whose Python hooks write
// __pycache__ into its installed folder, a 3 GiB sparse file in an installed tree, hostile
// yoke.lock entries (a wrong type, a name that climbs out, a 200,000-entry lock, a FIFO), and
// octos binaries built for another platform.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { platformKey } from '../../../plugins/installs/binaries.ts'
import { ROOT, runYoke, suiteProjects, type Project } from '../../helpers/project.ts'

const FIXTURES = join(ROOT, 'test', 'fixtures', 'installs')
const project = suiteProjects()

/** `yoke ...args` in the project (the built CLI, as `npm test` builds it first), bounded. */
const yoke = (p: Project, args: string[], env: Record<string, string> = {}) =>
  runYoke(args, { cwd: p.dir, home: p.home, env: { YOKE_TRUST: '1', ...env }, timeoutMs: 120_000 })

/** A folder of skills as public collections lay them out: LICENSE and README.md at the top. */
function collection(p: Project, rel = 'src/collection'): string {
  p.write(`${rel}/LICENSE`, 'MIT\n')
  p.write(`${rel}/README.md`, '# skills\n')
  p.write(`${rel}/pdf/SKILL.md`, '---\nname: pdf\ndescription: Read PDFs\n---\nUse it.\n')
  p.write(`${rel}/xlsx/SKILL.md`, '---\nname: xlsx\ndescription: Sheets\n---\nUse it.\n')
  return p.path(rel)
}

describe('integrity that survives run-time caches', () => {
  it('a plugin whose Python hook writes __pycache__ keeps working; a real tampering is refused', async () => {
    const p = project()
    const src = p.path('src/py-guard')
    p.write(
      'src/py-guard/.claude-plugin/plugin.json',
      JSON.stringify({ name: 'py-guard', version: '1.0.0' }),
    )
    p.write(
      'src/py-guard/hooks/hooks.json',
      JSON.stringify({
        hooks: {
          PreToolUse: [
            {
              matcher: '.*',
              hooks: [
                { type: 'command', command: 'python3 "${CLAUDE_PLUGIN_ROOT}/hooks/check.py"' },
              ],
            },
          ],
        },
      }),
    )
    p.write(
      'src/py-guard/hooks/check.py',
      'import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\nimport helper\nhelper.mark()\n',
    )
    p.write(
      'src/py-guard/hooks/helper.py',
      'import os\ndef mark():\n    with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hook-runs.txt"), "a") as f:\n        f.write("ran\\n")\n',
    )
    // an author's own __pycache__ is not copied: what is in it at run time was written there
    p.write('src/py-guard/hooks/__pycache__/stale.cpython-39.pyc', 'old bytecode')
    const mark = p.path('hook-runs.txt')
    const env = { PYTHONDONTWRITEBYTECODE: '' }
    const added = await yoke(p, ['add', src], env)
    assert.equal(added.code, 0, added.stderr)
    const installed = p.path('.yoke/installed/py-guard')
    assert.ok(!existsSync(join(installed, 'hooks', '__pycache__')))
    for (const round of [1, 2]) {
      const call = await yoke(p, ['tools', 'call', 'skills_list', '--json'], env)
      assert.equal(call.code, 0, call.stdout + call.stderr)
      assert.equal(readFileSync(mark, 'utf8'), 'ran\n'.repeat(round), call.stderr)
      assert.ok(
        readdirSync(join(installed, 'hooks', '__pycache__')).some((f) => f.endsWith('.pyc')),
        'python wrote its cache into the installed folder',
      )
      const listed = await yoke(p, ['installed'], env)
      assert.equal(listed.code, 0, listed.stdout + listed.stderr)
      assert.match(listed.stdout, /^py-guard +verified/m)
    }
    // a new script, even inside __pycache__, and an edited shipped file are tampering
    writeFileSync(join(installed, 'hooks', '__pycache__', 'run.sh'), '#!/bin/sh\n')
    const planted = await yoke(p, ['installed'], env)
    assert.equal(planted.code, 1)
    assert.match(planted.stdout, /^py-guard +tampered/m)
    const restored = await yoke(p, ['update', 'py-guard'], env)
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /py-guard: restored/)
    writeFileSync(join(installed, 'hooks', 'helper.py'), 'def mark():\n    pass\n')
    const edited = await yoke(p, ['installed', '--json'], env)
    assert.equal(edited.code, 1)
    assert.match(JSON.parse(edited.stdout).installs[0].why, /do not match its sha256/)
    const refused = await yoke(p, ['tools', 'call', 'skills_list'], env)
    assert.match(refused.stderr, /install py-guard .* is refused/)
    assert.equal(readFileSync(mark, 'utf8'), 'ran\n'.repeat(2), 'the tampered hook did not run')
  })
})

describe('install state read with checks', () => {
  it('a 3 GiB sparse file in an installed tree refuses that install alone, without reading it', async () => {
    const p = project()
    const one = await yoke(p, ['add', join(FIXTURES, 'hello-skill')])
    assert.equal(one.code, 0, one.stderr)
    const two = await yoke(p, ['add', collection(p)])
    assert.equal(two.code, 0, two.stderr)
    const big = p.path('.yoke/installed/hello-skill/hello-skill/big.bin')
    execFileSync('truncate', ['-s', '3G', big])
    const listed = await yoke(p, ['installed', '--json'])
    assert.equal(listed.code, 1, listed.stderr)
    assert.doesNotMatch(listed.stderr, /ERR_FS_FILE_TOO_LARGE|INTERNAL/)
    const rows = Object.fromEntries(
      JSON.parse(listed.stdout).installs.map((r: { entry: { name: string } }) => [r.entry.name, r]),
    )
    assert.equal(rows.collection.ok, true)
    assert.equal(rows['hello-skill'].ok, false)
    assert.match(rows['hello-skill'].why, /hello-skill\/big\.bin alone is 3221225472/)
    // the instance loads the others
    const skills = await yoke(p, ['tools', 'call', 'skills_list', '--json'])
    assert.equal(skills.code, 0, skills.stderr)
    assert.match(skills.stdout, /xlsx/)
    assert.doesNotMatch(skills.stdout, /hello-skill/)
    assert.match(skills.stderr, /install hello-skill .* is refused: .* alone is 3221225472/)
  })

  it('a bad yoke.lock entry is left out with a warning naming the lock and the entry; the rest loads', async () => {
    const p = project()
    const ok = await yoke(p, ['add', collection(p)])
    assert.equal(ok.code, 0, ok.stderr)
    // a plugin outside .yoke/installed whose hash an attacker put in the lock
    p.write('outside/hello-skill/SKILL.md', '---\nname: hello-skill\ndescription: out\n---\nx\n')
    const lock = JSON.parse(readFileSync(p.path('yoke.lock'), 'utf8'))
    const good = lock.installs.collection
    const { listTree, hashTree } = await import('../../../plugins/installs/tree.ts')
    const outside = hashTree(await listTree(p.path('outside')))
    lock.installs['../../outside'] = {
      ...good,
      name: '../../outside',
      kind: 'skills',
      sha256: outside,
    }
    lock.installs.typed = { ...good, name: 'typed', sha256: 42 }
    lock.installs.odd = { ...good, name: 'odd', kind: 'daemon' }
    lock.installs.alias = { ...good, name: 'collection' }
    writeFileSync(p.path('yoke.lock'), JSON.stringify(lock, null, 2))
    const listed = await yoke(p, ['installed'])
    assert.equal(listed.code, 1)
    assert.match(listed.stdout, /^collection +verified/m)
    for (const [key, why] of [
      ['../../outside', /its key is not an install name|name: is not an install name/],
      ['typed', /sha256: /],
      ['odd', /kind: /],
      ['alias', /its key is not its name/],
    ] as const) {
      const line = listed.stderr.split('\n').find((l) => l.includes(`entry "${key}"`))
      assert.ok(line, `${key}: ${listed.stderr}`)
      assert.match(line, /yoke\.lock: installs entry .* is left out: /)
      assert.match(line, why)
    }
    const call = await yoke(p, ['tools', 'call', 'skills_list', '--json'])
    assert.equal(call.code, 0, call.stderr)
    assert.match(call.stdout, /xlsx/)
    assert.doesNotMatch(call.stdout, /"out"|hello-skill/)
    assert.match(call.stderr, /yoke\.lock: installs entry "typed" is left out/)
    // another add keeps the entries it could not read, as they were
    const more = await yoke(p, ['add', join(FIXTURES, 'hello-skill')])
    assert.equal(more.code, 0, more.stderr)
    const after = JSON.parse(readFileSync(p.path('yoke.lock'), 'utf8'))
    assert.equal(after.installs.typed.sha256, 42)
    assert.ok(after.installs['hello-skill'])
    // remove drops a bad entry (and touches no folder for a name that is not one)
    const gone = await yoke(p, ['remove', '../../outside'])
    assert.equal(gone.code, 0, gone.stderr)
    assert.ok(existsSync(p.path('outside/hello-skill/SKILL.md')))
    assert.equal(
      JSON.parse(readFileSync(p.path('yoke.lock'), 'utf8')).installs['../../outside'],
      undefined,
    )
  })

  it('a 200,000-entry lock, a FIFO and a wrong shape are refused by the checked reader, naming the file', async () => {
    const p = project()
    const entry = (i: number) => ({
      name: `s${i}`,
      kind: 'skill',
      source: { given: '/x', type: 'folder', location: '/x' },
      sha256: '0'.repeat(64),
      installedAt: '2026-01-01T00:00:00.000Z',
    })
    const installs: Record<string, unknown> = {}
    for (let i = 0; i < 200_000; i++) installs[`s${i}`] = entry(i)
    writeFileSync(p.path('yoke.lock'), JSON.stringify({ lockfileVersion: 1, installs }))
    const big = await yoke(p, ['installed'])
    assert.equal(big.code, 1)
    assert.match(big.stderr, /INSTALL_LOCK_INVALID .*yoke\.lock is not read: .*(too large|bytes)/)
    assert.doesNotMatch(big.stderr, /Maximum call stack|RangeError/)
    const add = await yoke(p, ['add', join(FIXTURES, 'hello-skill')])
    assert.equal(add.code, 1)
    assert.match(add.stderr, /^INSTALL_LOCK_INVALID /m)
    // a lock that fits the cap lists every entry (kept small: stdout through a pipe)
    const some: Record<string, unknown> = {}
    for (let i = 0; i < 100; i++) some[`s${i}`] = entry(i)
    writeFileSync(p.path('yoke.lock'), JSON.stringify({ lockfileVersion: 1, installs: some }))
    const many = await yoke(p, ['installed', '--json'])
    assert.equal(many.code, 1)
    assert.equal(JSON.parse(many.stdout).installs.length, 100)
    rmSync(p.path('yoke.lock'))
    execFileSync('mkfifo', [p.path('yoke.lock')])
    const fifo = await yoke(p, ['installed'])
    assert.equal(fifo.code, 1)
    assert.match(fifo.stderr, /yoke\.lock is not read: .*not a regular file \(a FIFO\)/)
    rmSync(p.path('yoke.lock'))
    writeFileSync(p.path('yoke.lock'), JSON.stringify({ lockfileVersion: 1, installs: [] }))
    const shape = await yoke(p, ['installed'])
    assert.equal(shape.code, 1)
    assert.match(shape.stderr, /yoke\.lock is not read: its "installs" is not an object/)
  })
})

describe('octos binaries of another platform', () => {
  it('a Mach-O, a PE or a foreign-arch ELF is refused at install, with the reason', async () => {
    const elf = (machine: number) => {
      const b = Buffer.alloc(64)
      b.writeUInt32BE(0x7f454c46, 0)
      b[4] = 2
      b[5] = 1 // little-endian
      b.writeUInt16LE(2, 16) // an executable
      b.writeUInt16LE(machine, 18)
      return b
    }
    const own = process.arch === 'arm64' ? 183 : 62
    const bodies: Record<string, Buffer> = {
      '/macho': Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1, ...Buffer.alloc(28)]),
      '/pe': Buffer.concat([Buffer.from('MZ'), Buffer.alloc(62)]),
      '/elf-foreign': elf(own === 62 ? 183 : 62),
      '/elf-own': elf(own),
    }
    const server = createServer((req, res) => {
      const body = bodies[req.url ?? '']
      if (!body) return void res.writeHead(404).end()
      res.writeHead(200, { 'content-length': body.length }).end(body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      for (const [path, what] of [
        ['/macho', /binaries\.\S+ \(http\S+\/macho\) is a macOS \(Mach-O\) executable/],
        ['/pe', /binaries\.\S+ \(http\S+\/pe\) is a Windows \(PE, "MZ"\) executable/],
        [
          '/elf-foreign',
          /binaries\.\S+ \(http\S+\/elf-foreign\) is an? .*ELF.*this machine .* runs/,
        ],
      ] as const) {
        const p = project()
        const src = p.path('src/bin-package')
        cpSync(join(FIXTURES, 'echo-package'), src, { recursive: true })
        rmSync(join(src, 'main'))
        const manifest = JSON.parse(readFileSync(join(src, 'manifest.json'), 'utf8'))
        const binaries = { [platformKey()]: { url: `${base}${path}` } }
        writeFileSync(
          join(src, 'manifest.json'),
          JSON.stringify({ ...manifest, name: 'bin-package', binaries }),
        )
        const r = await yoke(p, ['add', src])
        assert.equal(r.code, 1, r.stdout)
        assert.match(r.stderr, /^INSTALL_PLATFORM /m)
        assert.match(r.stderr, what)
        assert.match(r.stderr, /hint The package ships no prebuilt executable for this machine/)
        assert.ok(!existsSync(p.path('.yoke/installed/bin-package')))
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})
