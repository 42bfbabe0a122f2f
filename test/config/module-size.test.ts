// A plugin module is code, not data: one over 8 MiB is refused before anything reads it whole (a
// 1 GiB module used to block the event loop for seconds and add a GiB of memory on every reload).
import assert from 'node:assert/strict'
import { truncateSync } from 'node:fs'
import { after, it } from 'node:test'
import { Composition } from '../../src/config/composer.ts'
import { tempProject } from '../helpers/project.ts'

const project = tempProject({
  'ok.mjs': `export default { name: 'ok', apply() {} }\n`,
  'huge.mjs': '',
  'yoke.config.yaml':
    'preset: minimal\nplugins:\n  ok: { use: ./ok.mjs }\n  huge: { use: ./huge.mjs }\n',
})
after(() => project.cleanup())

it('a 1 GiB plugin module is refused at once, and the others load', async () => {
  truncateSync(project.path('huge.mjs'), 1024 ** 3) // sparse: no disk, but 1 GiB to a reader
  const composition = new Composition({ cwd: project.dir, home: project.home })
  try {
    const rss = process.memoryUsage().rss
    const started = performance.now()
    await composition.start()
    const error = composition.reconciler.running.get('huge')?.spec.error
    assert.equal(error?.code, 'PLUGIN_IMPORT_FAILED')
    assert.match(error!.message, /1073741824 bytes; a plugin module may be at most 8388608/)
    assert.equal(composition.reconciler.running.get('ok')?.fiber?.state, 'active')
    assert.ok(performance.now() - started < 2000, 'not read whole')
    assert.ok(process.memoryUsage().rss - rss < 256 * 1024 ** 2, 'not held in memory')
  } finally {
    await composition.close()
  }
})
