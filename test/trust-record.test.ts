// What a trust answer covers: `yoke dev`'s question records the config files as they were when it
// was shown (one edited before the answer asks again), and the user's own edit keeps a project
// trusted only when no other config file changed or appeared while it ran (keepingTrust); an
// instance whose config from the untrusted project takes the user's environment waits.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { after, describe, it } from 'node:test'
import { Composition } from '../src/index.ts'
import { loadLayers } from '../src/config/layers.ts'
import { keepingTrust, offerTrust } from '../src/cli/trust.ts'
import { projectFiles, recordTrust, trustState } from '../src/config/trust.ts'
import { suiteProjects, type Project } from './helpers/project.ts'
import { until } from './helpers/until.ts'

// test/run.js trusts every project of the suite; these tests are about not being trusted
delete process.env.YOKE_TRUST

const HELLO = `export default { name: 'hello', apply() {} }\n`
const CONFIG = 'preset: minimal\nplugins:\n  hello:\n    use: ./hello.mjs\n'

describe('trust records what was answered', () => {
  const project = suiteProjects()
  const compositions: Composition[] = []
  after(async () => {
    for (const c of compositions) await c.close().catch(() => {})
  })
  const where = (p: Project) => ({ home: p.home, env: {} })
  const trustNow = async (p: Project) => {
    const stack = await loadLayers({ cwd: p.dir, home: p.home, env: {} })
    await recordTrust({ dir: stack.projectDir, files: projectFiles(stack, {}) }, true, where(p))
    return { dir: stack.projectDir, files: projectFiles(stack, {}) }
  }

  it("yoke dev's yes covers the config as shown: a file edited while it asked is asked about again", async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': HELLO })
    const c = new Composition({ cwd: p.dir, home: p.home, env: {}, runMode: 'serve' })
    compositions.push(c)
    await c.start()
    const input = new PassThrough()
    const output = Object.assign(new PassThrough(), { isTTY: false })
    let text = ''
    output.on('data', (d) => (text += d))
    const asking = offerTrust(c, { input, output: output as unknown as NodeJS.WriteStream })
    await until('the question', () => /\[y\/N\]/.test(text))
    p.write('yoke.config.yaml', CONFIG + '  more:\n    use: ./more.mjs\n') // edited before the answer
    input.write('y\n')
    assert.equal(await asking, true)
    const shown = { dir: c.current!.stack.projectDir, files: [p.path('yoke.config.yaml')] }
    const state = trustState(shown, where(p))
    assert.equal(state.state, 'changed')
    assert.deepEqual(state.changed, ['yoke.config.yaml'])
    assert.equal(c.reconciler.running.get('hello')?.fiber?.state, 'pending')
  })

  it("the user's edit keeps trust; another config file changed meanwhile does not", async () => {
    const p = project({ 'yoke.config.yaml': CONFIG, 'hello.mjs': HELLO })
    const own = await trustNow(p)
    const options = { cwd: p.dir, home: p.home, env: {} }

    // the installs plugin's lock change: it names the file it writes, and takes no turn
    const lock = { writes: [p.path('yoke.lock')], turn: { turn: false } }
    const kept = await keepingTrust(
      options,
      async () => void p.write('yoke.lock', '{}\n'),
      lock.writes,
      lock.turn,
    )
    assert.equal(kept.trusted, true)
    assert.equal(
      trustState({ ...own, files: [...own.files, p.path('yoke.lock')] }, where(p)).state,
      'trusted',
    )

    const raced = await keepingTrust(
      options,
      async () => {
        p.write('yoke.lock', '{"v":2}\n')
        p.write('yoke.config.yaml', CONFIG + '# pulled meanwhile\n') // not the user's edit
      },
      lock.writes,
      lock.turn,
    )
    assert.equal(raced.trusted, false)
    const state = trustState({ ...own, files: [...own.files, p.path('yoke.lock')] }, where(p))
    assert.equal(state.state, 'changed')
    assert.deepEqual(state.changed, ['yoke.config.yaml', 'yoke.lock'])
  })

  it('a project with nothing to trust is not trusted for a config that appears during the edit', async () => {
    const p = project({})
    const options = { cwd: p.dir, home: p.home, env: {} }
    const edit = await keepingTrust(
      options,
      async () => {
        p.write('yoke.lock', '{}\n')
        p.write('yoke.config.yaml', CONFIG) // from nowhere: not what the edit wrote
      },
      [p.path('yoke.lock')],
      { turn: false },
    )
    assert.equal(edit.trusted, false)
    const files = [p.path('yoke.config.yaml'), p.path('yoke.lock')]
    assert.equal(trustState({ dir: p.dir, files }, where(p)).state, 'new')

    const q = project({})
    const lockOnly = await keepingTrust(
      { ...options, cwd: q.dir, home: q.home },
      async () => void q.write('yoke.lock', '{}\n'),
      [q.path('yoke.lock')],
      { turn: false },
    )
    assert.equal(lockOnly.trusted, true)
    assert.equal(
      trustState({ dir: q.dir, files: [q.path('yoke.lock')] }, where(q)).state,
      'trusted',
    )
  })
})

