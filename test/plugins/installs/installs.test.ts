// yoke add / update / remove with yoke.lock: folders, git repositories, tarballs and marketplaces
// served from a real HTTP server on 127.0.0.1, octos binaries, hostile tarballs, and the
// plugin's verification at load.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { after, before, describe, it } from 'node:test'
import { create as createTar, Header } from 'tar'
import { createYoke, YokeError } from '../../../src/index.ts'
import { add, remove, update, verify, type Options } from '../../../plugins/installs/install.ts'
import { projectScope, readLock, userScope } from '../../../plugins/installs/lock.ts'
import { platformKey } from '../../../plugins/installs/binaries.ts'
import { ROOT, runYoke, suiteProjects } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const FIXTURES = join(ROOT, 'test', 'fixtures', 'installs')
const project = suiteProjects()
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')

/** What the server answers, by path; changed by the tests as they go. */
const served = new Map<string, Buffer>()
let server: Server
let base = ''
before(async () => {
  server = createServer((req, res) => {
    const body = served.get(req.url ?? '')
    if (!body) return void res.writeHead(404).end('not found')
    res.writeHead(200, { 'content-length': body.length }).end(body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
after(() => new Promise<void>((resolve) => server.close(() => resolve())))

/** A project and the options `yoke add` would use in it. */
function setup() {
  const p = project()
  const scope = projectScope(p.dir)
  const options: Options = { scope, scopes: [scope, userScope(p.home)], cwd: p.dir }
  return { p, scope, options }
}

/** A copy of a fixture folder in the project, to change it without touching the fixture. */
function copyFixture(p: { path(rel: string): string }, name: string, as = name): string {
  const to = p.path(`src/${as}`)
  cpSync(join(FIXTURES, name), to, { recursive: true })
  return to
}

/** A .tgz of a folder, entries under `prefix/` as release tarballs have them. */
async function tgzOf(dir: string, prefix: string): Promise<Buffer> {
  const parent = join(dir, '..')
  const file = join(parent, `${prefix}.tgz`)
  const staged = join(parent, `.tar-${prefix}`)
  rmSync(staged, { recursive: true, force: true })
  cpSync(dir, join(staged, prefix), { recursive: true })
  await createTar({ gzip: true, file, cwd: staged, portable: true }, [prefix])
  rmSync(staged, { recursive: true, force: true })
  return readFileSync(file)
}

/** A gzipped tar written header by header: entries a well-behaved packer would never make. */
function rawTgz(
  entries: Array<{
    path: string
    type?: 'File' | 'SymbolicLink'
    linkpath?: string
    body?: string
  }>,
): Buffer {
  const blocks: Buffer[] = []
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '')
    const header = Buffer.alloc(512)
    new Header({
      path: e.path,
      type: e.type ?? 'File',
      size: e.type === 'SymbolicLink' ? 0 : body.length,
      mode: 0o644,
      mtime: new Date(0),
      ...(e.linkpath && { linkpath: e.linkpath }),
    }).encode(header, 0)
    blocks.push(header)
    if (e.type !== 'SymbolicLink' && body.length) {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512))
    }
  }
  blocks.push(Buffer.alloc(1024))
  return gzipSync(Buffer.concat(blocks))
}

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com',
      GIT_CONFIG_GLOBAL: '/dev/null',
    },
  }).trim()

function setVersion(skillDir: string, version: string) {
  const file = join(skillDir, 'SKILL.md')
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace(/version: '[^']*'/, `version: '${version}'`),
  )
}

async function refused(work: Promise<unknown>, code: string, pattern: RegExp) {
  await assert.rejects(work, (err: unknown) => {
    assert.ok(err instanceof YokeError, String(err))
    assert.equal(err.code, code, err.message)
    assert.match(err.message, pattern)
    return true
  })
}

