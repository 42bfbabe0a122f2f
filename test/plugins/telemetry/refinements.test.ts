// The skill and command refinements of execute_tool: loading a SKILL.md names the skill, reading
// one of its resources names the resource (skill-relative), and an executable's call names the
// program (process.executable.name), runs under the span's context (TRACEPARENT) and says how the
// process ended (process.exit.code, from the tool's structured result).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import telemetryPlugin from '../../../plugins/telemetry/index.ts'
import type { SpanRecord, TelemetryApi } from '../../../plugins/telemetry/api.ts'
import { toPlugin, validateConfig, type Kernel, type Plugin } from '../../../src/index.ts'
import { execHarness, nodeExe } from '../../helpers/exec.ts'
import { tempProject } from '../../helpers/project.ts'
import { skillsKernel } from '../../helpers/skills.ts'

async function recording(kernel: Kernel) {
  const plugin = toPlugin(telemetryPlugin) as Plugin
  const fiber = kernel.spawn(plugin, (validateConfig(plugin, {}) as { value: unknown }).value, {
    key: 'telemetry',
  })
  await kernel.whenSettled(fiber, 10_000)
  const telemetry = kernel.services.get('telemetry')!.value as TelemetryApi
  return { telemetry, stop: telemetry.record() }
}

const only = (spans: SpanRecord[], tool: string) =>
  spans.filter((s) => s.attributes['gen_ai.tool.name'] === tool)

describe('telemetry: skill and command refinements', () => {
  it('skill_read names the skill, and the resource when it reads one', async () => {
    const p = tempProject({
      'skills/review/SKILL.md':
        '---\nname: review\ndescription: reviews things\n---\nRead the policy.\n',
      'skills/review/references/policy.md': 'be kind\n',
    })
    const { kernel, rt } = await skillsKernel(p)
    try {
      const { telemetry, stop } = await recording(kernel)
      assert.equal((await rt.call('skill_read', { name: 'review' })).status, 'ok')
      const file = await rt.call('skill_read', { name: 'review', file: 'references/policy.md' })
      assert.equal(file.status, 'ok')
      stop()
      const [load, read] = only(telemetry.recent(), 'skill_read') as [SpanRecord, SpanRecord]
      assert.equal(load.name, 'execute_tool skill_read review')
      assert.equal(load.attributes['gen_ai.skill.name'], 'review')
      assert.equal(load.attributes['gen_ai.skill.resource.name'], undefined)
      assert.equal(read.name, 'execute_tool skill_read review references/policy.md')
      assert.equal(read.attributes['gen_ai.skill.resource.name'], 'references/policy.md')
      assert.equal(read.attributes['gen_ai.tool.type'], 'extension')
    } finally {
      await kernel.dispose()
      p.cleanup()
    }
  })

  it('an executable’s call names the program and gives it the span as TRACEPARENT', async () => {
    const h = await execHarness({
      traced: {
        manifest: {
          name: 'traced',
          version: '1',
          tools: [{ name: 'print_trace', description: 'p' }],
        },
        exe: nodeExe(
          `process.stdout.write(JSON.stringify({ output: process.env.TRACEPARENT ?? '' }))`,
        ),
      },
    })
    try {
      const { telemetry, stop } = await recording(h.kernel)
      const result = await h.rt.call('print_trace', {})
      stop()
      assert.equal(result.status, 'ok')
      const [span] = only(telemetry.recent(), 'print_trace') as [SpanRecord]
      assert.equal(span.attributes['yoke.tool.source'], 'exec:traced')
      assert.match(String(span.attributes['process.executable.name']), /\S/)
      const printed = result.content.map((c) => ('text' in c ? c.text : '')).join('')
      assert.equal(printed, `00-${span.traceId}-${span.spanId}-01`)
    } finally {
      await h.close()
    }
  })

  it('an executable’s call says its exit code: 0, and 3 for a process that failed', async () => {
    const h = await execHarness({
      exits: {
        manifest: {
          name: 'exits',
          version: '1',
          tools: [{ name: 'exit_with', description: 'exits with args.code' }],
        },
        // plain text (not JSON) on stdout: success is the exit code
        exe: nodeExe(`process.stdout.write('exiting ' + args.code); process.exitCode = args.code`),
      },
    })
    try {
      const { telemetry, stop } = await recording(h.kernel)
      const ok = await h.rt.call('exit_with', { code: 0 })
      const failed = await h.rt.call('exit_with', { code: 3 })
      stop()
      assert.deepEqual(
        [ok.status, failed.status],
        ['ok', 'TOOL_ERROR'],
        JSON.stringify([ok.content, failed.content]),
      )
      const [zero, three] = only(telemetry.recent(), 'exit_with') as [SpanRecord, SpanRecord]
      assert.equal(zero.attributes['process.exit.code'], 0)
      assert.equal(three.attributes['process.exit.code'], 3)
      assert.equal(three.attributes['error.type'], 'TOOL_ERROR')
      assert.match(String(three.attributes['process.executable.name']), /^exits$/)
    } finally {
      await h.close()
    }
  })
})
