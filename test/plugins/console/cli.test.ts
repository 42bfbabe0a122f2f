// `yoke console` against a real `yoke dev` (the built CLI): it prints the URL the dev's console
// serves (with its token, which opens the API), and with no dev running it says so, with the fix,
// and exits 1. The dev prints the URL itself too (its log, its ready summary).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DevProcess, runYoke, suiteProjects } from '../../helpers/project.ts'

const project = suiteProjects()
const CONFIG = 'preset: minimal\nplugins:\n  console:\n    use: console\n'

describe('yoke console', () => {
  it('--print prints the running dev console URL; with no dev it says so and exits 1', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG })
    const dev = new DevProcess([], { cwd: p.dir, home: p.home })
    try {
      await dev.ready()
      const said = await dev.next(
        (e) => e.type === 'log' && /web console at/.test(e.message),
        60_000,
        0,
      )
      const printed = await runYoke(['console', '--print'], { cwd: p.dir, home: p.home })
      assert.equal(printed.code, 0, printed.stderr)
      const url = printed.stdout.trim()
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{43}$/)
      assert.ok(said.message.includes(url), said.message)
      const token = new URL(url).searchParams.get('token')!
      const snapshot = await fetch(new URL('/api/snapshot', url), {
        headers: { Authorization: `Bearer ${token}` },
      })
      assert.equal(snapshot.status, 200)
      assert.equal((await snapshot.json()).about.command, 'dev')
      const json = await runYoke(['console', '--json'], { cwd: p.dir, home: p.home })
      assert.equal(JSON.parse(json.stdout).url, url)
    } finally {
      await dev.stop()
    }
    const none = await runYoke(['console', '--print'], { cwd: p.dir, home: p.home })
    assert.equal(none.code, 1)
    assert.equal(none.stdout, '')
    assert.match(none.stderr, /no yoke dev runs this project.*start `yoke dev`/)
  })

  it('a dev whose console is off says why', async () => {
    const p = project({
      'yoke.config.yaml': CONFIG + '    config: { enabled: false }\n',
    })
    const dev = new DevProcess([], { cwd: p.dir, home: p.home })
    try {
      await dev.ready()
      const off = await runYoke(['console', '--print'], { cwd: p.dir, home: p.home })
      assert.equal(off.code, 1)
      assert.match(off.stderr, /serves no console: the console is turned off \(enabled: false\)/)
    } finally {
      await dev.stop()
    }
  })
})
