// The capabilities instance's decisions, without composing a kernel: which rule refuses a version
// (pins first, then withdrawal, then rollout), what a rule unloads (a withdrawal or a pin holds a
// server, package or skill; a rollout never does; a server between connections is judged only as
// it was when held), which running dynamic version is stopped, what `yoke pin` records, and who
// the audit log names for each change.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { toDisposer } from '../../../src/index.ts'
import type { Capability } from '../../../plugins/capabilities/api.ts'
import { entriesFrom, otherNow, whoRefused } from '../../../plugins/capabilities/changes.ts'
import '../../../plugins/capabilities/errors.ts'
import { Governance } from '../../../plugins/capabilities/governance.ts'
import { inspectSection } from '../../../plugins/capabilities/inspect.ts'
import { newKept } from '../../../plugins/capabilities/kept.ts'
import { pinFor } from '../../../plugins/capabilities/pins.ts'
import { stateKey } from '../../../plugins/capabilities/audit.ts'
import { Holder, holdStep, toStop, type Unloadable } from '../../../plugins/capabilities/unload.ts'
import type { DynamicPluginInfo } from '../../../plugins/repository/api.ts'

const H1 = 'sha256:111111111111'
const H2 = 'sha256:222222222222'
type Rules = ConstructorParameters<typeof Governance>[0]
const rules = (r: Partial<Rules>) =>
  new Governance({ withdrawn: [], rollout: [], pins: [], ...r } as Rules)
const server = (version: string, extra: Partial<Capability> = {}): Capability => ({
  kind: 'server',
  id: 'mcp:github',
  version,
  hash: H1,
  state: 'connected',
  ...extra,
})
const tool: Capability = { kind: 'tool', id: 'mcp__github__issue', hash: H2, source: 'mcp:github' }

describe('the rules: which one refuses a version', () => {
  const withdrawn = [{ id: 'mcp:github', version: '1.4.0', why: 'drops the repo argument' }]

  it("a provider's withdrawal refuses its tools, in every scope; another version passes", () => {
    const why = rules({ withdrawn }).refusal(tool, [server('1.4.0')], 'anywhere')
    assert.equal(why?.code, 'CAPABILITY_WITHDRAWN')
    assert.deepEqual(why?.params, {
      name: 'mcp__github__issue',
      rule: 'mcp:github@1.4.0',
      why: 'drops the repo argument',
    })
    assert.equal(rules({ withdrawn }).refusal(tool, [server('1.5.0')], 'anywhere'), undefined)
  })

  it('a pin that differs comes before a withdrawal; a hash prefix of 6+ digits matches', () => {
    const pins = [{ id: 'mcp:*', version: '1.3.0' }]
    const why = rules({ withdrawn, pins }).refusal(tool, [server('1.4.0')], 'global')
    assert.equal(why?.code, 'CAPABILITY_PIN_MISMATCH')
    assert.equal(why?.params.found, `version 1.4.0 ${H1}`)
    const byHash = rules({ pins: [{ id: 'mcp:github', hash: '111111' }] })
    assert.equal(byHash.refusal(server('9'), [], 'global'), undefined)
    assert.equal(
      byHash.refusal({ ...server('9'), hash: H2 }, [], 'global')?.code,
      'CAPABILITY_PIN_MISMATCH',
    )
  })

  it('a rollout refuses only the scopes its globs do not name', () => {
    const r = rules({ rollout: [{ id: 'mcp:github', version: '1.4.0', scopes: ['beta*'] }] })
    assert.equal(r.refusal(tool, [server('1.4.0')], 'beta-1'), undefined)
    assert.equal(r.refusal(tool, [server('1.4.0')], 'global')?.code, 'CAPABILITY_NOT_ROLLED_OUT')
  })
})

