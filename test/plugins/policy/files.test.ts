// The Claude Code settings files the policy plugin and `yoke policy import` read are read as configs
// are (readConfigText): a FIFO in place of one is an error naming it, never a read that blocks (the
// command runs as a real process, bounded); a missing one still has no rules.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { describe, it } from 'node:test'
import { readClaudeSettings } from '../../../plugins/policy/claude.ts'
import { runYoke, suiteProjects } from '../../helpers/project.ts'

describe('Claude Code settings are read as configs', () => {
  const made = suiteProjects()

  it('a FIFO as .claude/settings.json: policy import and a composition end, naming it', async () => {
    const p = made({
      'yoke.config.yaml':
        'preset: base\nplugins:\n  policy:\n    config: { claudeSettings: [.claude/settings.json] }\n',
    })
    mkdirSync(p.path('.claude'))
    execFileSync('mkfifo', [p.path('.claude/settings.json')])
    const read = readClaudeSettings(p.path('.claude/settings.json'))
    assert.match(read.error?.message ?? '', /not a regular file \(a FIFO\)/)
    const imported = await runYoke(['policy', 'import'], {
      cwd: p.dir,
      home: p.home,
      timeoutMs: 90_000,
    })
    assert.equal(imported.code, 1, imported.stderr)
    assert.match(imported.stdout, /settings\.json:1:1: cannot read it: .*a FIFO/)
    const listed = await runYoke(['tools', 'list', '--json'], {
      cwd: p.dir,
      home: p.home,
      timeoutMs: 90_000,
    })
    assert.equal(typeof listed.code, 'number', 'the composition ended')
    assert.deepEqual(readClaudeSettings(p.path('.claude/none.json')), {
      file: p.path('.claude/none.json'),
      rules: [],
      warnings: [],
    })
  })
})
