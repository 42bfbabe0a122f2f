// The policy's decisions on a Policy object alone (no kernel): deny → ask → allow with the first
// match winning, askRisks for a tool no rule names, a bare deny hiding tools, the rules of a Claude
// Code settings file added on read, and a project file's allow rules waiting until the project is
// trusted (said once), then applied on the next read.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Policy, type PolicyConfig } from '../../../plugins/policy/policy.ts'
import type { RegisteredTool } from '../../../src/index.ts'

const dirs: string[] = []
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

const tool = (name: string, risk: RegisteredTool['risk'] = 'low', source = 'test') =>
  ({ name, risk, source }) as RegisteredTool

function policy(config: Partial<PolicyConfig>, trusted: () => true | string = () => true) {
  const dir = mkdtempSync(join(tmpdir(), 'yoke-policy-'))
  dirs.push(dir)
  const warnings: string[] = []
  const logger = { warn: (m: string) => void warnings.push(m), error: () => {} }
  const full = { allow: [], ask: [], deny: [], askRisks: ['high', 'critical'], claudeSettings: [] }
  return {
    policy: new Policy({ ...full, ...config } as PolicyConfig, {
      projectDir: dir,
      trusted,
      logger,
    }),
    dir,
    warnings,
  }
}

describe('Policy: the decisions, without a composition', () => {
  it('deny, then ask, then allow: the first match wins; no match asks for a risky tool only', () => {
    const { policy: p } = policy({
      deny: ['rm_*'],
      ask: [{ tool: '*', source: 'mcp:github' }],
      allow: ['rm_safe', 'shell'],
    })
    assert.deepEqual(p.decide(tool('rm_safe')), {
      kind: 'deny',
      reason: 'denied by the policy rule deny: rm_*',
    })
    assert.equal(p.decide(tool('create_issue', 'low', 'mcp:github')).kind, 'ask')
    assert.deepEqual(p.decide(tool('shell', 'critical')), { kind: 'allow' })
    assert.deepEqual(p.decide(tool('deploy', 'high')), {
      kind: 'ask',
      reason: 'deploy is high risk',
    })
    assert.deepEqual(p.decide(tool('read_file')), { kind: 'allow' })
  })

  it('a bare deny hides the tools it names; a deny with conditions only refuses them', () => {
    const { policy: p } = policy({ deny: ['secret_*', { tool: 'drop_*', risk: 'critical' }] })
    const tools = [tool('secret_rotate'), tool('drop_table', 'critical'), tool('read_file')]
    assert.deepEqual(
      p.visible(tools).map((t) => t.name),
      ['drop_table', 'read_file'],
    )
  })

  it("a project's settings file: its deny and ask apply at once, its allow rules wait for trust, then apply", () => {
    let trusted: true | string = 'the project is not trusted yet'
    const {
      policy: p,
      dir,
      warnings,
    } = policy({ claudeSettings: ['.claude/settings.json'], deny: ['from_config'] }, () => trusted)
    mkdirSync(join(dir, '.claude'))
    writeFileSync(
      join(dir, '.claude/settings.json'),
      JSON.stringify({
        permissions: { deny: ['mcp__github__delete_repo'], allow: ['mcp__memory'] },
      }),
    )
    assert.equal(p.files[0], join(dir, '.claude/settings.json'))
    assert.equal(p.inProject(p.files[0]!), true)
    p.read()
    assert.deepEqual(p.rules.deny.length, 2, 'the config rule, then the file rule')
    assert.deepEqual(p.rules.allow, [], 'allow waits')
    p.read()
    assert.equal(warnings.length, 1, 'said once')
    assert.match(warnings[0]!, /1 allow rule\(s\) are not applied: the project is not trusted yet/)
    trusted = true
    p.read()
    assert.equal(p.rules.allow.length, 1, 'applied once trusted')
  })
})
