// The endpoint lock through real layers and the built CLI: a project's config says where spans go,
// the user's patch ($YOKE_HOME/patch.yaml) locks the endpoint; a one-shot `yoke tools call` exports
// its span to the lock's collector, not the project's. An untrusted project that sets an endpoint
// makes the instance wait for trust, said by `yoke doctor`.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { runYoke, suiteProjects } from '../../helpers/project.ts'
import { otlpReceiver } from './otlp.ts'

const project = suiteProjects()

describe('telemetry: the user layer locks the endpoint', () => {
  const closers: Array<() => Promise<void>> = []
  after(() => Promise.all(closers.map((close) => close())))

  it('a trusted project’s endpoint and the variables give way to the lock in the user’s patch', async () => {
    const [locked, projects] = [await otlpReceiver(), await otlpReceiver()]
    closers.push(locked.close, projects.close)
    const p = project({
      'yoke.config.yaml': [
        'plugins:',
        '  telemetry:',
        '    use: telemetry',
        '    config:',
        '      traces: { exporter: otlp }',
        `      endpoint: ${projects.url}`,
        '',
      ].join('\n'),
    })
    p.write(
      '.home/patch.yaml',
      `plugins:\n  telemetry:\n    config:\n      lock: { endpoint: '${locked.url}' }\n`,
    )
    const run = await runYoke(['tools', 'call', 'skills_list', '--args', '{}'], {
      cwd: p.dir,
      home: p.home,
      env: { YOKE_TRUST: '1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${projects.url}/v1/traces` },
    })
    assert.equal(run.code, 0, run.stderr)
    assert.equal(projects.received.length, 0, 'nothing went where the project said')
    const spans = locked.received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) => (r.body.resource_spans as any[]).flatMap((rs) => rs.scope_spans))
      .flatMap((ss: any) => ss.spans.map((s: any) => s.name))
    assert.ok(spans.includes('execute_tool skills_list'), spans.join(', '))
  })

  it('an untrusted project that sets the endpoint makes telemetry wait for trust', async () => {
    const p = project({
      'yoke.config.yaml':
        'plugins:\n  telemetry:\n    use: telemetry\n    config:\n      endpoint: http://127.0.0.1:9\n',
    })
    const run = await runYoke(['doctor', '--json'], {
      cwd: p.dir,
      home: p.home,
      env: { YOKE_TRUST: '' },
    })
    const checks = (JSON.parse(run.stdout) as { checks: Array<{ message: string }> }).checks
    const waiting = checks.find((c) => c.message.startsWith('instance "telemetry"'))
    assert.match(
      waiting?.message ?? '',
      /pending: .*not trusted yet.*\(config\.endpoint\)/,
      run.stdout,
    )
    assert.equal(run.code, 1, 'doctor: an instance the config asks for is not running')
  })
})
