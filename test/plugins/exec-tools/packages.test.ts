// exec-tools with real executables on disk: the protocol, integrity, environment, limits and
// extras (octos.md §2, §3), each as a test.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import {
  closeSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { alive } from '../../helpers/mcp.ts'
import { execHarness, nodeExe, type ExecHarness } from '../../helpers/exec.ts'
import { until } from '../../helpers/until.ts'
import policy from '../../../plugins/policy/index.ts'
import skills from '../../../plugins/skills/index.ts'
import { createHash } from 'node:crypto'
import type { TaskInfo } from '../../../src/index.ts'
import { IntegrityGate, verify } from '../../../plugins/exec-tools/executable.ts'

const text = (r: { content: readonly { type: string; text?: string }[] }) =>
  r.content.map((c) => c.text ?? '').join('')

describe('exec-tools: the protocol', () => {
  let h: ExecHarness
  before(async () => {
    h = await execHarness({
      proto: {
        manifest: {
          name: 'proto',
          version: '1.0.0',
          tools: [
            {
              name: 'p_echo',
              description: 'echo',
              input_schema: { type: 'object', properties: { x: { type: 'number' } } },
            },
            { name: 'p_plain', description: 'plain text' },
            { name: 'p_fail', description: 'fails' },
            { name: 'p_segv', description: 'dies by signal' },
            { name: 'p_files', description: 'reports files' },
            { name: 'p_named', description: 'bad named outputs' },
            { name: 'p_progress', description: 'progress lines' },
            { name: 'p_unknown_class', description: 'typo', concurrency_class: 'exclusiv' },
            { name: 'p_bg', description: 'background', spawn_only: true },
          ],
        },
        exe: nodeExe(`
          const fs = await import('node:fs')
          switch (tool) {
            case 'p_echo': process.stdout.write(JSON.stringify({ output: JSON.stringify({ tool, args, cwd: process.cwd(), work: process.env.YOKE_WORK_DIR, octos: process.env.OCTOS_WORK_DIR }) })); break
            case 'p_plain': process.stderr.write('a note\\n'); process.stdout.write('just text'); break
            case 'p_fail': process.stdout.write('it broke'); process.exit(3)
            case 'p_segv': process.kill(process.pid, 'SIGSEGV'); break
            case 'p_files': fs.writeFileSync('out.txt', 'x'); process.stdout.write(JSON.stringify({ output: 'Report saved to: report.md', files_to_send: ['out.txt', 42] })); break
            case 'p_named': process.stdout.write(JSON.stringify({ output: 'x', named_outputs: { Bad: 'v' } })); break
            case 'p_progress':
              for (const l of [JSON.stringify({ type: 'progress', stage: 'render', pct: 40, message: 'frames' }), JSON.stringify({ type: 'phase', phase: 'upload', message: 'sending' }), JSON.stringify({ type: 'cost', provider: 'openai', input_tokens: 10, output_tokens: 5, usd: 0.01 }), JSON.stringify({ type: 'artifact', kind: 'image', path: 'a.png' }), JSON.stringify({ type: 'log', level: 'warn', message: 'slow' }), JSON.stringify({ type: 'mystery' }), '{not json', '', 'plain line'])
                process.stderr.write(l + '\\n')
              process.stdout.write(JSON.stringify({ output: 'done' })); break
            case 'p_unknown_class': process.stdout.write('ran'); break
            case 'p_bg': setTimeout(() => process.stdout.write(JSON.stringify({ output: 'background done' })), 100); break
          }`),
      },
    })
  })
  after(() => h.close())

  it('spawns `exe <tool>` with JSON on stdin, in the work directory, with YOKE_WORK_DIR and OCTOS_WORK_DIR', async () => {
    const r = await h.rt.call('p_echo', { x: 1 })
    assert.equal(r.status, 'ok', text(r))
    const seen = JSON.parse(text(r))
    assert.equal(seen.tool, 'p_echo')
    assert.deepEqual(seen.args, { x: 1 })
    assert.equal(seen.cwd, join(h.root, '.yoke/work/proto'))
    assert.equal(seen.work, seen.cwd)
    assert.equal(seen.octos, seen.cwd)
    assert.equal(
      (await h.rt.call('p_echo', { x: 'not a number' })).status,
      'INVALID_ARGS',
      'validated against input_schema first',
    )
  })

  it('non-JSON stdout is the output (with stderr), success by exit code; a crash by signal says so', async () => {
    const plain = await h.rt.call('p_plain', {})
    assert.equal(plain.status, 'ok')
    assert.equal(text(plain), 'just text\na note')
    const fail = await h.rt.call('p_fail', {})
    assert.equal(fail.status, 'TOOL_ERROR')
    assert.match(text(fail), /it broke/)
    assert.equal((fail.structured as { exitCode: number }).exitCode, 3)
    const segv = await h.rt.call('p_segv', {})
    assert.equal(segv.status, 'TOOL_ERROR')
    assert.match(text(segv), /was killed by SIGSEGV/)
  })

  it('files_to_send and file_modified come back as links; malformed named_outputs is an error', async () => {
    const files = await h.rt.call('p_files', {})
    assert.equal(files.status, 'ok')
    const links = files.content
      .filter((c) => c.type === 'resource_link')
      .map((c) => (c as { uri: string }).uri)
    assert.deepEqual(links, [
      `file://${join(h.root, '.yoke/work/proto/out.txt')}`,
      `file://${join(h.root, '.yoke/work/proto/report.md')}`,
    ])
    assert.equal((files.structured as { file_modified: string }).file_modified, 'report.md')
    const named = await h.rt.call('p_named', {})
    assert.equal(named.status, 'TOOL_ERROR')
    assert.match(text(named), /malformed named_outputs/)
  })

  it('stderr lines become progress events (protocol v2 and plain lines)', async () => {
    const events: Array<{ message?: string; progress?: number }> = []
    await h.rt.call('p_progress', {}, { onProgress: (e) => events.push(e) })
    assert.deepEqual(
      events.map((e) => e.message),
      [
        '[render] 40% frames',
        '[upload] sending',
        '[cost] openai: in=10 out=5 ($0.01)',
        '[artifact:image] a.png',
        '[warn] slow',
        '{"type":"mystery"}',
        '{not json',
        'plain line',
      ],
    )
    assert.equal(events[0]!.progress, 40)
  })

  it('an unknown concurrency_class runs exclusive; spawn_only runs in the background', async () => {
    const tools = new Map(h.rt.list().map((t) => [t.name, t]))
    assert.equal(tools.get('p_unknown_class')!.concurrency, 'exclusive')
    assert.equal(tools.get('p_echo')!.concurrency, 'safe')
    assert.ok(
      h.logs.some((l) => /exclusiv/.test(l.message)),
      'the typo is reported',
    )
    const bg = await h.rt.call('p_bg', {})
    assert.equal(bg.status, 'ok')
    assert.match(text(bg), /SUCCESS: Task is now running in background.*\nOutput directory: /s)
    const task = await new Promise<TaskInfo>((resolve) =>
      h.rt.tasks.hooks.completed.tap('t', (info) => resolve(info)),
    )
    assert.match(text(task.result!), /background done/)
  })
})