describe('yoke add from a folder', () => {
  it('copies the skill, records it in yoke.lock with a hash of the tree, and refuses a second add', async () => {
    const { p, scope, options } = setup()
    const added = await add(join(FIXTURES, 'hello-skill'), options)
    assert.equal(added.entry.kind, 'skill')
    assert.equal(added.entry.version, '1.0.0')
    const dir = join(scope.installed, 'hello-skill')
    assert.ok(
      existsSync(join(dir, 'hello-skill', 'SKILL.md')),
      'a skill sits in a folder of skills',
    )
    assert.equal(statSync(join(dir, 'hello-skill', 'scripts', 'greet.sh')).mode & 0o777, 0o755)
    const lock = readLock(p.path('yoke.lock'))
    assert.deepEqual(Object.keys(lock.installs['hello-skill']!), [
      'name',
      'kind',
      'version',
      'source',
      'sha256',
      'installedAt',
    ])
    assert.equal(lock.installs['hello-skill']!.source.type, 'folder')
    assert.match(lock.installs['hello-skill']!.sha256, /^[0-9a-f]{64}$/)
    assert.deepEqual(await verify(lock.installs['hello-skill']!, scope), { dir, ok: true })
    await refused(
      add(join(FIXTURES, 'hello-skill'), options),
      'INSTALL_FAILED',
      /installed already .*yoke update hello-skill.*--force/,
    )
    const forced = await add(join(FIXTURES, 'hello-skill'), { ...options, force: true })
    assert.equal(forced.replaced?.name, 'hello-skill')
  })

  it('--name installs beside; remove takes the folder and the entry away', async () => {
    const { p, scope, options } = setup()
    await add(join(FIXTURES, 'hello-skill'), options)
    await add(join(FIXTURES, 'hello-skill'), { ...options, name: 'hello-two' })
    assert.ok(existsSync(join(scope.installed, 'hello-two', 'hello-two', 'SKILL.md')))
    const removed = await remove('hello-skill', scope)
    assert.equal(removed.name, 'hello-skill')
    assert.equal(existsSync(join(scope.installed, 'hello-skill')), false)
    assert.deepEqual(Object.keys(readLock(p.path('yoke.lock')).installs), ['hello-two'])
    await refused(
      remove('hello-skill', scope),
      'INSTALL_FAILED',
      /not in .*yoke\.lock \(it has hello-two\)/,
    )
  })

  it('an exec package, a Claude Code plugin and .agents/skills (npx skills) each get their kind', async () => {
    const { scope, options } = setup()
    const pkg = await add(join(FIXTURES, 'echo-package'), options)
    assert.deepEqual([pkg.entry.kind, pkg.entry.version], ['exec-package', '0.3.0'])
    assert.ok(existsSync(join(scope.installed, 'echo-package', 'echo-package', 'manifest.json')))
    const plugin = await add(join(FIXTURES, 'claude-plugin'), options)
    assert.deepEqual(
      [plugin.entry.name, plugin.entry.kind, plugin.entry.version],
      ['review-kit', 'claude-plugin', '2.1.0'],
    )
    assert.ok(existsSync(join(scope.installed, 'review-kit', '.claude-plugin', 'plugin.json')))
    const skills = await add(join(FIXTURES, 'npx-project'), {
      ...options,
      kinds: ['skill', 'skills'],
    })
    assert.deepEqual(
      [skills.entry.name, skills.entry.kind, skills.entry.source.subdir],
      ['npx-project', 'skills', '.agents/skills'],
    )
    assert.deepEqual(readdirSync(join(scope.installed, 'npx-project')).sort(), ['alpha', 'beta'])
    await refused(
      add(join(FIXTURES, 'echo-package'), { ...options, name: 'x', kinds: ['skill', 'skills'] }),
      'INSTALL_FAILED',
      /is a exec-package, not skill or skills/,
    )
  })

  it('a link that leads out of the source refuses the install; two adds at once both land in the lock', async () => {
    const { p, scope, options } = setup()
    const src = copyFixture(p, 'hello-skill')
    execFileSync('ln', ['-s', '/etc/hostname', join(src, 'leak')])
    await refused(add(src, options), 'INSTALL_REFUSED', /the link leak leads outside it/)
    assert.equal(existsSync(join(scope.installed, 'hello-skill')), false)
    rmSync(join(src, 'leak'))
    await Promise.all([
      add(src, { ...options, name: 'one' }),
      add(src, { ...options, name: 'two' }),
    ])
    assert.deepEqual(Object.keys(readLock(p.path('yoke.lock')).installs), ['one', 'two'])
  })
})

