// `yoke serve --http` as a real process, the MCP Inspector CLI against it, and the messages of a
// Streamable HTTP response: what the gateway tests share.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { ROOT, YOKE, type Project } from './project.ts'

export const INSPECTOR = join(ROOT, 'node_modules/@modelcontextprotocol/inspector/cli/build/cli.js')

export interface Served {
  child: ChildProcess
  /** what `yoke serve --json` printed first: the URL and the views' URLs */
  info: { url: string; views: Record<string, string> }
  stderr(): string
}

/**
 * Starts `yoke serve --http 127.0.0.1:PORT --json` in the project (`env` added to its environment;
 * port 0: any free one); fails after `timeoutMs`, or when it exits first.
 */
export async function serveHttp(
  project: Project,
  timeoutMs = 30_000,
  env: Record<string, string> = {},
  port = 0,
): Promise<Served> {
  const child = spawn(process.execPath, [YOKE, 'serve', '--http', `127.0.0.1:${port}`, '--json'], {
    cwd: project.dir,
    env: { ...process.env, NO_COLOR: '1', YOKE_HOME: project.home, ...env },
  })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`yoke serve did not start:\n${stderr}`))
    }, timeoutMs)
    createInterface({ input: child.stdout! }).once('line', (l) => {
      clearTimeout(timer)
      resolve(l)
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`yoke serve exited ${code} before it started:\n${stderr}`))
    })
  })
  return { child, info: JSON.parse(line), stderr: () => stderr }
}

/** The Inspector CLI (`--cli ARGS…`) in the project: its exit code, its JSON, all it printed. */
export function inspector(
  project: Project,
  args: string[],
): Promise<{ code: number; json: any; out: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [INSPECTOR, '--cli', ...args],
      { cwd: project.dir, timeout: 30_000, env: { ...process.env, NO_COLOR: '1' } },
      (err, stdout, stderr) => {
        if (err?.killed) return reject(new Error(`the inspector timed out: ${stderr}`))
        let json: unknown
        try {
          json = JSON.parse(stdout)
        } catch {
          json = undefined
        }
        resolve({ code: err ? Number(err.code ?? 1) : 0, json, out: `${stdout}\n${stderr}` })
      },
    )
  })
}

/** The JSON-RPC messages of a Streamable HTTP response: one JSON body, or an SSE stream's `data:` lines. */
export async function messagesOf(res: Response): Promise<any[]> {
  const text = await res.text()
  return res.headers.get('content-type')?.includes('text/event-stream')
    ? text
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => JSON.parse(l.slice(5)))
    : [JSON.parse(text)]
}
