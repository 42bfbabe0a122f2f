// An MCP server's question (input_required on 2026-07-28, elicitation/create on the 2025 era)
// reaches the person at the terminal through the approval service's terminal bridge: a form is
// filled in field by field, a URL is opened and confirmed, a refusal is the server's to see.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { MODERN } from '../../helpers/mcp.ts'
import { runYokeWithInput, tempProject } from '../../helpers/project.ts'

const entry = (name: string, protocol: string) => `  ${name}:
    use: mcp-client
    config:
      serverName: ${name}
      command: ${JSON.stringify(process.execPath)}
      args: [${JSON.stringify(MODERN)}]
      protocol: ${protocol}
`
const project = tempProject({
  'yoke.config.yaml': `preset: base\nplugins:\n${entry('modern', '2026-07-28')}${entry('old', 'legacy')}`,
})
after(() => project.cleanup())
const call = (tool: string, input: string) =>
  runYokeWithInput(
    ['tools', 'call', tool, '--args', '{"what":"the deploy"}', '--fresh'],
    { cwd: project.dir, home: project.home },
    input,
  )

describe('MCP questions on the terminal', () => {
  for (const server of ['modern', 'old'])
    it(`${server}: a form is filled in, a URL confirmed, a refusal declines`, async () => {
      const yes = await call(`mcp__${server}__confirm`, 'y\ny\n')
      assert.equal(yes.code, 0, yes.stderr)
      assert.match(yes.stderr, /MCP server "\w+" asks: Allow the deploy\?/)
      assert.match(yes.stderr, /OK\? \(y\/n\): /)
      assert.match(yes.stdout, /confirm the deploy: accept \{"ok":true\}/)
      const url = await call(`mcp__${server}__confirm-url`, 'y\n')
      assert.match(url.stderr, /open https:\/\/example\.com\/confirm\?what=the%20deploy/)
      assert.match(url.stdout, /confirm-url the deploy: accept/)
      const no = await call(`mcp__${server}__confirm`, 'n\n')
      assert.match(no.stdout, /confirm the deploy: decline/)
    })

  it('no answer (the input ends) cancels: the call ends with a clear result, no hang', async () => {
    const ended = await call('mcp__modern__confirm', '')
    assert.match(ended.stdout + ended.stderr, /confirm the deploy: cancel/)
  })
})
