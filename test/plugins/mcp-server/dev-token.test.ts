/**
 * The dev screen names the MCP bearer token's file, never the token (issue 27): what `yoke dev`
 * prints stays in the terminal's scrollback (and in screen recordings, CI logs, pasted bug
 * reports), and its log file keeps every record. A real `yoke dev` with an mcp-server instance
 * that generates its token on first start; the token is read from its file and looked for in the
 * dev's stdout, stderr and `.yoke/logs/dev.log`.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { suiteProjects, YOKE } from '../../helpers/project.ts'
import { until } from '../../helpers/until.ts'

const projects = suiteProjects()

test('yoke dev names the generated token file and never prints the token (screen and log file)', async (t) => {
  const p = projects({
    'yoke.config.yaml': [
      'preset: minimal',
      'plugins:',
      '  serve:',
      '    use: mcp-server',
      '    config:',
      '      http: { host: 127.0.0.1, port: 0 }',
      '',
    ].join('\n'),
  })
  const dev = spawn(process.execPath, [YOKE, 'dev'], {
    cwd: p.dir,
    env: { ...process.env, NO_COLOR: '1', YOKE_HOME: p.home },
  })
  t.after(() => dev.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  dev.stdout.on('data', (d) => (stdout += d))
  dev.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => dev.on('exit', resolve))
  await until(
    () => `the dev to be ready\n${stdout}\n${stderr}`,
    () => / ready in /.test(stdout),
    { ms: 90_000, every: 100 },
  )
  dev.kill('SIGINT')
  await exited
  const file = join(p.home, 'mcp-token')
  assert.ok(existsSync(file), 'the token was generated')
  const token = readFileSync(file, 'utf8').trim()
  assert.ok(token.length >= 16)
  const log = readFileSync(p.path('.yoke/logs/dev.log'), 'utf8')
  // the file is named where the endpoint is shown
  assert.ok(stdout.includes(file), stdout)
  for (const [where, text] of [
    ['stdout', stdout],
    ['stderr', stderr],
    ['.yoke/logs/dev.log', log],
  ])
    assert.ok(!text.includes(token), `the token is in the dev's ${where}`)
})
