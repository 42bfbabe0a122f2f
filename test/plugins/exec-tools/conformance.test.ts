// The pipeline conformance suite for plugin executables: each behaviour is a real executable in
// a package of its own, reached through an exec-tools instance.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { toDisposer } from '../../../src/index.ts'
import { runPipelineConformance } from '../../conformance/pipeline.ts'
import { execHarness, nodeExe, writePackage } from '../../helpers/exec.ts'
import { until } from '../../helpers/until.ts'

const BODIES = {
  echo: `process.stdout.write(JSON.stringify({ output: JSON.stringify(args) }))`,
  fail: `process.stdout.write('it failed'); process.exit(1)`,
  sleep: `setTimeout(() => process.stdout.write('slept'), args.ms ?? 0)`,
  progress: `for (let i = 1; i <= 3; i++) process.stderr.write(JSON.stringify({ type: 'progress', pct: i * 33, message: 'step ' + i }) + '\\n'); process.stdout.write('done')`,
  big: `process.stdout.write('z'.repeat(args.bytes))`,
}

runPipelineConformance('exec', async () => {
  // one watched exec-tools instance: each registration is a package written into its directory
  const h = await execHarness({}, { watch: true })
  const packages = join(h.root, 'packages')
  const listed = (name: string) => h.rt.list().some((t) => t.name === name)
  // the watcher is ready once a probe package comes and goes (until then an added package could be missed)
  await until(
    'the watcher to see a probe package come and go',
    async () => {
      const probe = writePackage(packages, 'probe', {
        manifest: { name: 'probe', version: '1', tools: [{ name: 'probe', description: 'probe' }] },
        exe: nodeExe(BODIES.echo),
      })
      try {
        await until('the probe package to load', () => listed('probe'), { ms: 1000 })
        rmSync(probe, { recursive: true, force: true })
        await until('the probe package to unload', () => !listed('probe'), { ms: 15_000 })
        return true
      } catch {
        rmSync(probe, { recursive: true, force: true })
        return false
      }
    },
    { ms: 60_000 },
  )
  return {
    runtime: h.rt,
    async register(name, behaviour, options = {}) {
      const tool = {
        name,
        description: behaviour,
        ...(options.inputSchema && { input_schema: options.inputSchema }),
        ...(options.risk && { risk: options.risk }),
        ...(options.concurrency && { concurrency_class: options.concurrency }),
      }
      const dir = writePackage(packages, name, {
        manifest: {
          name,
          version: '1',
          ...(options.timeoutMs && {
            timeout_secs: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
          }),
          tools: [tool],
        },
        exe: nodeExe(BODIES[behaviour]),
      })
      await until(`package ${name} to load`, () => listed(name), { ms: 15_000 })
      return toDisposer(async () => {
        rmSync(dir, { recursive: true, force: true })
        await until(`package ${name} to unload`, () => !listed(name), { ms: 15_000 })
      })
    },
    close: () => h.close(),
  }
})