describe('exec-tools: integrity', () => {
  let h: ExecHarness
  const good = nodeExe(`process.stdout.write('v1')`)
  before(async () => {
    h = await execHarness({
      signed: {
        manifest: { name: 'signed', version: '1', tools: [{ name: 's_run', description: 'x' }] },
        exe: good,
      },
      linked: {
        manifest: { name: 'linked', version: '1', tools: [{ name: 'l_run', description: 'x' }] },
        files: { 'real.js': good },
        links: { linked: 'real.js' },
      },
      wrong: {
        manifest: {
          name: 'wrong',
          version: '1',
          sha256: 'a'.repeat(64),
          tools: [{ name: 'w_run', description: 'x' }],
        },
        exe: good,
      },
    })
  })
  after(() => h.close())

  it('a symlinked executable is refused; a hash mismatch at load is refused; both report why', async () => {
    const names = h.rt.list().map((t) => t.name)
    assert.ok(names.includes('s_run'))
    assert.ok(!names.includes('w_run'))
    assert.ok(!names.includes('l_run'))
    assert.match(
      h.api.list().find((p) => p.id === 'linked')!.errors[0]!.message,
      /is a symlink; symlinks are refused/,
    )
    const wrong = h.api.list().find((p) => p.id === 'wrong')!
    assert.equal(wrong.state, 'failed')
    assert.match(
      wrong.errors[0]!.message,
      /hash mismatch: the manifest says a{64}, the file is [0-9a-f]{64}/,
    )
  })

  it('a binary swapped after load is refused at the next call (rename, in-place write with the mtime put back)', async () => {
    const exe = join(h.root, 'packages/signed/signed')
    assert.equal(text(await h.rt.call('s_run', {})), 'v1')
    // in place, same size, mtime restored: ctime still moves
    const before = statSync(exe)
    writeFileSync(exe, good.replace("'v1'", "'v2'"))
    utimesSync(exe, before.atime, before.mtime)
    const swapped = await h.rt.call('s_run', {})
    assert.equal(swapped.status, 'INTEGRITY_FAILED')
    assert.match(
      swapped.error!.message,
      /changed after it was verified \(expected [0-9a-f]{64}, got [0-9a-f]{64}\)/,
    )
    // restored bytes are accepted again; then a rename swap is caught too
    writeFileSync(exe, good)
    assert.equal(text(await h.rt.call('s_run', {})), 'v1')
    writeFileSync(`${exe}.new`, good.replace("'v1'", "'v3'"), { mode: 0o755 })
    renameSync(`${exe}.new`, exe)
    assert.equal((await h.rt.call('s_run', {})).status, 'INTEGRITY_FAILED')
    writeFileSync(exe, good)
  })

  it('a file over 100 MB is refused without being read', async () => {
    const big = join(h.root, 'big-exe')
    const fd = openSync(big, 'w')
    closeSync(fd)
    execFileSync('truncate', ['-s', '101M', big]) // sparse: nothing written
    const io = () => Number(/rchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))![1])
    const readBefore = io()
    await assert.rejects(verify(big), /is 105906176 bytes; an executable may be at most 100000000/)
    assert.ok(io() - readBefore < 1_000_000, 'its bytes were not read')
  })

  it('an unchanged 5 MB executable costs one lstat per check, not a re-read; a touched one is hashed again and passes', async () => {
    // measured on the gate itself: a reaped child's reads count in this process's /proc/self/io too
    const exe = join(h.root, 'large-exe')
    writeFileSync(exe, good + `// ${'x'.repeat(5_000_000)}\n`, { mode: 0o755 })
    const gate = new IntegrityGate(await verify(exe))
    const io = () => Number(/rchar: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))![1])
    let before = io()
    await gate.check()
    assert.ok(
      io() - before < 100_000,
      `read ${io() - before} bytes to check an unchanged executable`,
    )
    const now = new Date(Date.now() + 5000)
    utimesSync(exe, now, now)
    before = io()
    await gate.check()
    assert.ok(io() - before >= 5_000_000, 'a touched executable is hashed again')
    before = io()
    await gate.check()
    assert.ok(io() - before < 100_000, 'and its new stamps are trusted after that')
  })
})

