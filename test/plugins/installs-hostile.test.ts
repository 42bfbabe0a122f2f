// yoke add and the installs plugin against material nobody here wrote (issue 27): a collection with
// LICENSE at its top, links that loop, a plugin whose Python hooks write __pycache__, a 3 GiB sparse
// file in an installed tree, hostile yoke.lock entries, exec packages on the CLI path, foreign
// binaries, a Codex plugin. The CLI runs from source (the build may be stale while we edit).
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { platformKey } from '../../plugins/installs/binaries.ts'
import { ROOT, suiteProjects, type Project, type RunResult } from '../helpers/project.ts'

const FIXTURES = join(ROOT, 'test', 'fixtures', 'installs')
const PACKAGES = join(ROOT, 'examples', 'packages')
const project = suiteProjects()

/** `yoke ...args` from source (src/cli/main.ts through tsx), bounded. */
function yoke(p: Project, args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  const main = join(p.dir, '.run-yoke.mjs')
  if (!existsSync(main))
    writeFileSync(
      main,
      `const { main } = await import(${JSON.stringify(join(ROOT, 'src/cli/main.ts'))})\nconst code = await main(process.argv.slice(2))\nprocess.stdout.write('', () => process.exit(code))\n`,
    )
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', import.meta.resolve('tsx'), '--conditions=yoke-source', main, ...args],
      {
        cwd: p.dir,
        env: { ...process.env, NO_COLOR: '1', YOKE_HOME: p.home, YOKE_TRUST: '1', ...env },
      },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.stdin.end()
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`yoke ${args.join(' ')} did not finish in 120 s\n${stdout}\n${stderr}`))
    }, 120_000)
    child.on('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** A folder of skills as public collections lay them out: LICENSE and README.md at the top. */
function collection(p: Project, rel = 'src/collection'): string {
  p.write(`${rel}/LICENSE`, 'MIT\n')
  p.write(`${rel}/README.md`, '# skills\n')
  p.write(`${rel}/pdf/SKILL.md`, '---\nname: pdf\ndescription: Read PDFs\n---\nUse it.\n')
  p.write(`${rel}/xlsx/SKILL.md`, '---\nname: xlsx\ndescription: Sheets\n---\nUse it.\n')
  return p.path(rel)
}

describe('yoke add of a folder from the wild', () => {
  it('a collection with LICENSE and README.md at its top installs (add and skills add)', async () => {
    const p = project()
    const src = collection(p)
    const added = await yoke(p, ['add', src])
    assert.equal(added.code, 0, added.stderr)
    assert.match(added.stdout, /added collection {2}\(skills\)/)
    const skills = await yoke(p, ['skills', 'add', src, '--name', 'again'])
    assert.equal(skills.code, 0, skills.stderr)
    assert.ok(existsSync(p.path('.yoke/installed/again/xlsx/SKILL.md')))
    // a plain file where a probe expects a folder (skills/ is a file) is "not there" too
    p.write('src/odd/skills', 'not a folder\n')
    p.write('src/odd/commands', 'not a folder\n')
    p.write('src/odd/SKILL.md/x', 'a folder named SKILL.md\n')
    const odd = await yoke(p, ['add', p.path('src/odd')])
    assert.equal(odd.code, 1)
    assert.match(odd.stderr, /^INSTALL_FAILED .*holds nothing yoke installs/m)
    assert.doesNotMatch(odd.stderr, /ENOTDIR|INTERNAL|not in the catalogue/)
  })

  it('links that loop (two links to ".") refuse the install, naming the link', async () => {
    const p = project()
    const src = collection(p)
    symlinkSync('.', join(src, 'a'))
    symlinkSync('.', join(src, 'b'))
    const r = await yoke(p, ['add', src])
    assert.equal(r.code, 1, r.stdout)
    assert.match(
      r.stderr,
      /^INSTALL_REFUSED .*the link (a|b) leads back to a folder that holds it/m,
    )
    assert.doesNotMatch(r.stderr, /ELOOP|\n {4}at /)
    // a link to a parent, as a repository that points plugins/NAME at itself
    const q = project()
    const loop = collection(q)
    mkdirSync(join(loop, 'plugins'))
    symlinkSync('..', join(loop, 'plugins', 'self'))
    const r2 = await yoke(q, ['add', loop])
    assert.equal(r2.code, 1)
    assert.match(r2.stderr, /the link plugins\/self leads back to a folder that holds it/)
    assert.ok(r2.stderr.length < 2000, r2.stderr)
  })

  it('every INSTALL_* error printed by the CLI has its own hint', async () => {
    const p = project()
    const r = await yoke(p, ['add', p.path('nowhere')])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /^INSTALL_FAILED /m)
    assert.match(r.stderr, /hint Check the source/)
    assert.doesNotMatch(r.stderr, /not in the catalogue/)
  })
})