describe('what a rule unloads', () => {
  const withdraw = rules({ withdrawn: [{ id: 'mcp:github', version: '1.4.0', why: 'broken' }] })
  const item = (cap: Capability, ready = true) => ({ cap, ready })

  it('a withdrawal holds, with the code and message where the provider shows it', () => {
    const step = holdStep(item(server('1.4.0')), false, undefined, withdraw)
    assert.equal(step.kind, 'hold')
    assert.match((step as { why: string }).why, /^CAPABILITY_WITHDRAWN: mcp:github is withdrawn/)
    assert.deepEqual(holdStep(item(server('1.4.0')), true, undefined, withdraw), { kind: 'skip' })
  })

  it('a pin that differs holds; a rollout never unloads (other scopes use the version)', () => {
    const pin = rules({ pins: [{ id: 'mcp:github', version: '1.3.0' }] })
    assert.equal(holdStep(item(server('1.4.0')), false, undefined, pin).kind, 'hold')
    const rollout = rules({ rollout: [{ id: 'mcp:github', version: '1.4.0', scopes: ['beta'] }] })
    assert.equal(holdStep(item(server('1.4.0')), false, undefined, rollout).kind, 'skip')
  })

  it('one not connected is judged only as remembered; a version the rules allow is let go', () => {
    const down = item(server('', { state: 'held' }), false)
    assert.equal(holdStep(down, true, undefined, withdraw).kind, 'skip', 'not judged, kept')
    assert.equal(holdStep(down, true, server('1.5.0'), withdraw).kind, 'release')
    assert.equal(holdStep(down, false, server('1.4.0'), withdraw).kind, 'hold')
    assert.equal(holdStep(item(server('1.5.0')), true, undefined, withdraw).kind, 'release')
  })

  it('a Holder holds once (its provider announcing inside the hold), lets go, and closes', () => {
    const held = new Map<string, number>()
    let version = '1.4.0'
    let target = {}
    const items = (): Unloadable[] => [
      { key: 'github', cap: server(version), held: held.has('github'), ready: true, target },
    ]
    const kept = newKept()
    const logged: unknown[] = []
    const logger = { error: (...a: unknown[]) => logged.push(a) } as never
    const hold = (key: string) => {
      held.set(key, (held.get(key) ?? 0) + 1)
      holder.look() // the provider announces the hold at once
      return toDisposer(() => void held.delete(key))
    }
    const holder: Holder = new Holder('mcp', items, hold, withdraw, kept, logger)
    holder.look()
    holder.look()
    assert.equal(held.get('github'), 1, 'one hold')
    assert.equal(kept.held.get('mcp:github')?.version, '1.4.0', 'what it was, remembered')
    target = {} // the server's instance reloaded: the old hold went with it
    holder.look()
    assert.equal(held.get('github'), 2, 'held again on the new handle')
    version = '1.5.0' // items() says held, so it is judged as remembered (1.4.0): still held
    holder.look()
    assert.equal(held.has('github'), true)
    kept.held.clear()
    holder.look()
    assert.equal(held.has('github'), false, 'let go once what it is now is allowed')
    version = '1.4.0'
    holder.look()
    holder.close()
    assert.equal(held.has('github'), false, 'close lets go')
    assert.deepEqual(logged, [])
  })

  it('stops a running dynamic version the rules refuse in its own session, once', () => {
    const plugin = (session: string, state = 'running'): DynamicPluginInfo =>
      ({
        name: 'weather',
        session,
        state,
        current: 2,
        versions: [
          { id: 'repo:weather@1', name: 'weather', version: 1, hash: H1, session },
          { id: 'repo:weather@2', name: 'weather', version: 2, hash: H2, session },
        ],
      }) as unknown as DynamicPluginInfo
    const r = rules({ rollout: [{ id: 'repo:weather', version: '2', scopes: ['s-beta'] }] })
    const all = [plugin('s-beta'), plugin('s-main'), plugin('s-other', 'stopped')]
    const stops = toStop(all, r, new Set())
    assert.deepEqual(
      stops.map((s) => [s.session, s.name, s.version]),
      [['s-main', 'weather', 2]],
    )
    assert.match(stops[0]!.why, /^CAPABILITY_NOT_ROLLED_OUT: /)
    assert.deepEqual(toStop(all, r, new Set(['s-main\u0000weather'])), [], 'stopping already')
  })
})

