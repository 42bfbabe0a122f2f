/**
 * `yoke console`: asks the running `yoke dev` of this project for its console's URL (the control
 * `console/url`) and opens it in a browser (xdg-open, open, start), or prints it (`--print`,
 * `--json`, or when no browser can be started). With no dev running it says so, with the fix, and
 * exits 1. Light: it composes nothing.
 */
import { defineCommand, printJson, YokeError } from 'yoke/cli'
import type { ConsoleUrl } from './api.ts'

const consoleCommand = defineCommand({
  name: 'console',
  summary: "open the running yoke dev's web console in a browser (--print: print its URL)",
  usage: 'yoke console [--print] [--json] [common flags]',
  flags: {
    print: { type: 'boolean', description: 'print the URL (with its token) instead of opening it' },
  },
  examples: ['yoke console', 'yoke console --print'],
  async run(args, _, cli) {
    let answer: ConsoleUrl | undefined
    try {
      answer = (await cli.live('console/url')) as ConsoleUrl | undefined
    } catch (err) {
      // a dev without the console plugin (an older yoke, a preset without it)
      if (!(err instanceof YokeError && err.code === 'CONTROL_UNKNOWN')) throw err
      answer = { listening: false, why: 'the running yoke dev has no console instance' }
    }
    if (!answer) {
      const why =
        'no yoke dev runs this project, so no console is served: start `yoke dev` here (it prints the console URL), then run `yoke console`'
      if (cli.json) printJson({ listening: false, why })
      else process.stderr.write(`${why}\n`)
      return 1
    }
    if (!answer.listening || !answer.url) {
      const why = `the running yoke dev serves no console: ${answer.why ?? 'it is off'}`
      if (cli.json) printJson({ ...answer, why })
      else process.stderr.write(`${why}\n`)
      return 1
    }
    if (cli.json) printJson(answer)
    else if (args.print) process.stdout.write(`${answer.url}\n`)
    else if (await openBrowser(answer.url))
      process.stderr.write(`opened ${answer.base} in your browser\n`)
    else process.stdout.write(`${answer.url}\n`)
    return 0
  },
})

/** Starts the system's opener on `url`; false when there is none (a headless machine). */
async function openBrowser(url: string): Promise<boolean> {
  const [command, ...args] =
    process.platform === 'darwin'
      ? ['open', url]
      : process.platform === 'win32'
        ? ['cmd', '/c', 'start', '""', url]
        : ['xdg-open', url]
  if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)
    return false
  const { spawn } = await import('node:child_process')
  return new Promise((resolve) => {
    const child = spawn(command!, args, { stdio: 'ignore', detached: true })
    child.once('error', () => resolve(false))
    child.once('spawn', () => {
      child.unref()
      resolve(true)
    })
  })
}

export const commands = [consoleCommand]
