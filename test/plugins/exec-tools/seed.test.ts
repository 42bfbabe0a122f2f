// exec-tools against octos's seed (ch. 9 §9.1.3, §9.1.5, §9.2.1, §9.2.4): the shared skill filter
// in a real composition whatever the order the instances start in, the background-tools prompt
// card of spawn_only packages, requirements checked at load (bins, env, os with darwin = macos,
// requires_network), `binaries` without an executable, and `execTools.addRoot`.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createYoke, type Yoke } from '../../../src/index.ts'
import { THIS_HOST } from '../../../plugins/process/api.ts'
import { isThisPlatform, unmetRequirements } from '../../../plugins/exec-tools/requirements.ts'
import type { Manifest } from '../../../plugins/exec-tools/manifest.ts'
import { execHarness, nodeExe, writePackage } from '../../helpers/exec.ts'
import { suiteProjects } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

const EXEC = `  packages:\n    use: exec-tools\n    config: { dirs: [./packages], watch: false }\n`
const SKILLS = `  skills:\n    use: skills\n    config: { dirs: [./packages], except: [dropped], watch: false }\n`
const PROMPT = `  prompt:\n    use: prompt\n`

describe('exec-tools: the skill filter in a real composition', () => {
  const project = suiteProjects()
  const yokes: Yoke[] = []
  after(async () => {
    for (const y of yokes) await y.close()
  })

  const compose = async (order: string[]) => {
    const p = project({ 'yoke.config.yaml': `preset: minimal\nplugins:\n${order.join('')}` })
    writePackage(p.path('packages'), 'kept', {
      manifest: {
        name: 'kept',
        version: '1',
        tools: [
          { name: 'kept_run', description: 'runs at once' },
          { name: 'kept_report', description: 'writes a long report', spawn_only: true },
        ],
      },
      exe: nodeExe(`process.stdout.write(JSON.stringify({ output: 'kept ' + tool }))`),
      files: {
        'SKILL.md':
          '---\nname: kept\ndescription: A kept package.\n---\nUse kept_report for reports of more than ten pages.\n',
      },
    })
    // everything a package can bring: tools, a background tool, a prompt file and a hook that
    // would refuse every call
    writePackage(p.path('packages'), 'dropped', {
      manifest: {
        name: 'dropped',
        version: '1',
        tools: [
          { name: 'dropped_run', description: 'x' },
          { name: 'dropped_bg', description: 'y', spawn_only: true },
        ],
        prompts: { include: ['notes.md'] },
        hooks: [{ event: 'before_tool_call', command: ['./deny.sh'] }],
      },
      exe: nodeExe(`process.stdout.write('d')`),
      files: {
        'SKILL.md': '---\nname: dropped\ndescription: A dropped package.\n---\nDROPPED BODY\n',
        'notes.md': 'DROPPED NOTES',
        'deny.sh': '#!/bin/sh\necho "the dropped hook refuses"\nexit 1\n',
      },
    })
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: () => {} })
    yokes.push(yoke)
    const ready = await yoke.ready
    assert.deepEqual(ready.failed, [])
    return yoke
  }

  for (const [label, order] of [
    ['skills first', [SKILLS, PROMPT, EXEC]],
    ['exec-tools first (skills waits for the prompt plugin)', [EXEC, SKILLS, PROMPT]],
  ] as const)
    it(`${label}: a filtered package brings no tools, hooks or prompt fragments`, async () => {
      const yoke = await compose([...order])
      const names = yoke.tools().map((t) => t.name)
      assert.ok(names.includes('kept_run'), names.join(', '))
      assert.ok(!names.includes('dropped_run') && !names.includes('dropped_bg'), names.join(', '))
      const prompt = yoke.get('prompt')!.render()
      assert.doesNotMatch(prompt, /DROPPED/)
      assert.doesNotMatch(prompt, /background_tools package="dropped"/)
      const run = await yoke.call('kept_run', {})
      assert.equal(run.status, 'ok', `the dropped package's hook is not there: ${text(run)}`)
      assert.equal(text(run), 'kept kept_run')
      // the listing is brought up to date by the load queue, which may still be running
      const states = () =>
        JSON.stringify(
          Object.fromEntries(
            yoke
              .get('execTools')!
              .list()
              .map((p) => [p.id, p.state]),
          ),
        )
      await until(
        'the listing to say dropped is filtered',
        () => states() === JSON.stringify({ dropped: 'filtered', kept: 'loaded' }),
      )
    })

  it('a package with spawn_only tools adds a card that says when to use them, with its SKILL.md', async () => {
    const yoke = await compose([SKILLS, PROMPT, EXEC])
    const prompt = yoke.get('prompt')!.render()
    const card = /<background_tools package="kept">[\s\S]*?<\/background_tools>/.exec(prompt)?.[0]
    assert.ok(card, prompt)
    assert.match(card, /run in the background: a call returns at once/)
    assert.match(card, /- kept_report: writes a long report/)
    assert.doesNotMatch(card, /kept_run/, 'only the background tools are on the card')
    assert.match(
      card,
      /<instructions>\nUse kept_report for reports of more than ten pages\.\n<\/instructions>/,
    )
    assert.doesNotMatch(card, /description: A kept package/, 'the frontmatter is left out')
  })
})