describe('what yoke pin records', () => {
  const all: Capability[] = [
    { kind: 'plugin', id: 'repo:w', version: '1', hash: H1, state: 'defined', scope: 's' },
    { kind: 'plugin', id: 'repo:w', version: '2', hash: H2, state: 'running', scope: 's' },
    server('1.4.0'),
    { ...server('', { state: 'connecting' }), id: 'mcp:slow', version: undefined },
  ]

  it("a dynamic plugin's running version, with its hash", () => {
    assert.deepEqual(pinFor(all, 'repo:w').pin, { id: 'repo:w', version: '2', hash: H2 })
    assert.deepEqual(pinFor(all, 'mcp:github').pin, {
      id: 'mcp:github',
      version: '1.4.0',
      hash: H1,
    })
  })

  it('not there: CAPABILITY_UNKNOWN; a server between connections: USAGE, pin it once connected', () => {
    assert.throws(() => pinFor(all, 'repo:nothing'), { code: 'CAPABILITY_UNKNOWN' })
    assert.throws(
      () => pinFor(all, 'mcp:slow'),
      (err: Error & { code?: string }) => {
        assert.equal(err.code, 'USAGE')
        assert.match(err.message, /mcp:slow is connecting now: pin it once it is connected/)
        return true
      },
    )
  })
})

describe('who the audit log names', () => {
  it("a refusing rule's kind; a held provider by its rule; a server between connections stands", () => {
    assert.equal(whoRefused('CAPABILITY_WITHDRAWN'), 'withdraw')
    assert.equal(whoRefused('CAPABILITY_PIN_MISMATCH'), 'pin')
    assert.equal(whoRefused('CAPABILITY_NOT_ROLLED_OUT'), 'rollout')
    const kept = {
      ...newKept(),
      started: true,
      state: new Map([[stateKey('mcp:github'), '1.4.0']]),
    }
    const held = server('1.4.0', { refused: 'held: CAPABILITY_WITHDRAWN: mcp:github is withdrawn' })
    assert.deepEqual(otherNow(held, kept), {
      to: null,
      was: '1.4.0',
      why: held.refused,
      who: 'withdraw',
    })
    assert.deepEqual(otherNow(server('', { state: 'connecting' }), kept), {
      to: '1.4.0',
      who: 'reload',
    })
    assert.equal(otherNow(server('1.5.0'), { ...kept, started: false }).who, 'start')
  })

  it('what changed and what went: a version refused before the log knew it was there', () => {
    const kept = {
      ...newKept(),
      started: true,
      dynamic: new Set(['get_weather']),
      state: new Map<string, string | null>([
        [stateKey('alpha'), H1],
        [stateKey('get_weather'), '1'],
        [stateKey('gone_tool'), H1],
      ]),
    }
    const now = new Map([
      ['alpha', { to: H2, who: 'reload' }],
      ['beta', { to: null, was: H1, who: 'withdraw', why: 'broken' }],
    ])
    const entries = entriesFrom(now, kept, 'T').map(({ who, id, from, to }) => [who, id, from, to])
    assert.deepEqual(entries, [
      ['reload', 'alpha', H1, H2],
      ['withdraw', 'beta', H1, null],
      ['repository', 'get_weather', '1', null],
      ['reload', 'gone_tool', H1, null],
    ])
  })
})

describe("inspect's capabilities section", () => {
  it('one aligned line per capability, calls from its row', () => {
    const section = inspectSection({
      capabilities: [
        { ...tool, version: '1.4.0' },
        server('1.4.0', { refused: 'held: CAPABILITY_WITHDRAWN: …' }),
      ],
      rows: [
        {
          id: tool.id,
          hash: H2,
          source: 'mcp:github',
          offered: 1,
          found: 0,
          called: 3,
          ok: 2,
          errors: { TOOL_ERROR: 1 },
          p50: 4,
          p95: 9,
          firstAt: 'T',
          lastAt: 'T',
        },
      ],
      rules: 1,
    })
    assert.equal(section.title, 'capabilities')
    assert.deepEqual(section.lines, [
      `tool    mcp__github__issue@1.4.0  ${H2}  called 3  ok 2  p95 9 ms`,
      `server  mcp:github@1.4.0          ${H1}    connected  held: CAPABILITY_WITHDRAWN: …`,
    ])
    assert.equal(section.note, '(yoke stats for every count)')
    assert.equal(section.data[0]!.called, 3)
  })
})
