// The capabilities commands against a running `yoke dev` (bin runs dist: npm run build first): a
// dynamic plugin the dev's global session defined shows in `yoke stats --all` and in `yoke
// inspect`'s capabilities section; `yoke pin` records its version and hash in the config, `yoke pin
// --list` says the pin holds, `yoke unpin` removes it; and a composition of its own (no dev)
// answers inspect's section and refuses an unknown id.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, describe, it } from 'node:test'
import type { Capability } from '../../../plugins/capabilities/api.ts'
import { DevProcess, runYoke, tempProject, type Project } from '../../helpers/project.ts'

const greeter = `export default {
  name: 'greeter',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'greet', description: 'Says hi', inputSchema: { type: 'object' }, execute: () => 'hi' })
  },
}
`
const CONFIG = 'plugins:\n  repository:\n    use: repository\n'

describe('capabilities commands (bin runs dist: npm run build first)', () => {
  const projects: Project[] = []
  const devs: DevProcess[] = []
  after(async () => {
    for (const d of devs) await d.stop()
    for (const p of projects) p.cleanup()
  })
  const project = () => {
    const p = tempProject({ 'yoke.config.yaml': CONFIG })
    projects.push(p)
    const yoke = (...args: string[]) => runYoke(args, { cwd: p.dir, home: p.home })
    return { p, yoke }
  }

  it('shows and pins a running dev’s dynamic plugin version', async () => {
    const { p, yoke } = project()
    const dev = new DevProcess([], { cwd: p.dir, home: p.home })
    devs.push(dev)
    await dev.ready(30_000)
    const define = await yoke(
      'tools',
      'call',
      'repository_define',
      '--args',
      JSON.stringify({ name: 'greeter', purpose: 'greets', source: greeter }),
    )
    assert.equal(define.code, 0, define.stderr)
    const hash = /sha256:[0-9a-f]{12}/.exec(define.stdout)![0]

    const stats = await yoke('stats', '--all', '--json')
    assert.equal(stats.code, 0, stats.stderr)
    const listed = (JSON.parse(stats.stdout) as { capabilities: Capability[] }).capabilities
    assert.deepEqual(
      listed.find((c) => c.id === 'repo:greeter'),
      { kind: 'plugin', id: 'repo:greeter', version: '1', hash, scope: 'global', state: 'defined' },
    )
    assert.match(
      (await yoke('stats', '--all')).stdout,
      /plugin {2}repo:greeter@1 sha256:\w+ {2}defined in global/,
    )

    const inspect = await yoke('inspect', '--json')
    const section = (JSON.parse(inspect.stdout) as { capabilities: Array<Record<string, unknown>> })
      .capabilities
    assert.ok(section.some((c) => c.id === 'repo:greeter' && c.version === '1' && c.hash === hash))
    assert.ok(section.some((c) => c.id === 'repository_define' && c.called === 1 && c.ok === 1))
    assert.match((await yoke('inspect')).stdout, /capabilities[\s\S]*repo:greeter@1\s+sha256:/)

    const pinned = await yoke('pin', 'repo:greeter', '--json')
    assert.equal(pinned.code, 0, pinned.stderr)
    assert.deepEqual(JSON.parse(pinned.stdout).pin, { id: 'repo:greeter', version: '1', hash })
    assert.match(
      readFileSync(p.path('yoke.config.yaml'), 'utf8'),
      new RegExp(`pins:\\s+- id: repo:greeter\\s+version: "1"\\s+hash: ${hash}`),
    )
    const list = await yoke('pin', '--list', '--json')
    assert.deepEqual(
      (JSON.parse(list.stdout) as { pins: Array<{ id: string; holds: boolean }> }).pins.map(
        ({ id, holds }) => [id, holds],
      ),
      [['repo:greeter', true]],
    )
    const audit = await yoke('audit', '--id', 'repo:*')
    assert.match(audit.stdout, /repository repo:greeter {2}∅ → 1 in global .*defined, not running/)
    assert.match(audit.stdout, /pin +repo:greeter {2}∅ → 1/)

    assert.equal((await yoke('unpin', 'repo:greeter')).code, 0)
    assert.doesNotMatch(readFileSync(p.path('yoke.config.yaml'), 'utf8'), /repo:greeter/)
    const again = await yoke('unpin', 'repo:greeter')
    assert.equal(again.code, 2)
    assert.match(again.stderr, /repo:greeter is not pinned; yoke pin --list shows the pins/)
  })

  it('composes inspect’s section without a dev, and refuses to pin what is not there', async () => {
    const { yoke } = project()
    const inspect = await yoke('inspect', '--json')
    assert.equal(inspect.code, 0, inspect.stderr)
    const section = JSON.parse(inspect.stdout).capabilities as Array<{ id: string; kind: string }>
    assert.ok(section.some((c) => c.id === 'repository_run' && c.kind === 'tool'))

    const unknown = await yoke('pin', 'repo:nothing')
    assert.equal(unknown.code, 1)
    assert.match(
      unknown.stderr,
      /CAPABILITY_UNKNOWN repo:nothing is not a capability of this project now/,
    )
    assert.match(unknown.stderr, /yoke stats --all/)
    const usage = await yoke('pin')
    assert.equal(usage.code, 2)
    assert.match(usage.stderr, /yoke pin takes the ID to pin/)
  })
})
