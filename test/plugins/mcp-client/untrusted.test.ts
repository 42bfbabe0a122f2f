// `yoke mcp list` in a project nobody trusted yet (no YOKE_TRUST): listing runs no code, so it
// works, and a stdio server the project brings is shown waiting for trust, naming `yoke trust`.
// Through the real CLI (bin/yoke.js), in a real temporary project.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { RAW } from '../../helpers/mcp.ts'
import { runYoke, suiteProjects } from '../../helpers/project.ts'

const project = suiteProjects()
const CONFIG = `plugins:
  local:
    use: mcp-client
    config:
      serverName: local
      command: ${JSON.stringify(process.execPath)}
      args: [${JSON.stringify(RAW)}, normal]
`
// the suite's runner trusts every project (YOKE_TRUST=1): these runs do not
const untrusted = { YOKE_TRUST: '0' }

describe('yoke mcp list in an untrusted project', () => {
  it('names the stdio server that waits for trust and how to trust it, and exits 0', async () => {
    const p = project({ 'yoke.config.yaml': CONFIG })
    const r = await runYoke(['mcp', 'list'], { cwd: p.dir, home: p.home, env: untrusted })
    assert.equal(r.code, 0, r.stderr)
    assert.doesNotMatch(r.stdout, /waiting for a service/)
    assert.match(r.stdout, /local\s+waiting: the project .* is not trusted yet/)
    assert.match(r.stdout, /run `yoke trust` in /)
    const json = await runYoke(['mcp', 'list', '--json'], {
      cwd: p.dir,
      home: p.home,
      env: untrusted,
    })
    assert.equal(json.code, 0, json.stderr)
    const local = JSON.parse(json.stdout).servers.find((s: { name: string }) => s.name === 'local')
    assert.equal(local.state, 'waiting')
    assert.match(local.detail, /yoke trust/)
    assert.equal(local.transport, 'stdio')
  })
})