describe('exec packages installed with yoke add, on the CLI path', () => {
  it('tools call and plugins list see an installed package', async () => {
    const p = project({ 'yoke.config.yaml': 'plugins:\n  packages:\n    use: exec-tools\n' })
    const added = await yoke(p, ['add', join(PACKAGES, 'text-tools')])
    assert.equal(added.code, 0, added.stderr)
    const listed = await yoke(p, ['tools', 'list'])
    assert.match(listed.stdout, /^word_count /m)
    const called = await yoke(p, [
      'tools',
      'call',
      'word_count',
      '--args',
      '{"text":"one two two"}',
      '--json',
    ])
    assert.equal(called.code, 0, called.stdout + called.stderr)
    assert.match(called.stdout, /two/)
    const plugins = await yoke(p, ['plugins', 'list'])
    assert.equal(plugins.code, 0, plugins.stderr)
    assert.match(plugins.stdout, /^text-tools 1\.0\.0 {2}loaded/m)
    assert.match(plugins.stdout, /from install text-tools \(project\)/)
  })

  it('with a preset that loads no exec packages, yoke add says so and how to fix it', async () => {
    const p = project()
    const added = await yoke(p, ['add', join(PACKAGES, 'sys-info')])
    assert.equal(added.code, 0, added.stderr)
    assert.ok(existsSync(p.path('.yoke/installed/sys-info/sys-info/manifest.json')))
    assert.match(added.stderr, /nothing in this project's composition loads exec packages/)
    assert.match(added.stderr, /packages:\s*\{ use: exec-tools \}/)
    // a skill needs nothing more: no such note
    const skill = await yoke(p, ['add', join(FIXTURES, 'hello-skill')])
    assert.doesNotMatch(skill.stderr, /loads/)
  })
})

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
    const { listTree, hashTree } = await import('../../plugins/installs/tree.ts')
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
    // a lock that fits the cap, with many entries, lists without a spread
    const some: Record<string, unknown> = {}
    for (let i = 0; i < 3_000; i++) some[`s${i}`] = entry(i)
    writeFileSync(p.path('yoke.lock'), JSON.stringify({ lockfileVersion: 1, installs: some }))
    const many = await yoke(p, ['installed', '--json'])
    assert.equal(many.code, 1)
    assert.equal(JSON.parse(many.stdout).installs.length, 3_000)
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
        ['/macho', /is a Mach-O executable \(macOS\)/],
        ['/pe', /is a PE executable \(Windows\)/],
        ['/elf-foreign', /is an ELF executable for (AArch64|x86_64)/],
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
      const { foreignFormat } = await import('../../plugins/installs/binaries.ts')
      const file = project().write('own', '')
      writeFileSync(file, bodies['/elf-own']!)
      assert.equal(foreignFormat(file, 'linux'), undefined)
      assert.match(foreignFormat(file, 'darwin') ?? '', /ELF executable .*\(Linux\)/)
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
})

describe('a Codex plugin', () => {
  it('its MCP servers under `mcp` (Codex mcp_servers shape) run, and the install takes its manifest name', async () => {
    const p = project()
    const memory = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js')
    p.write(
      'src/some-folder/.codex-plugin/plugin.json',
      JSON.stringify({
        name: 'codex-kit',
        version: '0.2.0',
        mcp: {
          memory: {
            command: process.execPath,
            args: [memory],
            env: { MEMORY_FILE_PATH: p.path('memory.jsonl') },
            tool_timeout_sec: 30,
          },
        },
      }),
    )
    p.write('src/some-folder/skills/notes/SKILL.md', '---\nname: notes\ndescription: n\n---\nx\n')
    const added = await yoke(p, ['add', p.path('src/some-folder')])
    assert.equal(added.code, 0, added.stderr)
    assert.match(added.stdout, /added codex-kit 0\.2\.0 \(claude-plugin\)/)
    assert.ok(existsSync(p.path('.yoke/installed/codex-kit/.codex-plugin/plugin.json')))
    const listed = await yoke(p, ['tools', 'list'])
    assert.equal(listed.code, 0, listed.stderr)
    assert.match(listed.stdout, /^mcp__plugin_codex-kit_memory__read_graph /m)
    const called = await yoke(p, ['tools', 'call', 'mcp__plugin_codex-kit_memory__read_graph'])
    assert.equal(called.code, 0, called.stdout + called.stderr)
  })
})
