/**
 * The console's browser tests' harness: Debian's chromium driven by playwright-core (headless;
 * `--no-sandbox` as root), a real `yoke dev` in a temp project whose console URL is read from its
 * log, and screenshots — into a temp folder always, and the README's into
 * plugins/console/screenshots/ when YOKE_SCREENSHOTS=update (so a test run leaves the tree clean).
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { DevProcess, ROOT, type Project } from '../../../helpers/project.ts'

/** Where chromium is: CHROMIUM_PATH, else Debian's; undefined when there is none. */
export const CHROMIUM = [
  process.env.CHROMIUM_PATH,
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
]
  .filter((p): p is string => !!p)
  .find((p) => existsSync(p))

/** Why the tests skip where no chromium exists. */
export const NO_CHROMIUM = 'no chromium: apt-get install chromium (or set CHROMIUM_PATH)'

/** The bound of one wait for the page (a selector, a text): it only catches one that never comes. */
export const WAIT_MS = 60_000

export function launch(): Promise<Browser> {
  const root = process.getuid?.() === 0
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: root ? ['--no-sandbox'] : [],
  })
}

/** A page that fails on the page's own errors (an uncaught exception or a console error). */
export async function newPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 } })
  const page = await context.newPage()
  page.setDefaultTimeout(WAIT_MS)
  const errors: string[] = []
  page.on('pageerror', (e) => errors.push(String(e)))
  return { page, errors }
}

const URL_RE = /http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+/

/**
 * A `yoke dev` in `project` and its console's URL (with the token), read from its log. When the
 * console fails to start (or never says its URL), the dev is stopped and the error names why.
 */
export async function startDev(
  project: Project,
  env: Record<string, string> = {},
): Promise<{ dev: DevProcess; url: URL }> {
  if (!existsSync(join(ROOT, 'dist', 'console', 'index.html')))
    throw new Error('the console page is not built: run `npm run build` first')
  const dev = new DevProcess([], { cwd: project.dir, home: project.home, env })
  try {
    await dev.ready()
    const said = await dev.next(
      (e) =>
        (e.type === 'log' && typeof e.message === 'string' && URL_RE.test(e.message)) ||
        (e.type === 'state' && e.instance === 'console' && e.state === 'failed'),
      WAIT_MS,
      0,
    )
    if (said.type === 'state') throw new Error(`the console failed: ${JSON.stringify(said.error)}`)
    return { dev, url: new URL(URL_RE.exec(said.message)![0]) }
  } catch (e) {
    await dev.stop()
    throw e
  }
}

let shots: string | undefined

/**
 * Saves a screenshot of the page as `name`.png in a temp folder (returned); with `readme` and
 * YOKE_SCREENSHOTS=update, also into plugins/console/screenshots/ for the README.
 */
export async function screenshot(page: Page, name: string, readme = false): Promise<string> {
  shots ??= mkdtempSync(join(tmpdir(), 'yoke-console-shots-'))
  const file = join(shots, `${name}.png`)
  await page.screenshot({ path: file, fullPage: false })
  if (readme && process.env.YOKE_SCREENSHOTS === 'update') {
    const dir = join(ROOT, 'plugins', 'console', 'screenshots')
    mkdirSync(dir, { recursive: true })
    await page.screenshot({ path: join(dir, `${name}.png`), fullPage: false })
  }
  return file
}
