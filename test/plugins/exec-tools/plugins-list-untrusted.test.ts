/**
 * `yoke plugins list` in a project that is not trusted (issue 27, Deliver 4): the exec-tools
 * instance waits for `yoke trust`, so no package loads — and listing runs no code, so the command
 * lists the packages of the instance's directories from their manifest.json files, each marked
 * "waits for trust", names `yoke trust` on stderr and exits 0 (it used to throw the instance's
 * PLUGIN_WAITING and exit 2). The CLI runs from dist/ (`npm run build`), as a user runs it.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ROOT, runYoke, suiteProjects, type Project } from '../../helpers/project.ts'

// test/run.js trusts every project of the suite; these tests are about not being trusted
delete process.env.YOKE_TRUST

const projects = suiteProjects()
const TEXT_TOOLS = join(ROOT, 'examples', 'packages', 'text-tools')

/** A package whose executable, were it ever run, leaves `ran.txt` in the project. */
function markerPackage(p: Project, dir: string) {
  p.write(
    `${dir}/marker/manifest.json`,
    JSON.stringify({
      name: 'marker',
      version: '0.1.0',
      tools: [{ name: 'mark', description: 'marks', input_schema: { type: 'object' } }],
    }),
  )
  p.write(`${dir}/marker/marker`, `#!/bin/sh\ntouch ${JSON.stringify(p.path('ran.txt'))}\n`)
  chmodSync(p.path(`${dir}/marker/marker`), 0o755)
}

/** A project whose exec-tools instance `packages` reads ./pkgs (or the default directories). */
function project(config = '    config:\n      dirs: [./pkgs]\n') {
  const p = projects({
    'yoke.config.yaml': `preset: base\nplugins:\n  packages:\n    use: exec-tools\n${config}`,
  })
  cpSync(TEXT_TOOLS, p.path('pkgs/text-tools'), { recursive: true })
  markerPackage(p, 'pkgs')
  return p
}

const yoke = (p: Project, ...args: string[]) => runYoke(args, { cwd: p.dir, home: p.home })

const TRUST_LINE =
  /waiting 1 instance waits for trust: packages .*run `yoke trust` in .* \(--trust or YOKE_TRUST=1 trusts one run\)/

describe('yoke plugins list in an untrusted project', () => {
  it('lists the packages from their manifests, each waiting for trust, names `yoke trust`, exit 0', async () => {
    const p = project()
    const r = await yoke(p, 'plugins', 'list')
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /^text-tools 1\.0\.0 {2}waits for trust · signed$/m)
    assert.match(r.stdout, /^ {2}pkgs\/text-tools \(instance "packages"\)$/m)
    assert.match(r.stdout, /^ {2}tools: word_count, slugify$/m)
    assert.match(r.stdout, /^marker 0\.1\.0 {2}waits for trust$/m)
    assert.match(r.stdout, /instance "packages" is waiting: the project .* is not trusted yet/)
    assert.doesNotMatch(r.stdout + r.stderr, /PLUGIN_WAITING|no exec-tools instance/)
    assert.match(r.stderr, TRUST_LINE)
    assert.equal(existsSync(p.path('ran.txt')), false, 'listing ran a package executable')
  })

  it('--json: the packages with state "waiting", and a waiting field', async () => {
    const p = project()
    const r = await yoke(p, 'plugins', 'list', '--json')
    assert.equal(r.code, 0, r.stdout + r.stderr)
    const answer = JSON.parse(r.stdout) as {
      ok: boolean
      roots: string[]
      packages: Array<{ id: string; state: string; why: string; instance: string; tools: string[] }>
      waiting: Array<{ what: string; reason: string; trust: boolean }>
    }
    assert.equal(answer.ok, true)
    assert.deepEqual(answer.roots, [p.path('pkgs')])
    assert.deepEqual(answer.packages.map((x) => [x.id, x.state, x.why, x.instance]).sort(), [
      ['marker', 'waiting', 'waits for trust', 'packages'],
      ['text-tools', 'waiting', 'waits for trust', 'packages'],
    ])
    assert.deepEqual(
      answer.waiting.map((w) => [w.what, w.trust]),
      [['instance "packages"', true]],
    )
    assert.match(answer.waiting[0]!.reason, /not trusted yet.*yoke\.config\.yaml:4/)
    assert.match(r.stderr, TRUST_LINE)
  })

  it('reads as exec-tools would: shadowed ids, a broken manifest at file:line, a FIFO read without hanging', async () => {
    const p = project('    config:\n      dirs: [./pkgs, ./more]\n')
    cpSync(TEXT_TOOLS, p.path('more/text-tools'), { recursive: true })
    p.write('more/broken/manifest.json', '{\n  "name": "broken",\n  "version": 3\n}\n')
    p.write('more/fifo/.keep', '')
    execFileSync('mkfifo', [p.path('more/fifo/manifest.json')])
    const r = await yoke(p, 'plugins', 'list', '--json')
    assert.equal(r.code, 0, r.stdout + r.stderr)
    const { packages } = JSON.parse(r.stdout) as {
      packages: Array<{ id: string; dir: string; state: string; why: string; errors: unknown[] }>
    }
    const at = (dir: string) => packages.find((x) => x.dir === p.path(dir))!
    assert.equal(at('pkgs/text-tools').state, 'waiting')
    assert.equal(at('more/text-tools').state, 'shadowed')
    assert.equal(at('more/text-tools').why, `shadowed by ${p.path('pkgs/text-tools')}`)
    assert.equal(at('more/broken').state, 'failed')
    assert.match(JSON.stringify(at('more/broken').errors), /version/)
    assert.equal(at('more/fifo').state, 'failed')
    assert.match(JSON.stringify(at('more/fifo').errors), /not a regular file/)
    const text = await yoke(p, 'plugins', 'list')
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /^ {2}shadowed: shadowed by /m)
    assert.match(text.stdout, /^ {2}error more\/broken\/manifest\.json:\d+:\d+: /m)
  })

  it('without `dirs`: the default directories (the project skills folder among them)', async () => {
    const p = project('')
    cpSync(TEXT_TOOLS, p.path('skills/text-tools'), { recursive: true })
    const r = await yoke(p, 'plugins', 'list')
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /^text-tools 1\.0\.0 {2}waits for trust/m)
    assert.match(r.stdout, /^ {2}skills\/text-tools \(instance "packages"\)$/m)
    assert.doesNotMatch(r.stdout, /marker/) // ./pkgs is not a default directory
  })

  it('an instance waiting for a variable: says what it waits for, exit 0', async () => {
    const p = project('    config:\n      dirs: ["${PKGS_DIR_NOT_SET}"]\n')
    const r = await runYoke(['plugins', 'list'], {
      cwd: p.dir,
      home: p.home,
      env: { YOKE_TRUST: '1' },
    })
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /no packages in the package directories of the instance that waits/)
    assert.match(r.stdout, /the environment variable PKGS_DIR_NOT_SET is not set/)
    assert.match(r.stderr, /waiting .*PKGS_DIR_NOT_SET/)
  })

  it('trusted (one run): the same packages load, as before', async () => {
    const p = project()
    const r = await runYoke(['plugins', 'list'], {
      cwd: p.dir,
      home: p.home,
      env: { YOKE_TRUST: '1' },
    })
    assert.equal(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /^text-tools 1\.0\.0 {2}loaded/m)
    assert.doesNotMatch(r.stdout + r.stderr, /waits/)
  })
})