describe('exec-tools: environment, approval, limits', () => {
  let h: ExecHarness
  const envExe = nodeExe(
    `process.stdout.write(JSON.stringify({ output: JSON.stringify(process.env) }))`,
  )
  const saved = { ...process.env }
  before(async () => {
    Object.assign(process.env, {
      LD_PRELOAD: '/evil.so',
      NODE_OPTIONS: '--require /evil.js',
      PYTHONPATH: '/evil',
      BASH_ENV: '/evil.sh',
      GITHUB_TOKEN: 'ghp_secret',
      PLAIN_SETTING: 'visible',
      DEPLOY_KEY: 'k',
    })
    h = await execHarness(
      {
        envy: {
          manifest: {
            name: 'envy',
            version: '1',
            tools: [
              { name: 'env_default', description: 'default mode' },
              { name: 'env_strict', description: 'strict mode', env: ['GITHUB_TOKEN'] },
              {
                name: 'env_hijack',
                description: 'allowlists a hijack variable',
                env: ['LD_PRELOAD'],
              },
              { name: 'env_risky', description: 'high risk', risk: 'high' },
              { name: 'env_odd_risk', description: 'unknown risk literal', risk: 'spicy' },
            ],
          },
          exe: envExe,
        },
        hang: {
          manifest: {
            name: 'hang',
            version: '1',
            timeout_secs: 1,
            tools: [
              { name: 'hang_forever', description: 'forks a sleeping grandchild and hangs' },
              { name: 'flood', description: 'writes 1 GB' },
            ],
          },
          exe: `#!/bin/sh\ncase "$1" in\n  hang_forever) sleep 300 & echo $! > grandchild.pid; sleep 300 ;;\n  flood) exec head -c 1073741824 /dev/zero ;;\nesac\n`,
        },
      },
      { maxStdoutBytes: 4 * 1024 * 1024 },
      [[policy, {}, 'policy']],
    )
  })
  after(async () => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    await h.close()
  })
  const envOf = async (tool: string) =>
    JSON.parse(text(await h.rt.call(tool, {}))) as Record<string, string>

  it('the hijack variables never reach a tool; a tool that allowlists one is skipped', async () => {
    assert.ok(!h.rt.list().some((t) => t.name === 'env_hijack'))
    assert.ok(
      h.logs.some((l) => /env_hijack/.test(l.message) && /process-hijack/.test(l.message)),
      'the skip is reported',
    )
    for (const tool of ['env_default', 'env_strict']) {
      const env = await envOf(tool)
      for (const name of ['LD_PRELOAD', 'NODE_OPTIONS', 'PYTHONPATH', 'BASH_ENV'])
        assert.equal(env[name], undefined, `${name} reached ${tool}`)
    }
  })

  it('a secret reaches a tool only when its env lists it; with or without env, only the essentials and the listed names', async () => {
    const loose = await envOf('env_default')
    assert.equal(loose.GITHUB_TOKEN, undefined)
    assert.equal(loose.DEPLOY_KEY, undefined)
    assert.equal(loose.PLAIN_SETTING, undefined, 'no env list: an allowlist all the same')
    assert.ok(loose.PATH && loose.YOKE_WORK_DIR)
    const strict = await envOf('env_strict')
    assert.equal(strict.GITHUB_TOKEN, 'ghp_secret')
    assert.equal(
      strict.PLAIN_SETTING,
      undefined,
      'strict: only the listed names and the essentials',
    )
    assert.ok(strict.PATH && strict.YOKE_WORK_DIR)
  })

  it('high risk asks the approval bridge; a refusal and a missing bridge are DENIED; an unknown risk literal does not ask', async () => {
    const none = await h.rt.call('env_risky', {})
    assert.equal(none.status, 'DENIED')
    assert.match(none.error!.message, /no approval bridge/)
    const asked: string[] = []
    let answer: 'allow-once' | 'deny' = 'deny'
    const off = h.rt.approvals.register({
      name: 'test',
      ask: async ({ call }) => (asked.push(call.name), answer),
    })
    assert.equal((await h.rt.call('env_risky', {})).status, 'DENIED')
    answer = 'allow-once'
    assert.equal((await h.rt.call('env_risky', {})).status, 'ok')
    assert.equal((await h.rt.call('env_odd_risk', {})).status, 'ok')
    assert.deepEqual(asked, ['env_risky', 'env_risky'])
    off()
  })

  it('at timeout the whole process group dies, grandchild included; on cancellation too', async () => {
    const pidFile = join(h.root, '.yoke/work/hang/grandchild.pid')
    const timedOut = await h.rt.call('hang_forever', {})
    assert.equal(timedOut.status, 'TIMEOUT')
    const grandchild = Number(readFileSync(pidFile, 'utf8'))
    await until(`grandchild ${grandchild} to die after the timeout`, () => !alive(grandchild), {
      ms: 3000,
    })
    const controller = new AbortController()
    const call = h.rt.call('hang_forever', {}, { signal: controller.signal })
    await until(
      'the second run to start',
      () => {
        try {
          return Number(readFileSync(pidFile, 'utf8')) !== grandchild
        } catch {
          return false
        }
      },
      { ms: 3000 },
    )
    const second = Number(readFileSync(pidFile, 'utf8'))
    controller.abort()
    assert.equal((await call).status, 'ABORTED')
    await until(`grandchild ${second} to die after the cancellation`, () => !alive(second), {
      ms: 3000,
    })
  })

  it('a tool writing 1 GB to stdout ends with a bounded result and a bounded heap', async () => {
    const heap = process.memoryUsage().rss
    const started = Date.now()
    const flood = await h.rt.call('flood', {})
    assert.equal(flood.status, 'TOOL_ERROR')
    assert.match(text(flood), /wrote more than the output limit to stdout and was stopped/)
    assert.ok(
      process.memoryUsage().rss - heap < 200 * 1024 * 1024,
      `rss grew by ${(process.memoryUsage().rss - heap) >> 20} MiB`,
    )
    assert.ok(Date.now() - started < 10_000)
    assert.ok(flood.truncated, 'the runtime output limit spilled the rest')
  })
})

