// An untrusted project may tighten the policy, not loosen it: its `allow`, `askRisks` and
// `claudeSettings` are left out until `yoke trust` (the plugin's ignoredUntilTrusted, src/trust.ts),
// while its `ask` and `deny` apply at once; a Claude Code settings file inside the project gives
// its deny rules at once and its allow rules only once the project is trusted. The tools come
// from the user's own patch (a project's local plugin would wait for trust itself).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { recordTrust, projectFiles } from '../src/config/trust.ts'
import { loadLayers } from '../src/config/layers.ts'
import { createYoke, type ApprovalRequest, type Yoke } from '../src/index.ts'
import { ROOT, tempProject, type Project } from './helpers/project.ts'
import { until } from './helpers/until.ts'

const TOOLS = join(ROOT, 'test/fixtures/capabilities/tools.mjs')
const userTools = (tools: Array<{ name: string; risk?: string }>, policy = '') =>
  `plugins:\n  tools:\n    use: ${TOOLS}\n    config: ${JSON.stringify({ tools })}\n${policy}`

describe('trust: the policy of a project not trusted yet only tightens', () => {
  const projects: Project[] = []
  const yokes: Yoke[] = []
  after(async () => {
    for (const y of yokes) await y.close()
    for (const p of projects) p.cleanup()
  })
  const start = async (p: Project) => {
    const asked: string[] = []
    const approval = ({ call }: ApprovalRequest) => {
      asked.push(call.name)
      return 'allow-once' as const
    }
    // as the CLI: the suite's runner trusts every project, this test's reader does not
    const env = { ...process.env, YOKE_TRUST: '' }
    const yoke = createYoke({ cwd: p.dir, home: p.home, env, approval, onLog: () => {} })
    yokes.push(yoke)
    await yoke.ready
    return { yoke, asked }
  }
  const trust = async (p: Project) => {
    const stack = await loadLayers({ cwd: p.dir, home: p.home, env: {} })
    const where = { home: p.home, env: {} }
    await recordTrust({ dir: stack.projectDir, files: projectFiles(stack, {}) }, true, where)
  }

  it("leaves out the project's allow and askRisks, applies its deny; after `yoke trust`, all of it", async () => {
    const p = tempProject({
      'yoke.config.yaml':
        "preset: base\nplugins:\n  policy:\n    config:\n      allow: ['*']\n      askRisks: []\n      deny: [gone]\n",
    })
    projects.push(p)
    p.write('.home/patch.yaml', userTools([{ name: 'wipe', risk: 'high' }, { name: 'gone' }]))
    const { yoke, asked } = await start(p)
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.deepEqual(asked, ['wipe'], 'a high-risk tool still asks: the allow and askRisks wait')
    assert.equal((await yoke.call('gone')).status, 'DENIED', "the project's deny applies at once")

    await trust(p)
    await yoke.reload()
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.deepEqual(asked, ['wipe'], 'trusted: its allow applies, nothing asks')
  })

  it('a Claude Code settings file in the project: its deny at once, its allow after `yoke trust`', async () => {
    const p = tempProject({
      'yoke.config.yaml': 'preset: base\n',
      '.claude/settings.json': JSON.stringify({
        permissions: { allow: ['mcp__x__wipe'], deny: ['mcp__x__gone'] },
      }),
    })
    projects.push(p)
    // the user's own patch reads the project's settings file
    p.write(
      '.home/patch.yaml',
      userTools(
        [
          { name: 'mcp__x__wipe', risk: 'high' },
          { name: 'mcp__x__gone', risk: 'low' },
        ],
        "  policy:\n    config:\n      claudeSettings: ['.claude/settings.json']\n",
      ),
    )
    const { yoke, asked } = await start(p)
    assert.equal((await yoke.call('mcp__x__wipe')).status, 'ok')
    assert.deepEqual(asked, ['mcp__x__wipe'], 'its allow waits for trust')
    assert.equal((await yoke.call('mcp__x__gone')).status, 'DENIED')

    await trust(p) // the policy watches the trust store: no reload needed
    await until('the allow rule to apply', async () => {
      const before = asked.length
      await yoke.call('mcp__x__wipe')
      return asked.length === before
    })
  })
})
