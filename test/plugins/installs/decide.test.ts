// What becomes of one lock entry (installs.ts decide), without a kernel: register, wait for
// trust, refuse a tree that does not check, or leave it to the project install of the same name.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decide } from '../../../plugins/installs/installs.ts'

const ok = { ok: true }
const project = {
  scope: 'project' as const,
  taken: false,
  verdict: true as const,
  projectDir: '/p',
}
const untrusted = { ...project, verdict: 'the project /p is not trusted yet' }

describe('installs: what to do with a lock entry', () => {
  it('a checked install of a trusted project is registered and takes its name', () => {
    for (const kind of ['skill', 'skills', 'exec-package', 'claude-plugin'] as const)
      assert.deepEqual(decide({ name: 'a', kind }, ok, project), {
        state: 'registered',
        takesName: true,
      })
  })

  it("an untrusted project's installs that run code wait, naming yoke trust; its skills run", () => {
    for (const kind of ['exec-package', 'claude-plugin'] as const) {
      const d = decide({ name: 'a', kind }, ok, untrusted)
      assert.equal(d.state, 'waiting')
      assert.match(d.why!, /^the project \/p is not trusted yet, and it runs the project's code/)
      assert.match(d.why!, /`yoke trust` in \/p/)
      // a user install of the same name is the user's own, and runs meanwhile
      assert.equal(d.takesName, false)
    }
    assert.equal(decide({ name: 'a', kind: 'skills' }, ok, untrusted).state, 'registered')
  })

  it("the user's installs never wait for the project's trust", () => {
    const user = { ...untrusted, scope: 'user' as const }
    assert.equal(decide({ name: 'a', kind: 'exec-package' }, ok, user).state, 'registered')
  })

  it('a tree that does not check is refused with its why: missing or tampered', () => {
    const gone = decide(
      { name: 'a', kind: 'skill' },
      { ok: false, missing: true, why: 'gone' },
      project,
    )
    assert.deepEqual(gone, { state: 'missing', why: 'gone', takesName: true })
    const changed = decide(
      { name: 'a', kind: 'skill' },
      { ok: false, why: 'sha256 differs' },
      project,
    )
    assert.deepEqual(changed, { state: 'tampered', why: 'sha256 differs', takesName: true })
  })

  it('a refused tree that would also wait is refused (trust does not hide tampering)', () => {
    const d = decide({ name: 'a', kind: 'exec-package' }, { ok: false, why: 'x' }, untrusted)
    assert.equal(d.state, 'tampered')
  })

  it('a name a project install took shadows the user install, whatever its tree', () => {
    const user = { ...project, scope: 'user' as const, taken: true }
    for (const checked of [ok, { ok: false, why: 'x' }]) {
      const d = decide({ name: 'a', kind: 'skill' }, checked, user)
      assert.equal(d.state, 'shadowed')
      assert.equal(d.why, 'a project install named a is used instead')
    }
  })
})