describe('yoke add from a git repository', () => {
  it('clones at #ref, records the commit, and update fetches the new commit with what changed', async () => {
    const { p, options } = setup()
    const repo = copyFixture(p, 'hello-skill')
    git(repo, 'init', '--quiet', '--initial-branch=main')
    git(repo, 'add', '.')
    git(repo, 'commit', '--quiet', '-m', 'v1')
    git(repo, 'tag', 'v1')
    const first = git(repo, 'rev-parse', 'HEAD')
    const pinned = await add(`${repo}#v1`, { ...options, name: 'pinned' })
    assert.deepEqual(
      [pinned.entry.source.type, pinned.entry.source.ref, pinned.entry.source.commit],
      ['git', 'v1', first],
    )
    const tracking = await add(`file://${repo}`, { ...options, name: 'tracking' })
    assert.equal(tracking.entry.source.commit, first)

    setVersion(repo, '1.1.0')
    writeFileSync(join(repo, 'NOTES.md'), 'new\n')
    rmSync(join(repo, 'scripts'), { recursive: true })
    git(repo, 'add', '-A')
    git(repo, 'commit', '--quiet', '-m', 'v1.1')
    const [kept, moved] = await update(['pinned', 'tracking'], options)
    assert.equal(kept!.status, 'up to date', 'a tag stays where it is')
    assert.equal(moved!.status, 'updated')
    assert.deepEqual([moved!.from.version, moved!.to.version], ['1.0.0', '1.1.0'])
    assert.deepEqual(moved!.diff, {
      added: ['tracking/NOTES.md'],
      changed: ['tracking/SKILL.md'],
      removed: ['tracking/scripts/greet.sh'],
    })
    assert.equal(
      readLock(p.path('yoke.lock')).installs.tracking!.source.commit,
      git(repo, 'rev-parse', 'HEAD'),
    )
    assert.equal((await update(['tracking'], options))[0]!.status, 'up to date')
  })
})

describe('yoke add from a tarball over HTTP', () => {
  it('downloads and unpacks it; update says what changed', async () => {
    const { p, scope, options } = setup()
    const src = copyFixture(p, 'hello-skill')
    served.set('/hello-skill-1.0.0.tgz', await tgzOf(src, 'hello-skill'))
    const url = `${base}/hello-skill-1.0.0.tgz`
    const added = await add(url, options)
    assert.deepEqual(
      [added.entry.name, added.entry.source.type, added.entry.source.location],
      ['hello-skill', 'tarball', url],
    )
    assert.ok(
      existsSync(join(scope.installed, 'hello-skill', 'hello-skill', 'scripts', 'greet.sh')),
    )
    setVersion(src, '2.0.0')
    served.set('/hello-skill-1.0.0.tgz', await tgzOf(src, 'hello-skill'))
    const [r] = await update([], options)
    assert.deepEqual([r!.status, r!.from.version, r!.to.version], ['updated', '1.0.0', '2.0.0'])
    assert.deepEqual(r!.diff.changed, ['hello-skill/SKILL.md'])
    served.delete('/hello-skill-1.0.0.tgz')
    await refused(update([], options), 'INSTALL_FAILED', /server answered 404/)
    assert.equal(
      readLock(p.path('yoke.lock')).installs['hello-skill']!.version,
      '2.0.0',
      'a failed update changes nothing',
    )
  })

  it('refuses hostile tarballs before writing anything', async () => {
    const { p, scope, options } = setup()
    const cases: Array<[string, Parameters<typeof rawTgz>[0], RegExp]> = [
      [
        'dotdot',
        [
          { path: 'pkg/SKILL.md', body: '---\nname: pkg\n---\n' },
          { path: 'pkg/../../evil.txt', body: 'x' },
        ],
        /leads outside the archive/,
      ],
      ['abs', [{ path: '/tmp/evil-abs.txt', body: 'x' }], /absolute path/],
      [
        'link-out',
        [
          { path: 'pkg/SKILL.md', body: 'x' },
          { path: 'pkg/passwd', type: 'SymbolicLink', linkpath: '../../../../etc/passwd' },
        ],
        /links to .*outside the archive/,
      ],
      [
        'link-abs',
        [
          { path: 'pkg/SKILL.md', body: 'x' },
          { path: 'pkg/passwd', type: 'SymbolicLink', linkpath: '/etc/passwd' },
        ],
        /links to the absolute path/,
      ],
    ]
    for (const [name, entries, pattern] of cases) {
      served.set(`/${name}.tgz`, rawTgz(entries))
      await refused(add(`${base}/${name}.tgz`, { ...options, name }), 'INSTALL_REFUSED', pattern)
    }
    assert.equal(existsSync(p.path('../evil.txt')), false)
    assert.ok(!existsSync(scope.installed) || readdirSync(scope.installed).length === 0)
    assert.equal(existsSync(p.path('yoke.lock')), false)
  })
})

