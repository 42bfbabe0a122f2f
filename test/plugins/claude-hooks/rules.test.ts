// The pure parts of claude-hooks' newer surface: `if` permission rules (Claude Code's Bash
// matching table, file globs, domains, MCP servers; failing open), a prompt or agent handler's
// verdict as the reply a command would give per event, mcp_tool names and inputs, StopFailure's
// error types.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compileRule, subcommands, type RuleSubject } from '../../../plugins/claude-hooks/rules.ts'
import {
  fillInput,
  mcpToolName,
  promptText,
  readVerdict,
  verdictReply,
} from '../../../plugins/claude-hooks/model-handlers.ts'
import { modelFailure } from '../../../plugins/claude-hooks/agent.ts'
import type { PromptHandler } from '../../../plugins/claude-hooks/format.ts'

const runs = (rule: string, names: string[], args: Record<string, unknown>, cwd = '/p') => {
  const r = compileRule(rule)
  assert.equal(typeof r, 'function', String(r))
  return (r as (s: RuleSubject) => boolean)({ names, args, cwd })
}
const bash = (rule: string, command: string) => runs(rule, ['shell_run', 'Bash'], { command })

describe('if: permission rules as Claude Code reads them', () => {
  it('Bash: each subcommand, leading assignments stripped, $() and backticks read (the docs’ table)', () => {
    assert.ok(bash('Bash(git *)', 'FOO=bar git push'))
    assert.ok(bash('Bash(git *)', 'npm test && git push'))
    assert.ok(bash('Bash(rm *)', 'echo $(rm -rf /)'))
    assert.ok(!bash('Bash(rm *)', 'echo $(date)'))
    assert.ok(bash('Bash(git push *)', 'echo $(date)'), 'more than the name: runs anyway')
    assert.ok(bash('Bash(rm *)', 'echo `rm -rf x`'))
    assert.ok(!bash('Bash(git *)', 'npm test'))
    assert.ok(!bash('Bash(git *)', "echo 'git push && x'"), 'operators inside quotes do not split')
  })
  it('Bash: the older prefix form and a bare command; an unparsable command fails open', () => {
    assert.ok(bash('Bash(git commit:*)', 'git commit -m wip'))
    assert.ok(bash('Bash(git commit:*)', 'git commit'))
    assert.ok(!bash('Bash(git commit:*)', 'git push'))
    assert.ok(!bash('Bash(ls *)', 'lsof'))
    assert.ok(bash('Bash(npm test)', 'npm test'))
    assert.ok(bash('Bash(git *)', 'echo "unterminated'), 'fails open')
  })
  it('the rule’s tool must be the call’s (a yoke name or a Claude Code name mapped to it)', () => {
    assert.ok(!runs('Bash(git *)', ['notes_add'], { command: 'git push' }))
    assert.ok(runs('notes_add', ['notes_add'], {}))
    assert.ok(runs('mcp__github', ['mcp__github__create_issue'], {}))
    assert.ok(!runs('mcp__github', ['mcp__gitlab__create_issue'], {}))
    assert.ok(runs('mcp__github__*', ['mcp__github__x'], {}))
  })
  it('file tools: gitignore-style globs from the project directory; a bare name at any depth', () => {
    const edit = (rule: string, file_path: string) => runs(rule, ['Edit'], { file_path })
    assert.ok(edit('Edit(*.ts)', '/p/src/deep/a.ts'))
    assert.ok(!edit('Edit(*.ts)', '/p/src/a.js'))
    assert.ok(edit('Edit(src/**)', '/p/src/a/b.ts'))
    assert.ok(!edit('Edit(src/**)', '/p/lib/src/b.ts'))
    assert.ok(edit('Edit(**/src/**)', '/p/lib/src/b.ts'))
    assert.ok(edit('Edit(//etc/*)', '/etc/hosts'))
    assert.ok(edit('Edit(src/a.ts)', 'src/a.ts'), 'a relative path is from the project')
    assert.ok(!edit('Edit(*.ts)', '/elsewhere/a.ts'), 'outside the base')
    assert.ok(runs('Read(*.md)', ['Read'], {}), 'no path argument: fails open')
  })
  it('WebFetch domains, and any other tool’s string arguments', () => {
    assert.ok(runs('WebFetch(domain:example.com)', ['WebFetch'], { url: 'https://example.com/x' }))
    assert.ok(!runs('WebFetch(domain:example.com)', ['WebFetch'], { url: 'https://evil.com/' }))
    assert.ok(
      runs('WebFetch(domain:*.example.com)', ['WebFetch'], { url: 'https://a.example.com' }),
    )
    assert.ok(runs('notes_add(ship *)', ['notes_add'], { command: 'ship it' }))
    assert.ok(!runs('notes_add(ship *)', ['notes_add'], { command: 'hold it' }))
  })
  it('a rule that is not one is said so', () => {
    assert.match(String(compileRule('Bash(git *) && Edit')), /one permission rule/)
  })
  it('subcommands splits a pipeline and reads substitutions', () => {
    assert.deepEqual(subcommands('a | b; c && d || e'), ['a', 'b', 'c', 'd', 'e'])
    assert.deepEqual(subcommands('X=1 Y="2 3" make all'), ['make all'])
    assert.deepEqual(subcommands('echo $(cd x && rm y)'), ['echo $(cd x && rm y)', 'cd x', 'rm y'])
    assert.equal(subcommands('echo $(unclosed'), undefined)
  })
})