describe('exec-tools: hot reload', () => {
  let h: ExecHarness
  const exe = (v: string) => nodeExe(`process.stdout.write(${JSON.stringify(v)})`)
  const ids = () => Object.fromEntries(h.rt.list().map((t) => [t.name, t.id]))
  before(async () => {
    h = await execHarness(
      {
        alpha: {
          manifest: {
            name: 'alpha',
            version: '1',
            tools: [{ name: 'a_run', description: 'alpha v1' }],
          },
          exe: exe('alpha'),
        },
        beta: {
          manifest: { name: 'beta', version: '1', tools: [{ name: 'b_run', description: 'beta' }] },
          exe: exe('beta v1'),
        },
        gamma: {
          manifest: { name: 'gamma', version: '1', tools: [], prompts: { include: ['*.md'] } },
          files: { 'rules.md': 'OLD RULES' },
        },
      },
      { watch: true },
    )
    await new Promise((resolve) => setTimeout(resolve, 400)) // the watcher arms after the first scan
  })
  after(() => h.close())

  it('editing a manifest re-registers that package only', async () => {
    const before = ids()
    writeFileSync(
      join(h.root, 'packages/alpha/manifest.json'),
      JSON.stringify({
        name: 'alpha',
        version: '2',
        tools: [{ name: 'a_run', description: 'alpha v2' }],
      }),
    )
    await until(
      'alpha to reload',
      () => h.rt.list().find((t) => t.name === 'a_run')?.description === 'alpha v2',
      { ms: 10_000 },
    )
    const after = ids()
    assert.notEqual(after.a_run, before.a_run)
    assert.equal(after.b_run, before.b_run, 'beta kept its registration')
  })

  it('replacing an executable re-registers that package only; a touch alone changes nothing', async () => {
    const before = ids()
    const file = join(h.root, 'packages/beta/beta')
    writeFileSync(`${file}.new`, exe('beta v2'), { mode: 0o755 })
    renameSync(`${file}.new`, file)
    await until('beta to reload', () => ids().b_run !== before.b_run, { ms: 10_000 })
    assert.equal(text(await h.rt.call('b_run', {})), 'beta v2')
    assert.equal(ids().a_run, before.a_run)
    const touched = ids()
    const now = new Date()
    utimesSync(file, now, now)
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal(ids().b_run, touched.b_run, 'same bytes: no restart')
  })

  it('editing a prompt file restarts its package, and the section follows', async () => {
    const prompt = h.kernel.services.get('prompt')!.value as { render(): string }
    assert.match(prompt.render(), /OLD RULES/)
    writeFileSync(join(h.root, 'packages/gamma/rules.md'), 'NEW RULES')
    await until('the prompt section to follow the file', () => /NEW RULES/.test(prompt.render()), {
      ms: 10_000,
    })
  })

  it('a broken manifest is reported with file:line:col; the package goes and the others stay', async () => {
    const before = ids()
    writeFileSync(join(h.root, 'packages/alpha/manifest.json'), '{ "name": "alpha", "version": ')
    await until('alpha to be unloaded', () => !ids().a_run, { ms: 10_000 })
    assert.equal(ids().b_run, before.b_run)
    const failed = h.api.list().find((p) => p.dir.endsWith('alpha'))!
    assert.equal(failed.state, 'failed')
    assert.ok(
      h.logs.some(
        (l) =>
          l.level === 'error' &&
          (l.error as { code?: string })?.code === 'MANIFEST_INVALID' &&
          /manifest\.json/.test((l.error as { location?: string }).location ?? ''),
      ),
    )
  })
})

