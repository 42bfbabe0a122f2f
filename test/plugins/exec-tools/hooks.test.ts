// Shell hooks (octos.md §5) as real programs, from config and from package manifests, and the
// package extras: prompt files confined to the package, MCP servers as child instances.
import assert from 'node:assert/strict'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import shellHooks from '../../../plugins/shell-hooks/index.ts'
import { execHarness, nodeExe, type ExecHarness } from '../../helpers/exec.ts'
import { FIXTURE } from '../../helpers/mcp.ts'
import { until } from '../../helpers/until.ts'
import type { PromptApi } from '../../../plugins/prompt/api.ts'

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

/** A hook program: a sh script that logs its stdin to `log` and then runs `body`. */
function hookScript(dir: string, name: string, body: string): string {
  const file = join(dir, name)
  writeFileSync(
    file,
    `#!/bin/sh\npayload=$(cat)\nprintf '%s\\n' "$payload" >> ${join(dir, `${name}.log`)}\n${body}\n`,
  )
  chmodSync(file, 0o755)
  return file
}

describe('shell hooks', () => {
  let h: ExecHarness
  let dir: string
  const logOf = (name: string) =>
    readFileSync(join(dir, `${name}.log`), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'yoke-hooks-'))
    const deny = hookScript(dir, 'deny.sh', 'echo "no secrets today"; exit 1')
    const rewrite = hookScript(
      dir,
      'rewrite.sh',
      'echo \'{"msg":"rewritten by the hook"}\'; exit 2',
    )
    const badRewrite = hookScript(dir, 'bad-rewrite.sh', 'echo \'{"msg": 42}\'; exit 2')
    const broken = hookScript(dir, 'broken.sh', 'exit 7')
    const slow = hookScript(dir, 'slow.sh', 'sleep 5')
    const escaper = hookScript(
      dir,
      'escaper.sh',
      `${process.execPath} -e "require('child_process').spawn('sleep', ['30'], { detached: true, stdio: ['ignore', 'inherit', 'ignore'] }).unref()"; exit 0`,
    )
    const after = hookScript(dir, 'after.sh', 'exit 0')
    const allow = hookScript(dir, 'allow.sh', 'exit 0')
    h = await execHarness(
      {
        echoes: {
          manifest: {
            name: 'echoes',
            version: '1',
            tools: [
              'h_allowed',
              'h_denied',
              'h_rewritten',
              'h_bad_rewrite',
              'h_broken',
              'h_slow',
              'h_escaper',
              'read_file',
            ].map((name) => ({
              name,
              description: name,
              input_schema: { type: 'object', properties: { msg: { type: 'string' } } },
            })),
          },
          exe: nodeExe(
            `process.stdout.write(JSON.stringify({ output: tool + ': ' + (args.msg ?? '') }))`,
          ),
        },
      },
      {},
      [
        [
          shellHooks,
          {
            hooks: [
              {
                event: 'before_tool_call',
                command: [allow],
                tool_filter: ['h_allowed', 'read_file'],
              },
              { event: 'before_tool_call', command: [deny], tool_filter: ['h_denied'] },
              { event: 'before_tool_call', command: [rewrite], tool_filter: ['h_rewritten'] },
              { event: 'before_tool_call', command: [badRewrite], tool_filter: ['h_bad_rewrite'] },
              { event: 'before_tool_call', command: [broken], tool_filter: ['h_broken'] },
              {
                event: 'before_tool_call',
                command: [slow],
                tool_filter: ['h_slow'],
                timeout_ms: 200,
              },
              { event: 'before_tool_call', command: [escaper], tool_filter: ['h_escaper'] },
              {
                event: 'after_tool_call',
                command: [after],
                tool_filter: ['h_allowed', 'read_file'],
              },
              { event: 'before_llm_call', command: [allow] },
            ],
          },
          'hooks',
        ],
      ],
    )
  })
  after(async () => {
    await h.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('exit 0 allows, and the payload carries schema_version, event, tool_name, tool_id and the arguments', async () => {
    const r = await h.rt.call('h_allowed', { msg: 'hi' })
    assert.equal(text(r), 'h_allowed: hi')
    const [payload] = logOf('allow.sh')
    assert.deepEqual(
      { ...payload, tool_id: 'x' },
      {
        schema_version: 1,
        event: 'before_tool_call',
        tool_name: 'h_allowed',
        tool_id: 'x',
        arguments: { msg: 'hi' },
      },
    )
  })

  it('exit 1 denies with stdout as the reason', async () => {
    const r = await h.rt.call('h_denied', { msg: 'hi' })
    assert.equal(r.status, 'DENIED')
    assert.match(r.error!.message, /no secrets today/)
  })

  it('exit 2 replaces the arguments with stdout JSON, before approval and guards; arguments that fail the schema are ignored with a warning', async () => {
    const guarded: unknown[] = []
    const off = h.rt.guard((call) => void (call.name === 'h_rewritten' && guarded.push(call.args)))
    assert.equal(
      text(await h.rt.call('h_rewritten', { msg: 'original' })),
      'h_rewritten: rewritten by the hook',
    )
    off()
    assert.deepEqual(
      guarded,
      [{ msg: 'rewritten by the hook' }],
      'the guard saw what the body ran with',
    )
    assert.equal(
      text(await h.rt.call('h_bad_rewrite', { msg: 'original' })),
      'h_bad_rewrite: original',
    )
    assert.ok(
      h.logs.some((l) => /not a JSON object matching h_bad_rewrite's schema/.test(l.message)),
    )
  })

  it('a failing or timed-out hook never blocks; three failures in a row disable it', async () => {
    const started = Date.now()
    assert.equal((await h.rt.call('h_slow', {})).status, 'ok')
    assert.ok(Date.now() - started < 3000, 'the timeout bounded the hook')
    assert.ok(h.logs.some((l) => /hook timed out after 200ms/.test(l.message)))
    for (let i = 0; i < 4; i++)
      assert.equal((await h.rt.call('h_broken', { msg: String(i) })).status, 'ok')
    assert.equal(logOf('broken.sh').length, 3, 'the fourth call did not run the disabled hook')
    assert.ok(
      h.logs.some(
        (l) =>
          l.level === 'warn' && /exit code 7; disabled after 3 failures in a row/.test(l.message),
      ),
    )
  })

  it('a hook that leaves a process holding its output (setsid) does not hold the call', async () => {
    const started = Date.now()
    assert.equal((await h.rt.call('h_escaper', {})).status, 'ok')
    assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`)
  })

  it('after_tool_call sees the result, success and duration; sensitive tools are redacted; LLM hooks wait for an agent loop (a pending child instance)', async () => {
    await h.rt.call('read_file', { msg: '/etc/passwd' })
    // result hooks are not awaited by the caller
    await until('after_tool_call to see the read_file call', () => {
      try {
        return logOf('after.sh').some((p) => p.tool_name === 'read_file')
      } catch {
        return false // no after_tool_call has run yet
      }
    })
    const afters = logOf('after.sh')
    const plain = afters.find((p) => p.tool_name === 'h_allowed')
    assert.equal(plain.result, 'h_allowed: hi')
    assert.equal(plain.success, true)
    assert.equal(typeof plain.duration_ms, 'number')
    const sensitive = afters.find((p) => p.tool_name === 'read_file')
    assert.equal(sensitive.result, '[redacted: sensitive tool output]')
    assert.deepEqual(logOf('allow.sh').find((p) => p.tool_name === 'read_file').arguments, {
      redacted: true,
      reason: 'sensitive tool',
    })
    const waiting = h.kernel.fibers.find((f) => f.key.endsWith('/agent-events'))
    assert.equal(
      waiting?.state,
      'pending',
      'the LLM hooks wait in a child instance for the agent service',
    )
    assert.deepEqual(waiting?.plugin.inject, ['agent'])
  })
})

describe('package extras', () => {
  let h: ExecHarness
  before(async () => {
    process.env.YOKE_TEST_EXTRA = 'from yoke'
    h = await execHarness({
      extras: {
        manifest: {
          name: 'extras',
          version: '1',
          tools: [],
          prompts: { include: ['prompts/*.md', '../../*', '/etc/*'] },
          hooks: [
            {
              event: 'before_tool_call',
              command: ['./guard.sh'],
              tool_filter: ['mcp__pkg-extras__echo'],
            },
          ],
          mcp_servers: [
            { command: './server.mjs', args: [], env: ['YOKE_TEST_EXTRA', 'YOKE_TEST_UNSET'] },
          ],
        },
        files: {
          'prompts/style.md': 'Write short sentences.',
          'guard.sh':
            '#!/bin/sh\ncase "$(cat)" in *forbidden*) echo "the package guard said no"; exit 1 ;; esac\nexit 0\n',
          'server.mjs': `#!${process.execPath}\nawait import(${JSON.stringify(FIXTURE)})\n`,
        },
        links: { 'prompts/escape.md': '/etc/hostname' },
      },
    })
  })
  after(() => {
    delete process.env.YOKE_TEST_EXTRA
    return h.close()
  })

  it('prompts.include adds the package files as sections, and nothing outside the package', async () => {
    const prompt = h.kernel.services.get('prompt')!.value as PromptApi
    const names = prompt.list().map((s) => s.name)
    assert.deepEqual(
      names.filter((n) => n.startsWith('package:')),
      ['package:extras:prompts/style.md'],
    )
    assert.match(prompt.render(), /Write short sentences\./)
    assert.ok(h.logs.some((l) => /"\.\.\/\.\.\/\*" escapes the package/.test(l.message)))
    assert.ok(h.logs.some((l) => /"\/etc\/\*" escapes the package/.test(l.message)))
    assert.ok(h.logs.some((l) => /prompts\/escape\.md points outside the package/.test(l.message)))
  })

  it('mcp_servers start as child mcp-client instances (./ commands inside the package), and the package hook guards their tools', async () => {
    await until(
      "the package's MCP server tools",
      () => h.rt.list().some((t) => t.name === 'mcp__pkg-extras__echo'),
      { ms: 15_000, every: 50 },
    )
    const ok = await h.rt.call('mcp__pkg-extras__echo', { text: 'via the package' })
    assert.equal(ok.status, 'ok', text(ok))
    assert.equal(text(ok), 'via the package')
    const denied = await h.rt.call('mcp__pkg-extras__echo', { text: 'forbidden' })
    assert.equal(denied.status, 'DENIED')
    assert.match(denied.error!.message, /the package guard said no/)
    assert.equal(
      text(await h.rt.call('mcp__pkg-extras__env', { name: 'YOKE_TEST_EXTRA' })),
      'from yoke',
      'env names take their values from our environment',
    )
    assert.equal(
      text(await h.rt.call('mcp__pkg-extras__env', { name: 'YOKE_TEST_UNSET' })),
      '(unset)',
    )
  })
})