describe('marketplaces', () => {
  it('installs ./path and archive entries of a folder marketplace, and the archive sha256 is checked', async () => {
    const { p, scope, options } = setup()
    const market = copyFixture(p, 'marketplace')
    const plugin = copyFixture(p, 'claude-plugin')
    const archive = await tgzOf(plugin, 'review-kit')
    served.set('/review-kit.tgz', archive)
    const file = join(market, '.claude-plugin', 'marketplace.json')
    const doc = JSON.parse(readFileSync(file, 'utf8'))
    doc.plugins.push(
      {
        name: 'review-kit',
        source: { source: 'archive', url: `${base}/review-kit.tgz`, sha256: sha256(archive) },
      },
      {
        name: 'review-bad',
        source: { source: 'archive', url: `${base}/review-kit.tgz`, sha256: '0'.repeat(64) },
      },
      {
        name: 'inline',
        source: './plugins/formatter',
        strict: false,
        version: '9.0.0',
        description: 'defined here',
      },
    )
    writeFileSync(file, JSON.stringify(doc))
    const { readMarketplace } = await import('../../../plugins/installs/marketplace.ts')
    const { updateLock } = await import('../../../plugins/installs/lock.ts')
    const read = await readMarketplace(market)
    await updateLock(scope.lock, (lock) => {
      lock.marketplaces[read.name] = { name: read.name, source: market, addedAt: 'now' }
    })

    const formatter = await add('formatter@team-tools', options)
    assert.deepEqual(
      [
        formatter.entry.kind,
        formatter.entry.version,
        formatter.entry.source.marketplace,
        formatter.entry.source.entry,
      ],
      ['claude-plugin', '1.4.0', 'team-tools', 'formatter'],
    )
    assert.ok(existsSync(join(scope.installed, 'formatter', 'commands', 'format.md')))
    assert.equal(
      (await add('formatter-short@team-tools', options)).entry.source.location,
      join(market, 'plugins', 'formatter'),
      'pluginRoot',
    )
    const kit = await add('review-kit@team-tools', options)
    assert.deepEqual([kit.entry.source.type, kit.entry.version], ['tarball', '2.1.0'])
    await refused(
      add('review-bad@team-tools', options),
      'INSTALL_REFUSED',
      /does not match its pinned sha256/,
    )
    assert.equal(existsSync(join(scope.installed, 'review-bad')), false)
    await refused(
      add('escape@team-tools', options),
      'INSTALL_FAILED',
      /leads outside the marketplace's folder/,
    )
    await refused(
      add('nope@team-tools', options),
      'INSTALL_FAILED',
      /has no entry nope; it offers formatter, formatter-short/,
    )
    await refused(
      add('x@elsewhere', options),
      'INSTALL_FAILED',
      /no marketplace named elsewhere is added/,
    )
    const inline = await add('inline@team-tools', options)
    assert.equal(inline.entry.version, '9.0.0')
    assert.deepEqual(
      JSON.parse(
        readFileSync(join(scope.installed, 'inline', '.claude-plugin', 'plugin.json'), 'utf8'),
      ),
      {
        name: 'inline',
        version: '9.0.0',
        description: 'defined here',
      },
    )
  })

  it('a marketplace served over HTTP: archive entries install, path entries are refused with why', async () => {
    const { scope, options, p } = setup()
    const archive = await tgzOf(copyFixture(p, 'hello-skill'), 'hello-skill')
    served.set('/skills.tgz', archive)
    served.set(
      '/marketplace.json',
      Buffer.from(
        JSON.stringify({
          name: 'remote',
          owner: { name: 'R' },
          plugins: [
            {
              name: 'hello',
              source: { source: 'archive', url: `${base}/skills.tgz`, sha256: sha256(archive) },
            },
            { name: 'local', source: './plugins/local' },
          ],
        }),
      ),
    )
    const { updateLock } = await import('../../../plugins/installs/lock.ts')
    await updateLock(scope.lock, (lock) => {
      lock.marketplaces.remote = {
        name: 'remote',
        source: `${base}/marketplace.json`,
        addedAt: 'now',
      }
    })
    const hello = await add('hello@remote', options)
    assert.equal(hello.entry.name, 'hello')
    await refused(
      add('local@remote', options),
      'INSTALL_FAILED',
      /a marketplace read from a URL has no files beside it/,
    )
  })
})

