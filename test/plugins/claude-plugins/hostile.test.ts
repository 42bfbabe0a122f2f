// claude-plugins against hostile folders (issue 27): a FIFO where a manifest is looked for must be
// refused, never read (a read would hang the command and every reload).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { createYoke } from '../../../src/index.ts'
import { suiteProjects } from '../../helpers/project.ts'

const project = suiteProjects()

describe('claude-plugins with a hostile folder', () => {
  it('a FIFO as .claude-plugin/plugin.json is a problem of that plugin, and nothing hangs', async () => {
    const p = project({
      'yoke.config.yaml':
        'plugins:\n  claude-plugins:\n    config:\n      dirs: [plugs]\n      watch: false\n',
      'plugs/good/commands/hello.md': '---\ndescription: hi\n---\nSay hello.\n',
      'plugs/fifo/commands/x.md': '---\ndescription: x\n---\nx\n',
    })
    execFileSync('mkdir', ['-p', p.path('plugs/fifo/.claude-plugin')])
    execFileSync('mkfifo', [p.path('plugs/fifo/.claude-plugin/plugin.json')])
    const yoke = createYoke({
      cwd: p.dir,
      home: p.home,
      env: { ...process.env, YOKE_HOME: p.home },
    })
    try {
      await yoke.ready
      const list = yoke.get('claudePlugins')!.list()
      assert.deepEqual(list.map((f) => f.name).sort(), ['fifo', 'good'])
      const fifo = list.find((f) => f.name === 'fifo')!
      assert.match(fifo.problems.join('\n'), /plugin\.json: .*not a regular file \(a FIFO\)/)
    } finally {
      await yoke.close()
    }
  })
})
