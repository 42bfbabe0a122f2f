// The web console's server at the HTTP level: a real server on loopback in a real composition (a
// local tools plugin, policy, the console), no browser. Who may talk to it (token, Host, Origin,
// CSRF), what it serves (the page folder only), the snapshot, the event stream, running a tool
// through the pipeline, and approvals answered from the browser racing another bridge.
import assert from 'node:assert/strict'
import { symlinkSync } from 'node:fs'
import { describe, it } from 'node:test'
import { bearer, CONFIG, http, launcher, postJson, sse } from './helpers.ts'

const launch = launcher()

describe('console: who may talk to it', () => {
  it('no token, or a wrong one, is 401 with how to get the URL; the right one is 200', async () => {
    const { port, token, url } = await launch()
    assert.equal(url.listening, true)
    assert.match(
      url.url!,
      new RegExp(`^http://127\\.0\\.0\\.1:${port}/\\?token=[A-Za-z0-9_-]{43}$`),
    )
    for (const path of ['/api/snapshot', '/', '/api/events']) {
      const none = await http(port, path)
      assert.equal(none.status, 401, path)
      assert.equal(none.json().error.code, 'UNAUTHORIZED')
      assert.match(none.json().error.hint, /yoke console/)
    }
    const wrong = await http(port, '/api/snapshot', { headers: bearer(token.slice(0, -1) + 'x') })
    assert.equal(wrong.status, 401)
    assert.match(wrong.json().error.message, /not this console's/)
    assert.equal((await http(port, `/api/snapshot?token=${token}x`)).status, 401)
    assert.equal((await http(port, '/api/snapshot', { headers: bearer(token) })).status, 200)
    assert.equal((await http(port, `/api/snapshot?token=${token}`)).status, 200)
  })

  it('a foreign Host (DNS rebinding) or Origin (another site) is 403, even with the token', async () => {
    const { port, token } = await launch()
    const rebound = await http(port, '/api/snapshot', {
      headers: { ...bearer(token), Host: `evil.example:${port}` },
    })
    assert.equal(rebound.status, 403)
    assert.match(rebound.json().error.message, /Host "evil\.example/)
    const otherPort = await http(port, '/api/snapshot', {
      headers: { ...bearer(token), Host: `127.0.0.1:${port + 1}` },
    })
    assert.equal(otherPort.status, 403)
    const crossSite = await http(port, '/api/snapshot', {
      headers: { ...bearer(token), Origin: 'https://evil.example' },
    })
    assert.equal(crossSite.status, 403)
    assert.match(crossSite.json().error.message, /origin "https:\/\/evil\.example"/)
    const own = await http(port, '/api/snapshot', {
      headers: { ...bearer(token), Origin: `http://127.0.0.1:${port}` },
    })
    assert.equal(own.status, 200)
    assert.equal(
      (
        await http(port, '/api/snapshot', {
          headers: { ...bearer(token), Host: `localhost:${port}` },
        })
      ).status,
      200,
    )
  })

  it('a POST needs the token in its header (not the query or cookie) and a JSON body', async () => {
    const { port, token } = await launch()
    const byQuery = await http(port, `/api/tools/echo/call?token=${token}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: { args: { text: 'x' } },
    })
    assert.equal(byQuery.status, 401)
    assert.match(byQuery.json().error.message, /Authorization header/)
    const byCookie = await http(port, '/api/tools/echo/call', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Cookie: `yoke_console_${port}=${token}` },
      body: { args: { text: 'x' } },
    })
    assert.equal(byCookie.status, 401)
    const form = await http(port, '/api/tools/echo/call', {
      method: 'POST',
      headers: { ...bearer(token), 'Content-Type': 'text/plain' },
      body: { args: { text: 'x' } },
    })
    assert.equal(form.status, 415)
  })

  it('opening the page with ?token= sets an HttpOnly, same-site cookie its scripts then use', async () => {
    const { port, token } = await launch()
    const page = await http(port, `/?token=${token}`)
    assert.equal(page.status, 200)
    assert.match(page.text, /<title>console<\/title>/)
    const cookie = String(page.headers['set-cookie'])
    assert.match(
      cookie,
      new RegExp(`^yoke_console_${port}=${token}; HttpOnly; SameSite=Strict; Path=/$`),
    )
    const script = await http(port, '/app.js', { headers: { Cookie: cookie.split(';')[0]! } })
    assert.equal(script.status, 200)
    assert.match(String(script.headers['content-type']), /text\/javascript/)
    assert.equal((await http(port, '/app.js')).status, 401)
  })

  it('serves files from the page folder only: no path leads out', async () => {
    const { port, token, project } = await launch()
    symlinkSync(project.path('secret.txt'), project.path('ui/link.txt'))
    const paths = [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/%2e%2e%2fsecret.txt',
      '/..%5csecret.txt',
      '/ui/../../secret.txt',
      '/%00index.html',
      `/${encodeURIComponent(project.path('secret.txt'))}`,
      '/link.txt',
      '/nothing-here.js',
    ]
    for (const path of paths) {
      const reply = await http(port, path, { headers: bearer(token) })
      assert.notEqual(reply.status, 200, path)
      assert.ok([400, 404].includes(reply.status), `${path}: ${reply.status}`)
      assert.doesNotMatch(reply.text, /the secret/, path)
    }
  })
})

describe('console: what it serves', () => {
  it('the snapshot has every section', async () => {
    const { port, token } = await launch()
    const snap = (await http(port, '/api/snapshot', { headers: bearer(token) })).json()
    for (const section of [
      'about',
      'doctor',
      'instances',
      'config',
      'reloads',
      'tools',
      'calls',
      'servers',
      'skills',
      'approvals',
    ])
      assert.ok(section in snap, section)
    assert.equal(snap.about.url, `http://127.0.0.1:${port}/`)
    assert.equal(snap.about.command, 'dev')
    assert.ok(snap.doctor.checks.length > 0)
    const console = snap.instances.find((i: any) => i.key === 'console')
    assert.equal(console.state, 'active')
    assert.ok(console.effects.some((e: any) => e.label === 'control console/url'))
    // what the global scope lists: policy hides a tool it denies outright
    assert.deepEqual(snap.tools.tools.map((t: any) => t.name).sort(), ['echo', 'guarded'])
    assert.equal(snap.reloads.at(-1).type, 'loaded')
    assert.deepEqual(snap.approvals, [])
    // the config as `yoke config print --explain` shows it: every value with its file:line:col
    assert.equal(snap.config.unavailable, undefined)
    assert.ok(snap.config.layers.some((l: any) => l.kind === 'project'))
    assert.match(snap.config.origins['plugins.policy.config.deny.0'], /yoke\.config\.yaml:\d+:\d+$/)
    assert.deepEqual(snap.config.value.plugins.policy.config.deny, ['blocked'])
  })

  it('the event stream gets a reload after a config edit and the state changes it caused', async () => {
    const { port, token, project, composition } = await launch()
    const events = await sse(port, token)
    try {
      const hello = await events.next('hello')
      assert.equal(hello.about.url, `http://127.0.0.1:${port}/`)
      project.write('more.mjs', "export default { name: 'more', apply() {} }\n")
      project.write(
        'yoke.config.yaml',
        CONFIG().replace('plugins:\n', 'plugins:\n  more:\n    use: ./more.mjs\n'),
      )
      await composition.reload([project.path('yoke.config.yaml')])
      const reload = await events.next('reload', (r) => r.type === 'reload')
      assert.deepEqual(reload.added, ['more'])
      assert.equal(reload.ok, true)
      const state = await events.next('instance', (i) => i.key === 'more' && i.state === 'active')
      assert.equal(state.plugin, 'more')
      await events.next('doctor')
      // the feed is kept for a page that opens later
      const snap = (await http(port, '/api/snapshot', { headers: bearer(token) })).json()
      assert.deepEqual(
        snap.reloads.map((r: any) => r.type),
        ['loaded', 'reload'],
      )
    } finally {
      events.close()
    }
  })

  it('a tool run through the API passes the pipeline: a deny rule denies it', async () => {
    const { port, token } = await launch()
    const ok = await http(port, '/api/tools/echo/call', {
      method: 'POST',
      headers: postJson(token),
      body: { args: { text: 'hi' } },
    })
    assert.equal(ok.status, 200)
    assert.equal(ok.json().result.ok, true)
    assert.deepEqual(ok.json().result.content, [{ type: 'text', text: 'echo hi' }])
    const denied = await http(port, '/api/tools/blocked/call', {
      method: 'POST',
      headers: postJson(token),
      body: { args: {} },
    })
    assert.equal(denied.status, 200)
    assert.equal(denied.json().result.status, 'DENIED')
    assert.equal(denied.json().result.error.code, 'DENIED')
    const invalid = await http(port, '/api/tools/echo/call', {
      method: 'POST',
      headers: postJson(token),
      body: { args: { text: 3 } },
    })
    assert.equal(invalid.json().result.status, 'INVALID_ARGS')
    const bad = await http(port, '/api/tools/echo/call', {
      method: 'POST',
      headers: postJson(token),
      body: { args: [1] },
    })
    assert.equal(bad.status, 400)
  })
})

describe('console: malformed requests', () => {
  it('a tool name that is not valid percent-encoding is 400; an unknown API route 404', async () => {
    const { port, token } = await launch()
    const badName = await http(port, '/api/tools/%E0%A4%A/call', {
      method: 'POST',
      headers: postJson(token),
      body: { args: {} },
    })
    assert.equal(badName.status, 400)
    const notFound = await http(port, '/api/nothing', { headers: bearer(token) })
    assert.equal(notFound.status, 404)
  })
})
