// claude-hooks' decisions without a kernel: what Stop and UserPromptSubmit replies decide, and a
// ClaudeHooks instance's hook table (a broken edit of a file keeps that file's last good hooks).
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { promptBlock, stopVerdict } from '../../../plugins/claude-hooks/agent.ts'
import { ClaudeHooks, type Replies } from '../../../plugins/claude-hooks/claude-hooks.ts'
import type { HookEntry } from '../../../plugins/claude-hooks/format.ts'
import type { Reply } from '../../../plugins/claude-hooks/handlers.ts'
import { removeTree, tempDir } from '../../helpers/temp.ts'

const entry = { label: 'settings.json Stop[0].hooks[0] "check"' } as HookEntry
const replies = (...list: Reply[]): Replies => list.map((reply) => ({ entry, reply }))

describe('claude-hooks: Stop replies', () => {
  it('block and additionalContext send the model on, with the reasons joined after an earlier one', () => {
    assert.deepEqual(stopVerdict(replies(), { kind: 'stop' }), { kind: 'stop' })
    assert.deepEqual(
      stopVerdict(
        replies(
          { kind: 'block', reason: 'tests fail' },
          {
            kind: 'ok',
            text: '',
            json: { hookSpecificOutput: { hookEventName: 'Stop', additionalContext: 'and lint' } },
          },
        ),
        { kind: 'continue', reason: 'first' },
      ),
      { kind: 'continue', reason: 'first\ntests fail\nand lint' },
    )
  })

  it('continue: false ends the run whatever else was said', () => {
    assert.deepEqual(
      stopVerdict(
        replies(
          { kind: 'block', reason: 'go on' },
          { kind: 'ok', text: '', json: { continue: false } },
        ),
        { kind: 'continue', reason: 'an earlier tap' },
      ),
      { kind: 'stop' },
    )
  })
})

describe('claude-hooks: UserPromptSubmit replies', () => {
  it('exit 2 or decision block refuses the prompt and names the hook', () => {
    assert.equal(promptBlock(replies({ kind: 'ok', text: 'context' })), undefined)
    assert.match(
      promptBlock(replies({ kind: 'block', reason: 'no secrets' }))!,
      /hook settings\.json Stop\[0\]\.hooks\[0\] "check" blocked the prompt: no secrets/,
    )
    assert.match(
      promptBlock(replies({ kind: 'ok', text: '', json: { decision: 'block' } }))!,
      /blocked the prompt: no reason given/,
    )
  })
})

describe('claude-hooks: the hook table', () => {
  const dir = tempDir('yoke-claude-hooks-table-')
  after(() => removeTree(dir))
  const logs: string[] = []
  const log = (m: string) => void logs.push(m)
  const logger = { debug: log, info: log, warn: log, error: log } as never

  it('reads the inline hooks and each file; a broken edit keeps the last good read', () => {
    const file = join(dir, 'hooks.json')
    const hooks = { PreToolUse: [{ matcher: 'Bash', hooks: [{ type: 'command', command: 'a' }] }] }
    writeFileSync(file, JSON.stringify({ hooks }))
    const table = new ClaudeHooks(
      {
        hooks: { Stop: [{ hooks: [{ type: 'command', command: 'b' }] }] },
        files: ['hooks.json'],
        source: 'my-plugin',
        env: [],
        toolNames: {},
      },
      { logger, projectDir: dir },
    ).start()
    assert.ok(table.has('PreToolUse') && table.has('Stop'))
    assert.equal(table.has('SessionStart'), false)
    writeFileSync(file, '{ "hooks": ')
    table.readFile(file)
    assert.ok(table.has('PreToolUse'), 'the last good hooks stay')
    assert.ok(logs.some((l) => l.startsWith('my-plugin: ') && l.includes(file)))
    writeFileSync(file, JSON.stringify({ hooks: {} }))
    table.readFile(file)
    assert.equal(table.has('PreToolUse'), false)
  })
})