describe('exec-tools: signing and the skill filter', () => {
  it('requireSigned refuses an unsigned package and an extras-only one; a signed one loads', async () => {
    const body = nodeExe(`process.stdout.write('signed ok')`)
    const h = await execHarness(
      {
        plain: {
          manifest: {
            name: 'plain',
            version: '1',
            tools: [{ name: 'plain_run', description: 'x' }],
          },
          exe: body,
        },
        extrasonly: {
          manifest: { name: 'extrasonly', version: '1', tools: [], prompts: { include: ['*.md'] } },
          files: { 'a.md': 'x' },
        },
      },
      { requireSigned: true },
    )
    try {
      const by = Object.fromEntries(h.api.list().map((p) => [p.id, p]))
      assert.equal(by.plain!.state, 'failed')
      assert.match(
        by.plain!.errors[0]!.message,
        /is not signed \(no sha256\) and requireSigned is on/,
      )
      assert.match(by.extrasonly!.errors[0]!.message, /an extras-only package cannot be signed/)
    } finally {
      await h.close()
    }
    const signed = await execHarness(
      {
        signed: {
          manifest: {
            name: 'signed',
            version: '1',
            sha256: createHash('sha256').update(body).digest('hex'),
            tools: [{ name: 'signed_run', description: 'x' }],
          },
          exe: body,
        },
      },
      { requireSigned: true },
    )
    try {
      assert.equal(text(await signed.rt.call('signed_run', {})), 'signed ok')
    } finally {
      await signed.close()
    }
  })

  it('a package beside SKILL.md is a skill with tools="true", and the skill filter leaves out both', async () => {
    const h = await execHarness(
      {
        kept: {
          manifest: { name: 'kept', version: '1', tools: [{ name: 'kept_run', description: 'x' }] },
          exe: nodeExe(`process.stdout.write('k')`),
          files: {
            'SKILL.md': '---\nname: kept\ndescription: A kept package.\n---\nUse kept_run.\n',
          },
        },
        dropped: {
          manifest: {
            name: 'dropped',
            version: '1',
            tools: [{ name: 'dropped_run', description: 'x' }],
          },
          exe: nodeExe(`process.stdout.write('d')`),
          files: { 'SKILL.md': '---\nname: dropped\ndescription: A dropped package.\n---\nx\n' },
        },
      },
      {},
      [[skills, { dirs: ['packages'], except: ['dropped'], watch: false }, 'skills']],
    )
    try {
      const prompt = (h.kernel.services.get('prompt')!.value as { render(): string }).render()
      assert.match(prompt, /<skill available="true" tools="true">\s*<name>kept<\/name>/)
      assert.doesNotMatch(prompt, /dropped/)
      assert.equal(h.api.list().find((p) => p.id === 'dropped')!.state, 'filtered')
      assert.ok(!h.rt.list().some((t) => t.name === 'dropped_run'))
      assert.equal(text(await h.rt.call('kept_run', {})), 'k')
    } finally {
      await h.close()
    }
  })
})

