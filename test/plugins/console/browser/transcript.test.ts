// An MCP server's protocol transcript in the web console, in a real browser (Debian's chromium,
// headless, driven by playwright-core) against a real `yoke dev`: a tools/call made through the
// console's API shows in the MCP servers view paired with its answer, its password argument
// masked. Skips only where no chromium is.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import type { ToolCallResponse } from '../../../../plugins/console/protocol.ts'
import { suiteProjects, type DevProcess, type Project } from '../../../helpers/project.ts'
import { CHROMIUM, NO_CHROMIUM, launch, newPage, screenshot, startDev } from './browser.ts'

const require = createRequire(import.meta.url)
const sdk = (path: string) =>
  pathToFileURL(require.resolve(`@modelcontextprotocol/sdk/${path}`)).href

/** A real MCP stdio server (the SDK's low-level Server) with a read-only tool that takes a password. */
const VAULT_SERVER = `import { Server } from ${JSON.stringify(sdk('server/index.js'))}
import { StdioServerTransport } from ${JSON.stringify(sdk('server/stdio.js'))}
import { CallToolRequestSchema, ListToolsRequestSchema } from ${JSON.stringify(sdk('types.js'))}
const server = new Server({ name: 'vault', version: '1.0.0' }, { capabilities: { tools: {} } })
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{
    name: 'login',
    description: 'checks a password',
    annotations: { readOnlyHint: true },
    inputSchema: { type: 'object', properties: { user: { type: 'string' }, password: { type: 'string' } }, required: ['user', 'password'] },
  }],
}))
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [{ type: 'text', text: 'welcome, ' + request.params.arguments.user }],
}))
await server.connect(new StdioServerTransport())
`

const CONFIG = `preset: base
plugins:
  console:
    use: console
  vault:
    use: mcp-client
    config:
      serverName: vault
      command: ${JSON.stringify(process.execPath)}
      args: [./vault.mjs]
`

const PASSWORD = 'correct-horse-battery-staple'
const skip = CHROMIUM ? false : NO_CHROMIUM
const project = suiteProjects()

describe("an MCP server's protocol transcript in the browser", { skip }, () => {
  let browser: Browser
  let p: Project
  let dev: DevProcess
  let url: URL
  let page: Page
  let errors: string[]

  before(async () => {
    p = project({ 'vault.mjs': VAULT_SERVER, 'yoke.config.yaml': CONFIG })
    browser = await launch()
    ;({ dev, url } = await startDev(p))
    ;({ page, errors } = await newPage(browser))
  })
  after(async () => {
    await browser?.close()
    const code = await dev?.stop()
    assert.equal(code, 0, dev?.stderr)
  })

  it('shows a tools/call paired with its answer, the password masked', async () => {
    const answer = await fetch(new URL('/api/tools/mcp__vault__login/call', url), {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${url.searchParams.get('token')}`,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ args: { user: 'ada', password: PASSWORD } }),
    })
    assert.equal(answer.status, 200)
    const body = (await answer.json()) as ToolCallResponse
    assert.equal(body.result.ok, true, JSON.stringify(body.result.error))

    await page.goto(url.href)
    await page.click('[data-nav=servers]')
    const server = page.locator('[data-server=vault]')
    await server.waitFor()
    assert.deepEqual(
      await page.locator('[data-view=servers] .unavailable').allTextContents(),
      [],
      'the console no longer says transcripts are not offered',
    )
    const call = server.locator('li[data-method="tools/call"][data-from=yoke][data-status=ok]')
    await call.waitFor()
    await call.locator('summary').click()
    const shown = (await call.textContent()) ?? ''
    assert.match(shown, /"password":\s*"•••"/, shown)
    assert.match(shown, /"user":\s*"ada"/)
    assert.match(shown, /welcome, ada/, 'the answer is beside its request')
    assert.ok(!shown.includes(PASSWORD), 'the password never reaches the page')
    assert.ok(!(await page.content()).includes(PASSWORD))
    // the handshake and the notification that follows it are there too
    await server.locator('li[data-method=initialize][data-status=ok]').waitFor()
    await server
      .locator('li[data-method="notifications/initialized"][data-status=notification]')
      .waitFor()
    await call.scrollIntoViewIfNeeded()
    await screenshot(page, 'transcript', true)
    assert.deepEqual(errors, [], 'no error on the page')
  })
})