describe('marketplace entries from git and npm', () => {
  it('github (through YOKE_GITHUB_URL, a mirror), git-subdir with a pinned sha, and npm (npm pack)', async () => {
    const { p, scope, options } = setup()
    const repo = p.path('gh/acme/tools')
    mkdirSync(repo, { recursive: true })
    cpSync(join(FIXTURES, 'claude-plugin'), join(repo, 'review-kit'), { recursive: true })
    cpSync(join(FIXTURES, 'hello-skill'), join(repo, 'skills', 'hello-skill'), { recursive: true })
    git(repo, 'init', '--quiet', '--initial-branch=main')
    git(repo, 'add', '.')
    git(repo, 'commit', '--quiet', '-m', 'one')
    const commit = git(repo, 'rev-parse', 'HEAD')
    git(p.path('gh/acme'), 'clone', '--quiet', '--bare', 'tools', 'tools.git')
    // npm pack reads a folder as it reads a registry package: no network needed for it
    cpSync(join(FIXTURES, 'claude-plugin'), p.path('npm-package'), { recursive: true })
    writeFileSync(p.path('npm-package/package.json'), '{"name":"review-kit-npm","version":"3.0.0"}')
    const market = p.path('market')
    mkdirSync(join(market, '.claude-plugin'), { recursive: true })
    writeFileSync(
      join(market, '.claude-plugin', 'marketplace.json'),
      JSON.stringify({
        name: 'mixed',
        owner: { name: 'M' },
        plugins: [
          { name: 'whole', source: { source: 'github', repo: 'acme/tools' } },
          {
            name: 'sub',
            source: { source: 'git-subdir', url: repo, path: 'review-kit', sha: commit },
          },
          {
            name: 'stale',
            source: { source: 'git-subdir', url: repo, path: 'review-kit', sha: '0'.repeat(40) },
          },
          { name: 'packed', source: { source: 'npm', package: p.path('npm-package') } },
        ],
      }),
    )
    const { updateLock } = await import('../../../plugins/installs/lock.ts')
    await updateLock(scope.lock, (lock) => {
      lock.marketplaces.mixed = { name: 'mixed', source: market, addedAt: 'now' }
    })
    const saved = process.env.YOKE_GITHUB_URL
    process.env.YOKE_GITHUB_URL = `file://${p.path('gh')}`
    try {
      const whole = await add('whole@mixed', options)
      assert.deepEqual([whole.entry.source.type, whole.entry.source.commit], ['git', commit])
    } finally {
      if (saved === undefined) delete process.env.YOKE_GITHUB_URL
      else process.env.YOKE_GITHUB_URL = saved
    }
    const sub = await add('sub@mixed', options)
    assert.deepEqual([sub.entry.version, sub.entry.source.subdir], ['2.1.0', 'review-kit'])
    assert.ok(existsSync(join(scope.installed, 'sub', 'commands', 'review.md')))
    await refused(add('stale@mixed', options), 'INSTALL_FAILED', /has no ref or commit 0{40}/)
    const packed = await add('packed@mixed', options)
    assert.deepEqual(
      [packed.entry.source.type, packed.entry.source.location],
      ['npm', 'review-kit-npm@3.0.0'],
    )
    assert.ok(
      existsSync(join(scope.installed, 'packed', 'package.json')),
      'unwrapped from package/',
    )
    assert.equal(packed.entry.kind, 'claude-plugin', 'a marketplace entry is a plugin')
  })
})