describe('exec-tools: hostile packages', () => {
  it('a deeply nested manifest, a manifest linked to /dev/zero and a FIFO are refused quickly; a dangling prompt link only warns', async () => {
    const deep = `{"name":"deep","version":"1","tools":[],"x":${'['.repeat(5000)}${']'.repeat(5000)}}`
    const started = Date.now()
    const h = await execHarness(
      {
        deep1: { manifest: {}, files: {} },
        deep2: { manifest: {} },
        zero: { manifest: {} },
        fifo: { manifest: {} },
        prompts: {
          manifest: { name: 'prompts', version: '1', tools: [], prompts: { include: ['*.md'] } },
          files: { 'ok.md': 'fine' },
          links: { 'gone.md': '/nonexistent/file.md' },
        },
        redos: {
          manifest: {
            name: 'redos',
            version: '1',
            tools: [
              {
                name: 'redos_run',
                description: 'x',
                input_schema: {
                  type: 'object',
                  properties: { s: { type: 'string', pattern: '(?<=a)b' } },
                },
              },
              { name: 'redos_ok', description: 'y' },
            ],
          },
          exe: nodeExe(`process.stdout.write('ok')`),
        },
      },
      {},
      [],
      (root) => {
        writeFileSync(join(root, 'packages/deep1/manifest.json'), deep)
        writeFileSync(join(root, 'packages/deep2/manifest.json'), deep)
        rmSync(join(root, 'packages/zero/manifest.json'))
        symlinkSync('/dev/zero', join(root, 'packages/zero/manifest.json'))
        rmSync(join(root, 'packages/fifo/manifest.json'))
        execFileSync('mkfifo', [join(root, 'packages/fifo/manifest.json')])
      },
    )
    try {
      assert.ok(Date.now() - started < 10_000)
      const by = Object.fromEntries(h.api.list().map((p) => [p.dir.split('/').at(-1), p]))
      assert.match(by.deep1!.errors[0]!.message, /nests deeper than 64 levels/)
      assert.match(by.zero!.errors[0]!.message, /not a regular file|ELOOP/)
      assert.match(by.fifo!.errors[0]!.message, /not a regular file/)
      assert.equal(by.prompts!.state, 'loaded')
      assert.ok(h.logs.some((l) => /gone\.md cannot be read/.test(l.message)))
      const names = h.rt.list().map((t) => t.name)
      assert.ok(
        !names.includes('redos_run') && names.includes('redos_ok'),
        'a pattern yoke does not run costs that tool only',
      )
      assert.ok(
        h.logs.some((l) => /redos_run is not registered: .*it uses a lookbehind/.test(l.message)),
      )
    } finally {
      await h.close()
    }
  })
})
