// yoke searches for the project config by itself (src/config/layers.ts) because cosmiconfig reads a
// candidate before anything checks it: a FIFO named .yokerc blocks that read forever. The rules
// users know are cosmiconfig's, so this file runs cosmiconfig itself, configured as yoke once
// configured it (yoke's names, the `project` strategy, loaders that only say "found"), over the same
// temp trees as yoke's search, and asserts that both find the same file. Where they differ on
// purpose, the difference is asserted by itself, with the reason beside it.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import {
  promises as fsp,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { after, describe, it } from 'node:test'
import { cosmiconfig, getDefaultSearchPlaces, type Options } from 'cosmiconfig'
import { loadLayers, PROJECT_CONFIG_PLACES } from '../../src/config/layers.ts'

const roots: string[] = []
after(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

/** A temp tree: path → content (a string ending in / is a directory). Returns its root. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'yoke-cosmiconfig-'))
  roots.push(root)
  for (const [path, content] of Object.entries(files)) {
    const file = join(root, path)
    if (path.endsWith('/')) mkdirSync(file, { recursive: true })
    else {
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, content)
    }
  }
  return root
}

/** The file yoke's search finds from `cwd` (relative to `root`; null: none). */
async function yokeFinds(root: string, cwd = '.'): Promise<string | null> {
  const stack = await loadLayers({ cwd: join(root, cwd), home: join(root, '.home'), check: false })
  return stack.projectFile ? relative(root, stack.projectFile) : null
}

const found = { found: true } // cosmiconfig only finds the file; what yoke reads is yoke's business

/** cosmiconfig as yoke used it before its own search (git c0b6f13 removed exactly this explorer). */
const asYokeDid: Partial<Options> = {
  searchPlaces: PROJECT_CONFIG_PLACES,
  searchStrategy: 'project',
  cache: false,
  loaders: {
    '.json': (file, content) => (basename(file) === 'package.json' ? JSON.parse(content) : found),
    '.yaml': () => found,
    '.yml': () => found,
    noExt: () => found,
  },
}

/** cosmiconfig with its own defaults (its names, package.json first); nothing is imported or run. */
const cosmiconfigDefaults: Partial<Options> = {
  searchStrategy: 'project',
  cache: false,
  loaders: Object.fromEntries(
    ['.js', '.ts', '.cjs', '.mjs', '.json', '.yaml', '.yml', 'noExt'].map((ext) => [
      ext,
      (file: string, content: string) =>
        basename(file) === 'package.json' ? JSON.parse(content) : found,
    ]),
  ),
}

async function cosmiconfigFinds(
  root: string,
  cwd = '.',
  options: Partial<Options> = asYokeDid,
): Promise<string | null> {
  const result = await cosmiconfig('yoke', options).search(join(root, cwd))
  return result ? relative(root, result.filepath) : null
}

/** Both searches from `cwd`: the same file, and the one expected. */
async function bothFind(root: string, cwd: string, expected: string | null, why: string) {
  const [ours, theirs] = [await yokeFinds(root, cwd), await cosmiconfigFinds(root, cwd)]
  assert.equal(ours, theirs, `${why}: yoke found ${ours}, cosmiconfig ${theirs}`)
  assert.equal(ours, expected, why)
}

const YAML = 'preset: minimal\n'
const JSON_TEXT = '{"preset": "minimal"}\n'
const textFor = (place: string) => (place.endsWith('.json') ? JSON_TEXT : YAML)
// every tree has its own package root, so no search leaves the temp directory
const STOP = { 'package.json': '{"name": "root"}\n' }

describe('the project config search finds what cosmiconfig finds', () => {
  it("each of yoke's names, alone in cwd", async () => {
    for (const place of PROJECT_CONFIG_PLACES.filter((p) => p !== 'package.json')) {
      const root = tree({ ...STOP, [place]: textFor(place) })
      await bothFind(root, '.', place, place)
    }
  })

  it('in the order of the names: with every later name present, the first one wins', async () => {
    const places = PROJECT_CONFIG_PLACES.filter((p) => p !== 'package.json')
    for (let i = 0; i < places.length; i++) {
      const files = Object.fromEntries(places.slice(i).map((p) => [p, textFor(p)]))
      const root = tree({ ...files, 'package.json': '{"name": "root", "yoke": {}}\n' })
      await bothFind(root, '.', places[i], `${places[i]} before ${places.slice(i + 1).join(', ')}`)
    }
  })

  it('searches the parents; the nearest file wins', async () => {
    const root = tree({
      ...STOP,
      '.yokerc.yaml': YAML,
      'a/yoke.config.json': JSON_TEXT,
      'a/b/': '',
    })
    await bothFind(root, 'a/b', 'a/yoke.config.json', 'the nearest parent')
    await bothFind(root, 'a', 'a/yoke.config.json', 'cwd itself')
    const far = tree({ ...STOP, '.config/yokerc': YAML, 'a/b/c/d/': '' })
    await bothFind(far, 'a/b/c/d', '.config/yokerc', 'four levels up')
  })

  it('stops at the first directory with a package.json or package.yaml, after searching it', async () => {
    const root = tree({
      ...STOP,
      '.yokerc.yaml': YAML,
      'pkg/package.json': '{"name": "pkg"}\n',
      'pkg/src/': '',
      'yamlpkg/package.yaml': 'name: yamlpkg\n',
      'yamlpkg/src/': '',
      'own/package.json': '{"name": "own"}\n',
      'own/config/yoke.yml': YAML,
      'own/src/': '',
    })
    await bothFind(root, 'pkg/src', null, 'the package root ends the search')
    await bothFind(root, 'yamlpkg/src', null, 'package.yaml ends it too')
    await bothFind(root, 'own/src', 'own/config/yoke.yml', "the package root's own config counts")
    await bothFind(root, 'pkg', null, 'from the package root itself')
  })

  it('package.json#yoke: found with the key, passed over (and the search stopped) without it', async () => {
    const root = tree({
      ...STOP,
      '.yokerc': YAML,
      'keyed/package.json': '{"name": "keyed", "yoke": {"preset": "minimal"}}\n',
      'keyed/src/': '',
      'falsy/package.json': '{"name": "falsy", "yoke": false}\n',
      'null/package.json': '{"name": "null", "yoke": null}\n',
      'null/src/': '',
    })
    await bothFind(root, 'keyed/src', 'keyed/package.json', 'the yoke key')
    await bothFind(root, 'falsy', 'falsy/package.json', 'a yoke key whose value is false')
    await bothFind(root, 'null/src', null, 'yoke: null is no key')
    await bothFind(root, '.', '.yokerc', 'a package.json without the key is not a config')
  })

  it('passes over directories and dangling links with a config name; follows a link to a file', async () => {
    const root = tree({
      ...STOP,
      'yoke.config.yaml/': '',
      '.yokerc.yml': YAML,
      'linked/real.yaml': YAML,
      'linked/sub/': '',
      'nowhere/.config/': '',
      'nowhere/.yokerc.json': JSON_TEXT,
    })
    symlinkSync('../real.yaml', join(root, 'linked/sub/.yokerc'))
    symlinkSync('missing.yaml', join(root, 'nowhere/yoke.config.yml'))
    await bothFind(root, '.', '.yokerc.yml', 'a directory named yoke.config.yaml')
    await bothFind(root, 'linked/sub', 'linked/sub/.yokerc', 'a link to a regular file')
    await bothFind(root, 'nowhere', 'nowhere/.yokerc.json', 'a link that leads nowhere')
  })

  it('a file where a directory would be (.config is a file) hides nothing else', async () => {
    const root = tree({ ...STOP, '.config': 'not a directory\n', 'config/yoke.json': JSON_TEXT })
    await bothFind(root, '.', 'config/yoke.json', '.config/… under a file')
  })

  it('a directory named package.json ends the search (both stat it) and is not read', async () => {
    const root = tree({ ...STOP, '.yokerc': YAML, 'odd/package.json/': '', 'odd/src/': '' })
    await bothFind(root, 'odd/src', null, 'package.json as a directory')
  })

  it('the home directory is no stop: the search runs on to the package root (as `project` does, not `global`)', async () => {
    const root = tree({ ...STOP, '.yokerc.yaml': YAML, 'home/me/work/': '' })
    await bothFind(root, 'home/me/work', '.yokerc.yaml', 'above a home directory')
    // cosmiconfig's `global` strategy is the one that stops at home (and then reads
    // ~/.config/yoke/config*, which yoke has as $YOKE_HOME/patch.yaml instead)
    const config = process.env.XDG_CONFIG_HOME
    process.env.XDG_CONFIG_HOME = join(root, 'xdg')
    try {
      const global = {
        ...asYokeDid,
        searchStrategy: 'global' as const,
        stopDir: join(root, 'home/me'),
      }
      assert.equal(await cosmiconfigFinds(root, 'home/me/work', global), null)
    } finally {
      if (config === undefined) delete process.env.XDG_CONFIG_HOME
      else process.env.XDG_CONFIG_HOME = config
    }
  })
})

describe('where yoke differs from cosmiconfig on purpose', () => {
  it("yoke's names are YAML and JSON only: a JS or TS config is not a candidate", async () => {
    // such a config is the project's code, run by the search itself before `yoke trust` could
    // ask, and an imported module does not reload (Node caches it: cosmiconfig #344), while the
    // project config hot-reloads
    const scripts = getDefaultSearchPlaces('yoke').filter((p) => /\.[cm]?[jt]s$/.test(p))
    assert.ok(scripts.length >= 12, scripts.join(', '))
    for (const place of scripts) {
      assert.ok(!PROJECT_CONFIG_PLACES.includes(place), place)
      const root = tree({ ...STOP, [place]: 'export default {}\n' })
      assert.equal(await cosmiconfigFinds(root, '.', cosmiconfigDefaults), place, place)
      assert.equal(await yokeFinds(root), null, `yoke does not take ${place}`)
    }
  })

  it('yoke adds yoke.config.*, .config/yoke.* and config/yoke.* as YAML and JSON', async () => {
    // cosmiconfig's own list has yoke.config.* only as scripts, and no bare .config/yoke.*;
    // config/yoke.yaml is for a project that keeps its configuration in config/ (this one does)
    const defaults = getDefaultSearchPlaces('yoke')
    const added = PROJECT_CONFIG_PLACES.filter((p) => !defaults.includes(p))
    assert.deepEqual(
      added,
      PROJECT_CONFIG_PLACES.filter((p) => /^(yoke\.config|\.config\/yoke|config\/yoke)\./.test(p)),
    )
    for (const place of added) {
      const root = tree({ ...STOP, [place]: textFor(place) })
      assert.equal(await cosmiconfigFinds(root, '.', cosmiconfigDefaults), null, place)
      assert.equal(await yokeFinds(root), place)
    }
  })

  it('package.json#yoke comes last: a config file beside it wins (cosmiconfig reads package.json first)', async () => {
    // a file that exists only to configure yoke says more than a key among a package's metadata;
    // and the search reads package.json (to see the key) only when no such file is there
    const root = tree({ '.yokerc.yaml': YAML, 'package.json': '{"name": "p", "yoke": {}}\n' })
    assert.equal(await cosmiconfigFinds(root, '.', cosmiconfigDefaults), 'package.json')
    assert.equal(await yokeFinds(root), '.yokerc.yaml')
  })

  it('an empty file is the project config (an empty layer); cosmiconfig reads it and passes over it', async () => {
    // yoke's search decides on names and stat alone, never on content: the file a user sees
    // beside their project is the one that counts, and a blank one says so by being blank
    const root = tree({ ...STOP, 'a/.yokerc.yaml': '  \n', '.yokerc.yaml': YAML })
    assert.equal(await cosmiconfigFinds(root, 'a'), '.yokerc.yaml')
    assert.equal(await yokeFinds(root, 'a'), 'a/.yokerc.yaml')
    const alike = { ...asYokeDid, ignoreEmptySearchPlaces: false }
    assert.equal(await cosmiconfigFinds(root, 'a', alike), 'a/.yokerc.yaml', 'told not to skip it')
  })

  it('a FIFO: yoke finds it without reading it and names it; cosmiconfig blocks in its read', async () => {
    // the reason yoke searches by itself: a read of a FIFO waits for a writer that never comes
    const root = tree({ ...STOP })
    const fifo = join(root, '.yokerc.yaml')
    const made = spawnSync('mkfifo', [fifo])
    assert.equal(made.status, 0, `mkfifo: ${made.stderr}`)
    const stack = await loadLayers({ cwd: root, home: join(root, '.home'), check: false })
    assert.equal(stack.projectFile, fifo)
    assert.ok(
      stack.errors.some((e) => e.message.includes(fifo) && /FIFO/.test(e.message)),
      stack.errors.map((e) => e.message).join('\n'),
    )
    const search = cosmiconfigFinds(root)
    const blocked = await Promise.race([
      search.then(() => false),
      new Promise<boolean>((done) => setTimeout(() => done(true), 300)),
    ])
    assert.ok(blocked, 'cosmiconfig is still reading the FIFO')
    // a writer that closes at once ends the read with nothing: then cosmiconfig finds it too
    const writer = await fsp.open(fifo, 'w')
    await writer.close()
    assert.equal(await search, null, 'an empty read is skipped as an empty file')
  })

  it('a link loop: both stop at that file; yoke finds it (its reader names it), cosmiconfig throws', async () => {
    const root = tree({ ...STOP, 'loop/': '' })
    symlinkSync('.yokerc', join(root, 'loop/.yokerc'))
    assert.equal(await yokeFinds(root, 'loop'), 'loop/.yokerc')
    await assert.rejects(cosmiconfigFinds(root, 'loop'), { code: 'ELOOP' })
  })

  it('a package.json that is not JSON ends the search with no config; cosmiconfig throws on it', async () => {
    // whether it has a yoke key cannot be told, and a broken package.json is npm's to report:
    // yoke reports only one it cannot read safely (a FIFO, over 1 MiB), as the config it may be
    const root = tree({ ...STOP, '.yokerc': YAML, 'bad/package.json': '{"name": ', 'bad/src/': '' })
    assert.equal(await yokeFinds(root, 'bad/src'), null)
    await assert.rejects(cosmiconfigFinds(root, 'bad/src'), (err: Error & { filepath?: string }) =>
      Boolean(err.filepath?.endsWith(join('bad', 'package.json'))),
    )
  })
})
