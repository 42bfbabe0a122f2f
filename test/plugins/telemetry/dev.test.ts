// Reload spans from a real `yoke dev`: the first load and a reload caused by editing the project's
// config reach a loopback OTLP collector (protobuf, decoded with the official definitions) as
// spans saying what was added and what stayed; the spans are flushed when dev stops.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DevProcess, suiteProjects } from '../../helpers/project.ts'
import { otlpReceiver } from './otlp.ts'

const project = suiteProjects()
const attr = (s: any, key: string) => s.attributes.find((a: any) => a.key === key)?.value

describe('telemetry in yoke dev', () => {
  it('exports a span for the load and one for a reload, with what the reload added', async () => {
    const collector = await otlpReceiver()
    const config = (extra: string) =>
      [
        'plugins:',
        '  telemetry:',
        '    use: telemetry',
        `    config: { traces: { exporter: otlp }, endpoint: '${collector.url}' }`,
        extra,
        '',
      ].join('\n')
    const p = project({ 'yoke.config.yaml': config('') })
    const dev = new DevProcess([], { cwd: p.dir, home: p.home })
    try {
      await dev.ready()
      await dev.reloadAfter(() =>
        p.writeAtomic('yoke.config.yaml', config('  metrics:\n    use: metrics-jsonl')),
      )
      assert.equal(await dev.stop(), 0, dev.stderr)
      const spans = collector.received
        .filter((r) => r.path === '/v1/traces')
        .flatMap((r) => (r.body.resource_spans as any[]).flatMap((rs) => rs.scope_spans))
        .flatMap((ss: any) => ss.spans)
      const names = spans.map((s: any) => s.name)
      const reload = spans.find((s: any) => s.name === 'yoke.reload')
      assert.ok(reload, `spans: ${names.join(', ')}\n${dev.stderr}`)
      assert.deepEqual(
        attr(reload, 'yoke.reload.added').array_value.values.map((v: any) => v.string_value),
        ['metrics'],
      )
      assert.equal(attr(reload, 'yoke.reload.ok').bool_value, true)
      assert.ok(Number(attr(reload, 'yoke.reload.unchanged.count').int_value) >= 1)
      assert.match(
        attr(reload, 'yoke.reload.trigger').array_value.values[0].string_value,
        /yoke\.config\.yaml$/,
      )
    } finally {
      await dev.stop()
      await collector.close()
    }
  })
})