describe('exec-tools: requirements at load', () => {
  it('requires.bins, requires.env (alias requirements), requires.os and requires_network are enforced with the reason', async () => {
    process.env.YOKE_H3_SET_BUT_EMPTY = ''
    const tool = [{ name: 'x', description: 'x' }]
    const exe = nodeExe(`process.stdout.write('ran')`)
    const foreignOs = THIS_HOST.platform === 'win32' ? 'linux' : 'windows'
    const pkg = (name: string, extra: Record<string, unknown>) => ({
      manifest: {
        name,
        version: '1',
        tools: tool.map((t) => ({ ...t, name: `${name}_run` })),
        ...extra,
      },
      exe,
    })
    const h = await execHarness(
      {
        bins: pkg('bins', { requires: { bins: ['sh', 'yoke-h3-no-such-program'] } }),
        envs: pkg('envs', {
          requirements: { env: ['YOKE_H3_NEVER_SET', 'YOKE_H3_SET_BUT_EMPTY'] },
        }),
        os: pkg('os', { requires: { os: [foreignOs] } }),
        net: pkg('net', { requires_network: true }),
        fine: pkg('fine', {
          requires: { bins: ['sh'], env: ['YOKE_H3_SET_BUT_EMPTY'] },
          requires_network: true,
        }),
      },
      { network: false },
    )
    try {
      const by = Object.fromEntries(h.api.list().map((p) => [p.id, p]))
      const why = (id: string) => by[id]!.errors.map((e) => e.message).join('\n')
      assert.equal(by.bins!.state, 'failed')
      assert.match(why('bins'), /needs "yoke-h3-no-such-program" on PATH \(requires\.bins\)/)
      assert.doesNotMatch(why('bins'), /"sh"/, 'only what is missing is named')
      assert.match(why('envs'), /environment variable "YOKE_H3_NEVER_SET" \(requires\.env\)/)
      assert.doesNotMatch(why('envs'), /EMPTY/, 'a variable set to "" counts as set')
      assert.match(
        why('os'),
        new RegExp(`runs on ${foreignOs} \\(requires\\.os\\), not on this machine`),
      )
      assert.match(why('net'), /needs network access \(requires_network: true\).*network: false/)
      assert.equal(by.fine!.state, 'failed', 'network: false refuses it too')
      for (const id of ['bins', 'envs', 'os', 'net'])
        assert.equal(by[id]!.errors[0]!.code, 'PACKAGE_UNSUPPORTED', id)
      assert.ok(!h.rt.list().some((t) => t.name === 'bins_run'))
      const logged = h.logs.filter((l) => /package bins is not loaded/.test(l.message))
      assert.equal((logged[0]?.error as { code?: string } | undefined)?.code, 'PACKAGE_UNSUPPORTED')
    } finally {
      await h.close()
    }
    const online = await execHarness({
      fine: pkg('fine', {
        requires: {
          bins: ['sh'],
          os: [THIS_HOST.platform === 'darwin' ? 'macos' : THIS_HOST.platform],
        },
        requires_network: true,
      }),
    })
    try {
      assert.equal(
        text(await online.rt.call('fine_run', {})),
        'ran',
        'met requirements load (network by default)',
      )
    } finally {
      await online.close()
    }
  })

  it('darwin and macos are one system; binaries keys name system and CPU in the usual spellings', () => {
    const mac = { platform: 'darwin' as const, arch: 'arm64', endianness: 'LE' as const }
    const linux = { platform: 'linux' as const, arch: 'x64', endianness: 'LE' as const }
    const manifest = (os: string[]): Manifest => ({
      id: 'p',
      name: 'p',
      version: '1',
      tools: [],
      requiresNetwork: false,
      binaries: {},
      mcpServers: [],
      hooks: [],
      promptsInclude: [],
      requires: { bins: [], env: [], os },
    })
    assert.deepEqual(unmetRequirements(manifest(['macos']), { host: mac, network: true }), [])
    assert.deepEqual(unmetRequirements(manifest(['Darwin']), { host: mac, network: true }), [])
    assert.equal(unmetRequirements(manifest(['macos']), { host: linux, network: true }).length, 1)
    assert.deepEqual(
      unmetRequirements(manifest(['linux', 'macos']), { host: linux, network: true }),
      [],
    )
    assert.ok(isThisPlatform('darwin-aarch64', mac) && isThisPlatform('macos-arm64', mac))
    assert.ok(isThisPlatform('linux-x86_64', linux) && isThisPlatform('Linux-AMD64', linux))
    assert.ok(!isThisPlatform('linux-aarch64', linux) && !isThisPlatform('darwin-x86_64', linux))
  })

  it('binaries: nothing for this machine lists what is offered; an entry not installed says to run yoke add', async () => {
    const cpu: Record<string, string> = { x64: 'x86_64', arm64: 'aarch64' }
    const system = THIS_HOST.platform === 'win32' ? 'windows' : THIS_HOST.platform
    const mine = `${system}-${cpu[THIS_HOST.arch] ?? THIS_HOST.arch}`
    const tools = (name: string) => [{ name: `${name}_run`, description: 'x' }]
    const url = { url: 'https://example.com/x.tar.gz' }
    const h = await execHarness({
      elsewhere: {
        manifest: {
          name: 'elsewhere',
          version: '1',
          tools: tools('elsewhere'),
          binaries: { 'plan9-mips': url, 'haiku-riscv64': url },
        },
      },
      notyet: {
        manifest: {
          name: 'notyet',
          version: '1',
          tools: tools('notyet'),
          binaries: { [mine]: url },
        },
      },
      installed: {
        manifest: {
          name: 'installed',
          version: '1',
          tools: tools('installed'),
          binaries: { [mine]: url },
        },
        exe: nodeExe(`process.stdout.write('installed ran')`),
      },
    })
    try {
      const by = Object.fromEntries(h.api.list().map((p) => [p.id, p]))
      assert.equal(by.elsewhere!.state, 'failed')
      assert.match(
        by.elsewhere!.errors[0]!.message,
        new RegExp(
          `no prebuilt executable for this machine \\(${mine}\\); its manifest's binaries offer plan9-mips, haiku-riscv64`,
        ),
      )
      assert.equal(by.notyet!.state, 'failed')
      assert.match(by.notyet!.errors[0]!.message, /is not installed: run `yoke add /)
      assert.ok(by.notyet!.errors[0]!.message.includes(`yoke add ${by.notyet!.dir}\``))
      assert.equal(by.notyet!.errors[0]!.code, 'PACKAGE_UNSUPPORTED')
      assert.equal(text(await h.rt.call('installed_run', {})), 'installed ran')
    } finally {
      await h.close()
    }
  })
})

