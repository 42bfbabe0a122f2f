// The web console in a real browser (Debian's chromium, headless, driven by playwright-core)
// against a real `yoke dev`: the token, a trust wait ending live, the reload feed, a tool run from
// its form and opened in the timeline, a high-risk approval answered in the page, an MCP server's
// stderr, a recorded agent run replayed and forked. Each view is watched change without reloading the page. Skips only where no chromium is.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import type { ToolCallResponse } from '../../../../plugins/console/protocol.ts'
import { runYoke, suiteProjects, type DevProcess, type Project } from '../../../helpers/project.ts'
import { CHROMIUM, NO_CHROMIUM, WAIT_MS, launch, newPage, screenshot, startDev } from './browser.ts'
import {
  CONFIG,
  HELLO_PLUGIN,
  NOISY_SERVER,
  RUNS_CONFIG,
  RUNS_DESK,
  SCRIPTED_MODEL,
  TOOLS_PLUGIN,
  UNTRUSTED_CONFIG,
} from './fixtures.ts'

const skip = CHROMIUM ? false : NO_CHROMIUM
const project = suiteProjects()

/** Marks the page, so a later check proves it was not loaded again. */
const mark = (page: Page) => page.evaluate(() => ((window as any).__sameLoad = true))
const sameLoad = (page: Page) => page.evaluate(() => (window as any).__sameLoad === true)

