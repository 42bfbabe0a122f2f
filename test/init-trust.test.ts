/**
 * `yoke init && yoke tools list` (the README's first lines for a new project) runs what init
 * wrote: the config yoke wrote is trusted as written, nothing else. With no YOKE_TRUST in the
 * environment (test/run.js sets it; removed here), as a newcomer runs it.
 */
import assert from 'node:assert/strict'
import { appendFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { it } from 'node:test'
import { runCommand, suiteProjects, YOKE } from './helpers/project.ts'

const projects = suiteProjects()

function yoke(args: string[], cwd: string, home: string) {
  const env: Record<string, string> = { ...(process.env as Record<string, string>) }
  delete env.YOKE_TRUST
  return runCommand(process.execPath, [YOKE, ...args], {
    cwd,
    env: { ...env, NO_COLOR: '1', YOKE_HOME: home },
    ms: 90_000,
  })
}

it('yoke init trusts the config it wrote: tools list then runs its plugin and package; an edit asks again', async () => {
  const parent = projects()
  const made = await yoke(['init', 'app'], parent.dir, parent.home)
  assert.equal(made.code, 0, made.stderr)
  assert.match(made.stdout, /^trusted /m)
  const app = join(parent.dir, 'app')
  const list = await yoke(['tools', 'list'], app, parent.home)
  assert.equal(list.code, 0, list.stdout + list.stderr)
  for (const tool of ['hello', 'shout', 'skills_list'])
    assert.match(list.stdout, new RegExp(`^${tool}\\s`, 'm'))
  assert.doesNotMatch(list.stderr, /waiting/)
  // the user's edit is the user's to trust: it waits again, and says so
  appendFileSync(join(app, 'yoke.config.yaml'), '# edited\n')
  const edited = await yoke(['tools', 'list'], app, parent.home)
  assert.equal(edited.code, 1, edited.stdout + edited.stderr)
  assert.match(
    edited.stderr,
    /waiting 2 instances wait for trust: hello .*, packages .*`yoke trust`/,
  )
})

it('yoke init trusts nothing that was there before it (a yoke.lock of the project)', async () => {
  const p = projects()
  writeFileSync(p.path('yoke.lock'), '{"version":1,"installs":{}}\n')
  const made = await yoke(['init'], p.dir, p.home)
  assert.equal(made.code, 0, made.stderr)
  assert.doesNotMatch(made.stdout, /^trusted /m)
  const list = await yoke(['tools', 'list'], p.dir, p.home)
  assert.match(list.stderr, /wait for trust/)
})
