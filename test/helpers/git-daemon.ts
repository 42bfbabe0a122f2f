/**
 * Git repositories for install tests: made with a fixed identity and no user config, and served
 * over loopback by a real `git daemon` (git://127.0.0.1:PORT/NAME), killed by its pid in `close`.
 *
 *   const served = await serveGit(dir)        // every repository under dir
 *   add(`${served.url('tools.git')}#v1:skills/fmt`, …)
 *   after(() => served.close())
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { connect, createServer } from 'node:net'

const ENV = {
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.com',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
}

/** Runs git in `cwd`; its stdout, trimmed. */
export const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...ENV },
    maxBuffer: 64 * 1024 * 1024,
  }).trim()

/** Everything in the repository committed; the commit. */
export function commitAll(dir: string, message = 'commit'): string {
  git(dir, 'add', '-A')
  git(dir, 'commit', '--quiet', '--allow-empty', '-m', message)
  return git(dir, 'rev-parse', 'HEAD')
}

/** `git init` on `main`, with everything in the folder committed; the commit. */
export function initRepo(dir: string): string {
  git(dir, 'init', '--quiet', '--initial-branch=main')
  return commitAll(dir, 'first')
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })

export interface ServedGit {
  /** git://127.0.0.1:PORT/NAME for a repository under the served folder */
  url(name: string): string
  close(): Promise<void>
}

/** Serves every repository under `base` with `git daemon` on a free loopback port. */
export async function serveGit(base: string): Promise<ServedGit> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort()
    const daemon: ChildProcess = spawn(
      'git',
      [
        'daemon',
        '--reuseaddr',
        '--listen=127.0.0.1',
        `--port=${port}`,
        `--base-path=${base}`,
        '--export-all',
        '--informative-errors',
        base,
      ],
      { stdio: 'ignore', env: { ...process.env, ...ENV } },
    )
    const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()))
    // ready when it accepts; a port taken meanwhile makes it exit: another port then
    let gone = false
    void exited.then(() => (gone = true))
    while (!gone && !(await accepts(port))) await new Promise((r) => setTimeout(r, 20))
    if (gone) {
      if (attempt < 5) continue
      throw new Error('git daemon did not start')
    }
    return {
      url: (name) => `git://127.0.0.1:${port}/${name}`,
      close: async () => {
        if (daemon.exitCode === null) daemon.kill('SIGTERM')
        await exited
      },
    }
  }
}