describe('execTools.addRoot', () => {
  it('a folder of packages or one package folder, lowest priority, watched; the disposer unloads', async () => {
    const h = await execHarness(
      {
        kept: {
          manifest: { name: 'kept', version: '1', tools: [{ name: 'kept_run', description: 'x' }] },
          exe: nodeExe(`process.stdout.write('configured')`),
        },
      },
      { watch: true },
    )
    try {
      const folder = join(h.root, 'installed')
      writePackage(folder, 'extra', {
        manifest: { name: 'extra', version: '1', tools: [{ name: 'extra_run', description: 'x' }] },
        exe: nodeExe(`process.stdout.write('extra')`),
      })
      writePackage(folder, 'kept', {
        manifest: { name: 'kept', version: '1', tools: [{ name: 'kept_other', description: 'x' }] },
        exe: nodeExe(`process.stdout.write('added')`),
      })
      const single = writePackage(h.root, 'one', {
        manifest: { name: 'one', version: '1', tools: [{ name: 'one_run', description: 'x' }] },
        exe: nodeExe(`process.stdout.write('one')`),
      })
      const names = () => h.rt.list().map((t) => t.name)
      const removeFolder = h.api.addRoot(folder, { source: 'yoke add' })
      const removeSingle = h.api.addRoot(single)
      await until(
        'the added roots to load',
        () => names().includes('extra_run') && names().includes('one_run'),
      )
      assert.deepEqual(h.api.roots.slice(-2), [folder, single])
      const by = Object.fromEntries(h.api.list().map((p) => [`${p.id}@${p.dir}`, p]))
      assert.equal(
        by[`kept@${join(folder, 'kept')}`]!.state,
        'shadowed',
        'the configured directory wins',
      )
      assert.equal(by[`extra@${join(folder, 'extra')}`]!.source, 'yoke add')
      assert.equal(text(await h.rt.call('kept_run', {})), 'configured')
      assert.ok(!names().includes('kept_other'))

      writePackage(folder, 'late', {
        manifest: { name: 'late', version: '1', tools: [{ name: 'late_run', description: 'x' }] },
        exe: nodeExe(`process.stdout.write('late')`),
      })
      await until('a package written into the added root to load', () =>
        names().includes('late_run'),
      )
      assert.equal(text(await h.rt.call('late_run', {})), 'late')

      removeFolder()
      removeFolder() // idempotent
      await until(
        'the removed root to unload',
        () => !names().includes('extra_run') && !names().includes('late_run'),
      )
      assert.ok(names().includes('one_run') && names().includes('kept_run'), names().join(', '))
      assert.ok(!h.api.roots.includes(folder))
      removeSingle()
      await until('the single package to unload', () => !names().includes('one_run'))
    } finally {
      await h.close()
    }
  })

  it("called through an instance's context, the root goes when that instance does", async () => {
    const h = await execHarness({})
    try {
      const folder = join(h.root, 'mine')
      writePackage(folder, 'mine', {
        manifest: { name: 'mine', version: '1', tools: [{ name: 'mine_run', description: 'x' }] },
        exe: nodeExe(`process.stdout.write('mine')`),
      })
      const { toPlugin } = await import('../../../src/index.ts')
      const installer = h.kernel.spawn(
        toPlugin({
          name: 'installer',
          inject: ['execTools'],
          apply: (ctx: any) => void ctx.execTools.addRoot(folder, { source: 'installer' }),
        }) as never,
        {},
        { key: 'installer' },
      )
      const names = () => h.rt.list().map((t) => t.name)
      await until('the installer root to load', () => names().includes('mine_run'))
      await h.kernel.remove(installer)
      await until('its root to unload with it', () => !names().includes('mine_run'))
      assert.equal(h.api.list().length, 0)
    } finally {
      await h.close()
    }
  })
})
