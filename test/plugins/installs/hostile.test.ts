// yoke add against material nobody here wrote (issue 27): a collection with LICENSE at its top,
// links that loop, the installs' error codes on the CLI path, exec packages on the CLI path (and
// a preset that loads none), a Codex plugin. The state checks are in installs-state.test.ts.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ROOT, runYoke, suiteProjects, type Project } from '../../helpers/project.ts'

const FIXTURES = join(ROOT, 'test', 'fixtures', 'installs')
const PACKAGES = join(ROOT, 'examples', 'packages')
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

describe('a marketplace that is not a file', () => {
  it('a FIFO as marketplace.json is refused, not read', async () => {
    const p = project()
    mkdirSync(p.path('market/.claude-plugin'), { recursive: true })
    execFileSync('mkfifo', [p.path('market/.claude-plugin/marketplace.json')])
    const r = await yoke(p, ['marketplace', 'add', p.path('market')])
    assert.equal(r.code, 1)
    assert.match(r.stderr, /^INSTALL_FAILED .*marketplace\.json is not a regular file/m)
  })
})