describe('prompt and agent handlers’ verdicts', () => {
  const prompt = (more: Partial<PromptHandler> = {}) =>
    ({ type: 'prompt', prompt: 'x', ...more }) as PromptHandler
  it('$ARGUMENTS is the input JSON (appended when absent); \\$ is a literal $', () => {
    assert.equal(promptText('check $ARGUMENTS now', { a: 1 }), 'check {"a":1} now')
    assert.equal(promptText('costs \\$1.00', { a: 1 }), 'costs $1.00\n\n{"a":1}')
  })
  it('the model’s answer is read from its first { to its last }', () => {
    assert.deepEqual(readVerdict('Sure: {"ok": false, "reason": "no"} done'), {
      ok: false,
      reason: 'no',
    })
    assert.match(String(readVerdict('yes')), /not JSON/)
    assert.match(String(readVerdict('{"allow": true}')), /no boolean "ok"/)
  })
  it('ok: false per event, as Claude Code’s table says', () => {
    const no = { ok: false, reason: 'nope' }
    const pre = verdictReply('PreToolUse', no, prompt())
    assert.equal(pre.kind === 'ok' && pre.json?.hookSpecificOutput?.permissionDecision, 'deny')
    assert.equal(pre.kind === 'ok' && pre.json?.continue, false, 'a prompt hook ends the turn')
    const goOn = verdictReply('PreToolUse', no, prompt({ continueOnBlock: true }))
    assert.equal(goOn.kind === 'ok' && goOn.json?.continue, undefined)
    const post = verdictReply('PostToolUse', no, { type: 'agent', prompt: 'x' } as never)
    assert.equal(post.kind === 'ok' && post.json?.decision, 'block', 'an agent hook continues')
    const impossible = verdictReply('Stop', { ...no, impossible: true }, prompt())
    assert.deepEqual(impossible, { kind: 'ok', text: '' })
    const stop = verdictReply('Stop', no, prompt())
    assert.equal(stop.kind === 'ok' && stop.json?.reason, 'nope')
    assert.deepEqual(verdictReply('PermissionRequest', no, prompt()), { kind: 'ok', text: '' })
    assert.deepEqual(verdictReply('Stop', { ok: true }, prompt()), { kind: 'ok', text: '' })
  })
})

describe('mcp_tool names and inputs; StopFailure error types', () => {
  it('a server and a plugin’s scoped server name the tool as Claude Code names it', () => {
    assert.equal(mcpToolName('github', 'create_issue'), 'mcp__github__create_issue')
    assert.equal(mcpToolName('plugin:my-plugin:db', 'query'), 'mcp__plugin_my-plugin_db__query')
  })
  it('${path} fills strings from the hook input; a whole ${…} keeps the value', () => {
    const input = { tool_input: { file_path: '/a.ts', lines: [1, 2] }, tool_name: 'Edit' }
    assert.deepEqual(
      fillInput(
        {
          path: '${tool_input.file_path}',
          note: '${tool_name} on ${tool_input.file_path}',
          l: '${tool_input.lines}',
          n: 3,
        },
        input,
      ),
      { path: '/a.ts', note: 'Edit on /a.ts', l: [1, 2], n: 3 },
    )
  })
  it('a model failure’s reason gives the error type; another failure is none', () => {
    assert.equal(modelFailure('MODEL_FAILED openai: 429 Rate limit reached'), 'rate_limit')
    assert.equal(modelFailure('MODEL_FAILED anthropic: 529 overloaded'), 'overloaded')
    assert.equal(modelFailure('MODEL_FAILED openai: 401 invalid api key'), 'authentication_failed')
    assert.equal(modelFailure('MODEL_TIMEOUT the model did not answer'), 'unknown')
    assert.equal(modelFailure('a hook stopped the run'), undefined)
  })
})