describe('octos binaries', () => {
  async function packageWith(binaries: Record<string, { url: string; sha256?: string }>) {
    const { p, scope, options } = setup()
    const src = copyFixture(p, 'echo-package', 'bin-package')
    rmSync(join(src, 'main'))
    const manifest = JSON.parse(readFileSync(join(src, 'manifest.json'), 'utf8'))
    writeFileSync(
      join(src, 'manifest.json'),
      JSON.stringify({ ...manifest, name: 'bin-package', binaries }),
    )
    return { src, scope, options, p }
  }
  const program = Buffer.from('#!/bin/sh\necho prebuilt\n')

  it("installs this machine's entry as main (755) and hashes it with the tree", async () => {
    served.set('/bin/echo', program)
    const { src, scope, options } = await packageWith({
      [platformKey()]: { url: `${base}/bin/echo`, sha256: sha256(program) },
      'windows-x86_64': { url: `${base}/bin/echo.exe`, sha256: '1'.repeat(64) },
    })
    const added = await add(src, options)
    const main = join(scope.installed, 'bin-package', 'bin-package', 'main')
    assert.deepEqual(readFileSync(main), program)
    assert.equal(statSync(main).mode & 0o777, 0o755)
    assert.deepEqual(added.entry.source.binary, {
      platform: platformKey(),
      url: `${base}/bin/echo`,
      sha256: sha256(program),
    })
    writeFileSync(main, '#!/bin/sh\necho swapped\n')
    assert.equal((await verify(added.entry, scope)).ok, false, 'the executable is part of the hash')
  })

  it('octos spellings match too; a tarball entry gives its one file', async () => {
    served.set('/bin/echo.tgz', rawTgz([{ path: 'echo-1.0/echo', body: program.toString() }]))
    const key = platformKey().replace('darwin', 'macos')
    const { src, scope, options } = await packageWith({ [key]: { url: `${base}/bin/echo.tgz` } })
    const added = await add(src, options)
    assert.deepEqual(
      readFileSync(join(scope.installed, 'bin-package', 'bin-package', 'main')),
      program,
    )
    assert.match(added.warnings.join('\n'), /pins no sha256/)
  })

  it('a wrong sha256 installs nothing; no entry for this platform lists the ones offered', async () => {
    served.set('/bin/echo', program)
    const bad = await packageWith({
      [platformKey()]: { url: `${base}/bin/echo`, sha256: 'f'.repeat(64) },
    })
    await refused(add(bad.src, bad.options), 'INSTALL_REFUSED', /does not match its pinned sha256/)
    assert.equal(existsSync(join(bad.scope.installed, 'bin-package')), false)
    assert.equal(existsSync(bad.p.path('yoke.lock')), false)
    const none = await packageWith({
      'plan9-mips': { url: `${base}/bin/x`, sha256: '1'.repeat(64) },
      'haiku-x86_64': { url: `${base}/bin/y` },
    })
    await refused(
      add(none.src, none.options),
      'INSTALL_PLATFORM',
      new RegExp(
        `no prebuilt executable for this machine \\(${platformKey()}\\): its manifest.json offers plan9-mips, haiku-x86_64`,
      ),
    )
  })
})