describe('the web console in a browser', { skip }, () => {
  let browser: Browser
  let p: Project
  let dev: DevProcess
  let url: URL
  let page: Page
  let errors: string[]

  before(async () => {
    p = project({
      'plugins/desk.mjs': TOOLS_PLUGIN,
      'noisy.mjs': NOISY_SERVER,
      'yoke.config.yaml': CONFIG(),
    })
    browser = await launch()
    ;({ dev, url } = await startDev(p))
    ;({ page, errors } = await newPage(browser))
  })
  after(async () => {
    await browser?.close()
    const code = await dev?.stop()
    assert.equal(code, 0, dev?.stderr)
  })

  it('answers 401 without the token; with it, the page drops the token and shows the doctor', async () => {
    const bare = await page.goto(url.origin + '/')
    assert.equal(bare!.status(), 401)
    assert.match(await bare!.text(), /yoke console/)

    await page.goto(url.href)
    await page.waitForSelector('[data-view=doctor] .summary')
    await page.waitForSelector('[data-connection=live]')
    assert.equal(new URL(page.url()).searchParams.get('token'), null, 'the token left the address')
    assert.equal(
      await page.getAttribute('[data-nav=doctor]', 'class').then((c) => /current/.test(c!)),
      true,
    )
    await mark(page)
    await screenshot(page, 'doctor')
  })

  it('shows a config edit in the reload feed, without touching the page', async () => {
    await page.click('[data-nav=reloads]')
    await page.waitForSelector('[data-view=reloads] li.reload')
    const before = await page.locator('li.reload').count()
    p.write('yoke.config.yaml', CONFIG('> '))
    await page.waitForFunction((n) => document.querySelectorAll('li.reload').length > n, before)
    const newest = page.locator('li.reload').first()
    await newest.locator('.line.restarted', { hasText: 'desk' }).waitFor()
    assert.match((await newest.textContent()) ?? '', /yoke\.config\.yaml/)
    assert.ok(await sameLoad(page), 'the page was not loaded again')
    await screenshot(page, 'reloads')
  })

  it('runs a tool from the form its schema makes, and opens the call in the timeline', async () => {
    await page.click('[data-nav=tools]')
    await page.click('tr[data-tool=echo] a')
    const form = page.locator('form.run[data-tool=echo]')
    await form.locator('input[name=text]').fill('hey')
    await form.locator('input[name=times]').fill('2')
    await form.locator('input[name=loud]').check()
    await form.locator('select[name=mode]').selectOption({ label: 'fancy' })
    await form.locator('.array button', { hasText: 'add' }).click()
    await form.locator('input[name="tags[0]"]').fill('one')
    await form.locator('input[name="opts.prefix"]').fill('~')
    await form.locator('button[type=submit]').click()
    const result = form.locator('.result')
    await result.waitFor()
    assert.match((await result.textContent()) ?? '', /\*~HEY HEY\* #one/)
    await screenshot(page, 'tool-form')

    await result.locator('a.open-call').click()
    const span = page.locator('[data-view=calls] li.span.open[data-tool=echo]')
    await span.waitFor()
    assert.match((await span.textContent()) ?? '', /echo/)
    assert.ok(await sameLoad(page))
    await screenshot(page, 'calls')
  })

  it('answers a high-risk approval in the browser; the call it held goes on', async () => {
    await page.click('[data-nav=approvals]')
    await page.waitForSelector('[data-view=approvals]')
    const call = fetch(new URL('/api/tools/wipe/call', url), {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${url.searchParams.get('token')}`,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ args: {} }),
    })
    const pending = page.locator('li.pending.approval', { hasText: 'wipe' })
    await pending.waitFor()
    await page.locator('[data-nav=approvals] .count', { hasText: '1' }).waitFor()
    await screenshot(page, 'approval')
    await pending.locator('button[data-answer=allow-once]').click()
    const answer = await call
    assert.equal(answer.status, 200)
    const body = (await answer.json()) as ToolCallResponse
    assert.equal(body.result.ok, true)
    assert.deepEqual(body.result.content, [{ type: 'text', text: 'wiped' }])
    assert.ok(body.spanId, 'the call was traced')
    await page.locator('ul.answered li', { hasText: 'allow-once' }).waitFor()
    assert.equal(await page.locator('li.pending').count(), 0)

    // the held call in the timeline: its approval among the pipeline's decisions
    await page.evaluate((id) => (location.hash = `#/calls/${id}`), body.spanId)
    await page.locator('li.span.open[data-tool=wipe]').waitFor()
    assert.ok(await sameLoad(page), 'the page was not loaded again')
    await screenshot(page, 'calls', true)
  })

  it("shows an MCP server's stderr", async (t) => {
    await page.click('[data-nav=servers]')
    await page.locator('[data-server=noisy]').waitFor()
    const note = (await page.locator('[data-view=servers] .unavailable').allTextContents())[0]
    if (note && /stderr/.test(note)) return t.skip(`the console says: ${note}`)
    await page
      .locator('[data-server=noisy] pre.stderr', { hasText: 'warming up the flux capacitor' })
      .waitFor()
    await screenshot(page, 'servers')
    assert.deepEqual(errors, [], 'no error on the page')
  })
})

describe('the web console watches trust', { skip }, () => {
  it('shows an instance waiting for `yoke trust`, and it starting after, without a reload', async () => {
    const p = project({ 'plugins/hello.mjs': HELLO_PLUGIN, 'yoke.config.yaml': UNTRUSTED_CONFIG })
    const browser = await launch()
    let dev: DevProcess | undefined
    try {
      let url: URL
      ;({ dev, url } = await startDev(p, { YOKE_TRUST: '' }))
      const { page, errors } = await newPage(browser)
      await page.goto(new URL('#/composition', url).href)
      const hello = page.locator('li.instance[data-key=hello]')
      await hello.and(page.locator('[data-state=pending]')).waitFor()
      assert.match((await hello.textContent()) ?? '', /yoke trust/)
      await mark(page)
      await screenshot(page, 'composition', true)

      const trusted = await runYoke(['trust'], { cwd: p.dir, home: p.home })
      assert.equal(trusted.code, 0, trusted.stderr)
      await hello.and(page.locator('[data-state=active]')).waitFor({ timeout: WAIT_MS })
      assert.ok(await sameLoad(page), 'the page was not loaded again')
      await screenshot(page, 'composition-trusted')
      assert.deepEqual(errors, [])
    } finally {
      await browser.close()
      if (dev) assert.equal(await dev.stop(), 0, dev.stderr)
    }
  })
})

describe('the web console replays and forks agent runs', { skip }, () => {
  it('replay a recorded run and fork it', async () => {
    const p = project({
      'plugins/desk.mjs': RUNS_DESK,
      'plugins/scripted.mjs': SCRIPTED_MODEL,
      'yoke.config.yaml': RUNS_CONFIG(),
    })
    const browser = await launch()
    let dev: DevProcess | undefined
    try {
      let url: URL
      ;({ dev, url } = await startDev(p))
      const { page, errors } = await newPage(browser)
      await page.goto(new URL('#/runs', url).href)
      await page.locator('[data-view=runs] .empty').waitFor()
      await mark(page)

      // a run recorded in another terminal appears by itself
      const ran = await runYoke(['run', '--record', 'run.cassette.jsonl', 'echo hey'], {
        cwd: p.dir,
        home: p.home,
      })
      assert.equal(ran.code, 0, ran.stderr)
      const row = page.locator('table.runs tr[data-run]')
      await row.waitFor()
      await row.locator('a').first().click()
      const run = page.locator('[data-open-run]')
      await run.locator('li[data-turn="1"] .step.tool-call', { hasText: 'echo' }).waitFor()
      await run.locator('li[data-turn="2"] .step.text', { hasText: 'the desk said: hey' }).waitFor()

      // the replay plays the cassette against the tools as they are: it matches
      await run.locator('button.replay').click()
      await run.locator('.job[data-state=matched]', { hasText: 'matches the recording' }).waitFor()

      // the desk changes; the replay no longer matches, and says at which turn and how
      const seen = dev.events.length
      p.write('yoke.config.yaml', RUNS_CONFIG('> '))
      await dev.next((e) => e.type === 'reload', WAIT_MS, seen)
      await run.locator('button.replay').click()
      const mismatch = run.locator('.job[data-state=departed] .mismatch')
      await mismatch.waitFor()
      assert.match((await mismatch.textContent()) ?? '', /turn 2 .*recorded "hey", now "> hey"/)

      // a fork at turn 1 runs with the current desk: side by side, it departs at the tool's result
      await run.locator('button[data-fork="1"]').click()
      const fork = run.locator('.job[data-state=departed]', { hasText: 'Fork at turn 1' })
      await fork.locator('table.compare tr.departs').waitFor()
      assert.match((await fork.locator('.departure').textContent()) ?? '', /tool result echo/)
      const departs = await fork.locator('table.compare tr.departs td').allTextContents()
      assert.match(departs[0]!, /hey/)
      assert.match(departs[1]!, /> hey/)
      assert.ok(await sameLoad(page), 'the page was not loaded again')
      await fork.scrollIntoViewIfNeeded()
      await screenshot(page, 'runs', true)
      assert.deepEqual(errors, [])
    } finally {
      await browser.close()
      if (dev) assert.equal(await dev.stop(), 0, dev.stderr)
    }
  })
})
