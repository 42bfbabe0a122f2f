// capabilities on real compositions (createYoke on temporary projects, a local plugin that
// registers the tools its config lists, config edits and reloads): metrics per id + version that
// a reload of an unrelated instance keeps and a new version starts afresh, the audit log, a
// withdrawn version, a rollout to one scope, a pin the content no longer matches, and session
// grants dropped when a tool's schema or risk changes.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type {
  AuditEntry,
  CapabilitiesApi,
  Capability,
  MetricsRow,
} from '../../../plugins/capabilities/api.ts'
import { readAudit } from '../../../plugins/capabilities/audit.ts'
import { createYoke, type ApprovalRequest, type ToolResult, type Yoke } from '../../../src/index.ts'
import { ROOT, runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const TOOLS = join(ROOT, 'test/fixtures/capabilities/tools.mjs')
type Tool = { name: string; params?: string[]; risk?: string; fails?: boolean }
type Plugins = Record<string, { use?: string; config?: unknown; enabled?: boolean }>
const listed = (tools: Tool[]) => ({ use: TOOLS, config: { tools } })
const configText = (plugins: Plugins) => JSON.stringify({ plugins }, null, 2)
const text = (r: ToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('')

describe('capabilities', () => {
  const projects: Project[] = []
  const yokes: Yoke[] = []
  after(async () => {
    for (const y of yokes) await y.close()
    for (const p of projects) p.cleanup()
  })

  async function compose(plugins: Plugins, options: Parameters<typeof createYoke>[0] = {}) {
    const p = tempProject({ 'yoke.config.yaml': configText(plugins) })
    projects.push(p)
    const env = { ...process.env, YOKE_TRUST: '1' } // the project's local plugin runs
    const yoke = createYoke({ cwd: p.dir, home: p.home, env, onLog: () => {}, ...options })
    yokes.push(yoke)
    const event = await yoke.ready
    assert.deepEqual(event.failed, [], 'every instance applied')
    const api = () => {
      const service = yoke.get('capabilities') as CapabilitiesApi | undefined
      assert.ok(service, 'the capabilities service is provided')
      return service
    }
    const rows = (id: string): MetricsRow[] =>
      api()
        .stats()
        .filter((r) => r.id === id)
    const audit = (): AuditEntry[] => readAudit(p.path('.yoke/audit.jsonl'))
    const edit = async (next: Plugins) => {
      p.write('yoke.config.yaml', configText(next))
      await yoke.reload()
    }
    return { p, yoke, api, rows, audit, edit }
  }

  it('keeps metrics per id + version across a reload of an unrelated instance; a new version starts its own row', async () => {
    const plugins: Plugins = {
      mine: listed([{ name: 'alpha' }, { name: 'beta', fails: true }]),
      other: listed([{ name: 'gamma' }]),
    }
    const { yoke, rows, edit, audit } = await compose(plugins)
    // changes within the audit's quiet time are written as one: let the start's lines be written first
    await until('the start to be recorded', () => audit().some((e) => e.id === 'gamma'))
    for (let i = 0; i < 3; i++) assert.equal((await yoke.call('alpha')).status, 'ok')
    assert.equal((await yoke.call('beta')).status, 'EXEC_FAILED')
    await until('the result hook to count the calls', () => rows('beta')[0]?.called === 1)
    const [alpha] = rows('alpha')
    assert.equal(alpha!.called, 3)
    assert.equal(alpha!.ok, 3)
    assert.ok(alpha!.p50 !== undefined && alpha!.p95! >= alpha!.p50, 'latency percentiles')
    assert.match(alpha!.hash, /^sha256:[0-9a-f]{12}$/)
    assert.deepEqual(rows('beta')[0]!.errors, { EXEC_FAILED: 1 })

    // an unrelated instance reloads: the rows stay as they were
    await edit({ ...plugins, other: listed([{ name: 'gamma' }, { name: 'delta' }]) })
    assert.ok(yoke.tools().some((t) => t.name === 'delta'))
    assert.equal(rows('alpha')[0]!.called, 3, 'kept across the reload')

    // alpha's schema changes: a new version, a new row; the old row keeps its counts
    await edit({
      mine: listed([
        { name: 'alpha', params: ['path'] },
        { name: 'beta', fails: true },
      ]),
      other: listed([{ name: 'gamma' }, { name: 'delta' }]),
    })
    assert.equal((await yoke.call('alpha', { path: 'x' })).status, 'ok')
    await until('the new version to be counted', () => rows('alpha').length === 2)
    const [newer, older] = rows('alpha').sort((a, b) => a.called - b.called)
    assert.equal(newer!.called, 1)
    assert.equal(older!.called, 3)
    assert.notEqual(newer!.hash, older!.hash)

    // the audit log: the start, delta's arrival (a reload), alpha's new version from → to
    await until('the audit log to record alpha’s new version', () =>
      audit().some((e) => e.id === 'alpha' && e.from === older!.hash && e.to === newer!.hash),
    )
    const lines = audit()
    assert.ok(lines.some((e) => e.id === 'gamma' && e.who === 'start' && e.from === null))
    assert.ok(lines.some((e) => e.id === 'delta' && e.who === 'reload' && e.by === 'other'))
    assert.equal(lines.find((e) => e.id === 'alpha' && e.to === newer!.hash)!.who, 'reload')
  })

  it('withdraws a version everywhere, and records why', async () => {
    const plugins: Plugins = { mine: listed([{ name: 'alpha' }, { name: 'beta' }]) }
    const { yoke, api, edit, audit } = await compose(plugins)
    const hash = api()
      .list()
      .find((c) => c.id === 'alpha')!.hash
    await edit({
      ...plugins,
      capabilities: {
        config: { withdrawn: [{ id: 'alpha', version: hash, why: 'it corrupts notes' }] },
      },
    })
    assert.ok(!yoke.tools().some((t) => t.name === 'alpha'), 'not listed')
    const denied = await yoke.call('alpha')
    assert.equal(denied.status, 'DENIED')
    assert.match(text(denied), /CAPABILITY_WITHDRAWN|withdrawn/)
    assert.match(text(denied), /it corrupts notes/)
    assert.equal((await yoke.call('beta')).status, 'ok', 'the rest is untouched')
    assert.match(
      api()
        .list()
        .find((c) => c.id === 'alpha')!.refused!,
      /CAPABILITY_WITHDRAWN/,
    )
    await until('the audit log to record the withdrawal', () =>
      audit().some((e) => e.id === 'alpha' && e.who === 'withdraw' && e.to === null),
    )
    assert.match(audit().find((e) => e.who === 'withdraw')!.why!, /it corrupts notes/)
  })

  it('rolls a version out to one scope before the rest', async () => {
    const { yoke } = await compose({
      mine: listed([{ name: 'alpha' }, { name: 'fresh' }]),
      capabilities: { config: { rollout: [{ id: 'fresh', version: '*', scopes: ['canary*'] }] } },
    })
    const canary = yoke.runtime.scope('canary-1')
    const everyone = yoke.runtime.scope('everyone')
    assert.ok(
      yoke.tools('canary-1').some((t) => t.name === 'fresh'),
      'the canary sees it',
    )
    assert.ok(!yoke.tools('everyone').some((t) => t.name === 'fresh'), 'others do not')
    assert.ok(!yoke.tools().some((t) => t.name === 'fresh'), 'nor does the global scope')
    assert.equal((await canary.call('fresh')).status, 'ok')
    const refused = await everyone.call('fresh')
    assert.equal(refused.status, 'DENIED')
    assert.match(text(refused), /rolled out to canary\* only/)
  })

  it('refuses a pinned capability whose content no longer matches', async () => {
    const plugins: Plugins = { mine: listed([{ name: 'alpha' }]) }
    const { yoke, api, edit } = await compose(plugins)
    const hash = api()
      .list()
      .find((c) => c.id === 'alpha')!.hash
    const pinned = { ...plugins, capabilities: { config: { pins: [{ id: 'alpha', hash }] } } }
    await edit(pinned)
    assert.equal((await yoke.call('alpha')).status, 'ok', 'the pinned content runs')
    // the tool's schema changes under the pin
    await edit({ ...pinned, mine: listed([{ name: 'alpha', params: ['sneaky'] }]) })
    assert.ok(!yoke.tools().some((t) => t.name === 'alpha'))
    const refused = await yoke.call('alpha', { sneaky: 'x' })
    assert.equal(refused.status, 'DENIED')
    assert.match(
      text(refused),
      /alpha is refused: alpha is pinned at sha256:\w+, and it is unversioned sha256:\w+ now.*yoke pin alpha/,
    )
    assert.match(
      api()
        .list()
        .find((c) => c.id === 'alpha')!.refused!,
      /CAPABILITY_PIN_MISMATCH/,
    )
  })

  it('asks again about a tool whose schema or risk changed, not after an unrelated reload', async () => {
    const asked: string[] = []
    const approval = ({ call }: ApprovalRequest) => {
      asked.push(call.name)
      return 'allow-session' as const
    }
    const plugins: Plugins = {
      mine: listed([{ name: 'wipe', risk: 'high' }]),
      other: listed([{ name: 'gamma' }]),
    }
    const { yoke, edit } = await compose(plugins, { approval })
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.deepEqual(asked, ['wipe'], 'granted for the session')
    await edit({ ...plugins, other: listed([{ name: 'gamma' }, { name: 'delta' }]) })
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.deepEqual(asked, ['wipe'], 'an unrelated reload keeps the grant')
    await edit({ ...plugins, mine: listed([{ name: 'wipe', risk: 'high', params: ['all'] }]) })
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.deepEqual(asked, ['wipe', 'wipe'], 'a changed schema is asked about again')
    await edit({ ...plugins, mine: listed([{ name: 'wipe', risk: 'critical', params: ['all'] }]) })
    assert.equal((await yoke.call('wipe')).status, 'ok')
    assert.deepEqual(asked, ['wipe', 'wipe', 'wipe'], 'a changed risk is asked about again')
  })
})

describe('capabilities commands (bin runs dist: npm run build first)', () => {
  const projects: Project[] = []
  after(() => projects.forEach((p) => p.cleanup()))

  it('yoke stats reads what the JSONL sink persisted; yoke withdraw and yoke audit', async () => {
    const p = tempProject({
      'yoke.config.yaml': configText({
        mine: listed([{ name: 'alpha' }, { name: 'beta', fails: true }]),
        metrics: { use: 'metrics-jsonl' },
      }),
    })
    projects.push(p)
    const env = { YOKE_HOME: p.home, YOKE_TRUST: '1' }
    const yoke = (...args: string[]) => runYoke(args, { cwd: p.dir, env })
    assert.equal((await yoke('tools', 'call', 'alpha')).code, 0)
    assert.equal((await yoke('tools', 'call', 'beta')).code, 1)
    const stats = await yoke('stats', '--json', '--all')
    assert.equal(stats.code, 0, stats.stderr)
    const answer = JSON.parse(stats.stdout) as { rows: MetricsRow[]; capabilities: Capability[] }
    const alpha = answer.rows.find((r) => r.id === 'alpha')
    assert.equal(alpha?.called, 1, 'persisted by one run, read by the next')
    assert.deepEqual(answer.rows.find((r) => r.id === 'beta')?.errors, { EXEC_FAILED: 1 })
    const hash = answer.capabilities.find((c) => c.id === 'alpha')!.hash

    const usage = await yoke('withdraw', 'alpha')
    assert.equal(usage.code, 2)
    assert.match(usage.stderr, /ID@VERSION/)
    const withdrawn = await yoke('withdraw', `alpha@${hash}`, '--why', 'it corrupts notes')
    assert.equal(withdrawn.code, 0, withdrawn.stderr)
    assert.match(
      readFileSync(p.path('yoke.config.yaml'), 'utf8'),
      /withdrawn:[\s\S]*it corrupts notes/,
    )
    const refused = await yoke('tools', 'call', 'alpha')
    assert.equal(refused.code, 1)
    assert.match(refused.stdout + refused.stderr, /alpha is withdrawn .*it corrupts notes/)

    const audit = await yoke('audit', '--json')
    const entries = (JSON.parse(audit.stdout) as { entries: AuditEntry[] }).entries
    assert.ok(entries.some((e) => e.id === 'alpha' && e.who === 'start' && e.to === hash))
    assert.ok(
      entries.some(
        (e) => e.id === 'alpha' && e.who === 'withdraw' && e.from === hash && e.to === null,
      ),
    )
    assert.match(
      (await yoke('audit')).stdout,
      /withdraw\s+alpha\s+sha256:\w+ → ∅\s+it corrupts notes/,
    )
  })
})