describe('the installs plugin at load', () => {
  it('registers verified skills; a tampered one is refused naming the lock and the fix; the watch follows edits', async () => {
    const { p, scope, options } = setup()
    await add(join(FIXTURES, 'hello-skill'), options)
    await add(join(FIXTURES, 'npx-project'), options)
    writeFileSync(
      join(scope.installed, 'npx-project', 'beta', 'SKILL.md'),
      '---\nname: beta\ndescription: changed\n---\nx\n',
    )
    const logs: string[] = []
    const yoke = createYoke({
      cwd: p.dir,
      home: p.home,
      env: { ...process.env, YOKE_HOME: p.home },
      onLog: (r) => logs.push(`${r.level} ${r.message}`),
    })
    try {
      await yoke.ready
      const names = () => (yoke.get('skills')?.list() ?? []).map((s) => s.name).sort()
      assert.deepEqual(names(), ['hello-skill'])
      const tamper = logs.find((l) => l.startsWith('error install npx-project'))
      assert.ok(tamper, logs.join('\n'))
      assert.match(
        tamper,
        /yoke\.lock\) is refused: the files in .*npx-project do not match its sha256/,
      )
      assert.match(
        tamper,
        /`yoke update npx-project` fetches it again, `yoke add .*npx-project --force`/,
      )
      const states = Object.fromEntries(
        yoke
          .get('installs')!
          .list()
          .map((s) => [s.entry.name, s.state]),
      )
      assert.deepEqual(states, { 'hello-skill': 'registered', 'npx-project': 'tampered' })

      await update(['npx-project'], options)
      await until('the restored skills to load', () => names().join() === 'alpha,beta,hello-skill')
      await remove('hello-skill', scope)
      await until('the removed skill to go', () => names().join() === 'alpha,beta')
    } finally {
      await yoke.close()
    }
  })
  it('hands exec packages to execTools and Claude Code plugins to claudePlugins; skips a kind with no service', async () => {
    const { p, options } = setup()
    await add(join(FIXTURES, 'echo-package'), options)
    await add(join(FIXTURES, 'claude-plugin'), options)
    const compose = async (config: string) => {
      p.write('yoke.config.yaml', config)
      const logs: string[] = []
      const yoke = createYoke({
        cwd: p.dir,
        home: p.home,
        onLog: (r) => logs.push(`${r.level} ${r.message}`),
      })
      await yoke.ready
      return { yoke, logs }
    }
    const full = await compose(
      'plugins:\n  packages:\n    use: exec-tools\n    config: { dirs: [] }\n  claude:\n    use: claude-plugins\n',
    )
    try {
      await until('the package to load', () =>
        (full.yoke.get('execTools')?.list() ?? []).some(
          (i) => i.id === 'echo-package' && i.state === 'loaded',
        ),
      )
      assert.ok(full.yoke.tools().some((t) => t.name === 'echo_text'))
      assert.deepEqual(
        (full.yoke.get('claudePlugins')?.list() ?? []).map((f) => [f.name, f.version]),
        [['review-kit', '2.1.0']],
      )
    } finally {
      await full.yoke.close()
    }
    const bare = await compose('plugins: {}\n')
    try {
      const states = Object.fromEntries(
        bare.yoke
          .get('installs')!
          .list()
          .map((s) => [s.entry.name, s]),
      )
      assert.equal(states['echo-package']!.state, 'skipped')
      assert.match(states['echo-package']!.why!, /no execTools service/)
      assert.ok(
        bare.logs.some((l) => /^warn installs of kind exec-package .* are skipped/.test(l)),
        bare.logs.join('\n'),
      )
    } finally {
      await bare.yoke.close()
    }
  })
})

describe('the commands', () => {
  it('yoke add, update, installed and remove print what they did', async () => {
    const { p } = setup()
    const src = copyFixture(p, 'hello-skill')
    const run = (...args: string[]) => runYoke(args, { cwd: p.dir, home: p.home })
    const added = await run('add', src)
    assert.equal(added.code, 0, added.stderr)
    assert.match(added.stdout, /^✓ added hello-skill 1\.0\.0 \(skill\)$/m)
    assert.match(
      added.stdout,
      /\.yoke\/installed\/hello-skill · sha256 [0-9a-f]{12}… · recorded in yoke\.lock/,
    )
    assert.match(
      (await run('update')).stdout,
      /^hello-skill: up to date \(1\.0\.0, sha256 [0-9a-f]{12}…\)$/m,
    )
    setVersion(src, '1.2.0')
    const updated = await run('update', 'hello-skill')
    assert.match(
      updated.stdout,
      /^hello-skill: 1\.0\.0 → 1\.2\.0, sha256 [0-9a-f]{12}… → [0-9a-f]{12}…\n {2}changed: hello-skill\/SKILL\.md$/m,
    )
    writeFileSync(p.path('.yoke/installed/hello-skill/hello-skill/extra.txt'), 'x')
    const listed = await run('installed', '--json')
    assert.equal(listed.code, 1)
    assert.match(JSON.parse(listed.stdout).installs[0].why, /do not match its sha256/)
    const gone = await run('remove', 'hello-skill')
    assert.equal(gone.code, 0, gone.stderr)
    assert.match(
      gone.stdout,
      /^removed hello-skill \(skill\) from yoke\.lock and \.yoke\/installed\/hello-skill$/m,
    )
    const market = await run('marketplace', 'add', join(FIXTURES, 'marketplace'))
    assert.match(
      market.stdout,
      /added marketplace team-tools \(3 plugins: formatter, formatter-short, escape\)/,
    )
    assert.match(
      (await run('marketplace', 'list')).stdout,
      /^ {2}formatter@team-tools · Formats code$/m,
    )
    const skills = await run('skills', 'add', join(FIXTURES, 'npx-project'), '--user')
    assert.equal(skills.code, 0, skills.stderr)
    assert.ok(existsSync(join(p.home, 'installed', 'npx-project', 'alpha', 'SKILL.md')))
    const bad = await run('add', p.path('nowhere'))
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /nowhere is not a folder, a git repository, a tarball/)
  })
})