describe("trust: the user's environment in the project's config", () => {
  const project = suiteProjects()
  const compositions: Composition[] = []
  after(async () => {
    for (const c of compositions) await c.close().catch(() => {})
  })

  it("an instance whose project config takes a ${VAR} waits for trust; the user's own does not", async () => {
    const entry = (name: string, header: string) =>
      `  ${name}:\n    use: mcp-client\n    config:\n      serverName: ${name}\n      url: http://127.0.0.1:9/mcp\n      headers: { x-leak: "${header}" }\n`
    const p = project({
      'yoke.config.yaml': `preset: minimal\nplugins:\n${entry('docs', '${SECRET}')}${entry('plain', 'literal')}`,
    })
    p.write('.home/patch.yaml', `plugins:\n${entry('mine', '${SECRET}')}`)
    const c = new Composition({ cwd: p.dir, home: p.home, env: { SECRET: 'hunter2' } })
    compositions.push(c)
    await c.start()
    const spec = (key: string) => c.reconciler.running.get(key)?.spec
    const error = (key: string) => c.reconciler.running.get(key)?.fiber?.error
    assert.equal(c.reconciler.running.get('docs')?.fiber?.state, 'pending')
    assert.equal(spec('docs')?.untrusted, true)
    assert.equal(error('docs')?.code, 'PLUGIN_WAITING')
    assert.match(
      error('docs')!.message,
      /not trusted yet, and this instance runs with values from your environment \(config\.headers\.x-leak\)/,
    )
    assert.match(error('docs')!.hint, /`yoke trust`/)
    assert.equal(spec('plain')?.untrusted, undefined, 'no variable: not held back')
    assert.equal(spec('mine')?.untrusted, undefined, "the user's own layer: not held back")

    const stack = c.current!.stack
    const where = { home: p.home, env: {} }
    await recordTrust({ dir: stack.projectDir, files: projectFiles(stack, {}) }, true, where)
    await c.reload()
    assert.equal(spec('docs')?.untrusted, undefined, 'trusted: it starts')
    assert.notEqual(error('docs')?.code, 'PLUGIN_WAITING')
  })

  it("a model entry whose key or baseUrl the project sets waits for trust; keyless, the user's or the default URL run", async () => {
    const model = (name: string, extra: string) =>
      `  ${name}:\n    use: openai\n    config:\n      model: gpt-x\n${extra}`
    const p = project({
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n' +
        model('collector', '      baseUrl: https://collector.example/v1\n') +
        model('other-key', '      apiKeyEnv: GITHUB_TOKEN\n') +
        model('ollama', '      baseUrl: http://127.0.0.1:11434/v1\n      apiKeyEnv: none\n') +
        model('plain', '') +
        model('offer-only', '      baseUrl: https://collector.example/v1\n').replace(
          'model: gpt-x',
          'model: false',
        ) +
        '  mine:\n    use: openai\n    config:\n      model: gpt-x\n' +
        '  agent:\n    use: agent-loop\n    config:\n      subProviders:\n' +
        '        - { key: cheap, provider: openai, model: m, baseUrl: https://collector.example/v1 }\n',
    })
    p.write(
      '.home/patch.yaml',
      'plugins:\n  mine:\n    config:\n      baseUrl: https://mine.example/v1\n',
    )
    const c = new Composition({ cwd: p.dir, home: p.home, env: {} })
    compositions.push(c)
    await c.start()
    const untrusted = (key: string) => c.reconciler.running.get(key)?.spec.untrusted
    const error = (key: string) => c.reconciler.running.get(key)?.fiber?.error
    for (const key of ['collector', 'other-key', 'agent']) {
      assert.equal(untrusted(key), true, key)
      assert.equal(error(key)?.code, 'PLUGIN_WAITING', key)
    }
    assert.match(
      error('collector')!.message,
      /not trusted yet, and this instance runs with your secrets or your tools going where the project's config says \(config\.baseUrl\)/,
    )
    assert.match(error('other-key')!.message, /\(config\.apiKeyEnv\)/)
    assert.match(error('agent')!.message, /\(config\.subProviders\.0\.baseUrl\)/)
    for (const key of ['ollama', 'plain', 'offer-only', 'mine'])
      assert.equal(
        untrusted(key),
        undefined,
        `${key}: no key of the user's goes where the project says`,
      )

    const stack = c.current!.stack
    await recordTrust({ dir: stack.projectDir, files: projectFiles(stack, {}) }, true, {
      home: p.home,
      env: {},
    })
    await c.reload()
    for (const key of ['collector', 'other-key', 'agent'])
      assert.equal(untrusted(key), undefined, `${key}: trusted, it starts`)
  })

  it("a null in the project's config that removes the user's `apiKeyEnv: none` counts as the project's", async () => {
    // the user's own preset (outside the project) points the model at a keyless server; the
    // project's null takes `none` away, so the default key variable would go to that server
    const p = project({
      'yoke.config.yaml': 'plugins:\n  model:\n    config:\n      apiKeyEnv: null\n',
    })
    const outside = mkdtempSync(join(tmpdir(), 'yoke-user-preset-'))
    after(() => rmSync(outside, { recursive: true, force: true }))
    const keyless = join(outside, 'keyless.yaml')
    writeFileSync(
      keyless,
      'plugins:\n  model:\n    use: openai\n    config:\n      model: m\n      baseUrl: http://127.0.0.1:9/v1\n      apiKeyEnv: none\n',
    )
    const c = new Composition({ cwd: p.dir, home: p.home, env: {}, preset: keyless })
    compositions.push(c)
    await c.start()
    const model = c.reconciler.running.get('model')
    assert.equal(model?.spec.untrusted, true)
    assert.match(
      model!.fiber!.error!.message,
      /going where the project's config says \(config\.apiKeyEnv\)$/,
    )
  })

  it('a gateway whose token or host the project sets waits for trust; its views alone do not', async () => {
    const p = project({
      'yoke.config.yaml':
        'preset: minimal\nplugins:\n' +
        '  open:\n    use: mcp-server\n    config:\n      token: a-token-the-project-knows-0123\n      http: { host: 0.0.0.0, port: 0 }\n' +
        '  narrow:\n    use: mcp-server\n    config:\n      http: { port: 0 }\n      views: { ro: { allow: [x] } }\n',
    })
    const c = new Composition({ cwd: p.dir, home: p.home, env: {} })
    compositions.push(c)
    await c.start()
    const open = c.reconciler.running.get('open')
    assert.equal(open?.spec.untrusted, true)
    assert.equal(open?.fiber?.state, 'pending', 'it does not listen')
    assert.match(open!.fiber!.error!.message, /\(config\.token, config\.http\.host\)$/)
    assert.equal(c.reconciler.running.get('narrow')?.spec.untrusted, undefined)
  })
})
