import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync } from 'node:fs'
import { after, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { DebouncedWatcher } from '../../src/kernel/watch.ts'
import { tempProject } from '../helpers/project.ts'
import { until } from '../helpers/until.ts'

const project = tempProject({ 'exists.yaml': 'a', 'sibling/deep/noise.yaml': 'n' })
after(() => project.cleanup())

it('files that do not exist yet are seen when they appear, even under missing directories', async () => {
  const seen: string[] = []
  const watched = [
    'exists.yaml',
    '.userhome/patch.yaml',
    '.config/yoke.yaml',
    'missing.yaml',
    'sub/deeper/missing.yaml',
  ].map(project.path)
  const watcher = new DebouncedWatcher(
    watched,
    (changes) =>
      void seen.push(...changes.map((c) => `${c.event} ${c.path.slice(project.dir.length)}`)),
    (err) => assert.fail(String(err)),
  )
  try {
    await watcher.ready()
    writeFileSync(project.path('missing.yaml'), 'x') // right after ready: no grace period needed
    mkdirSync(project.path('.userhome'))
    writeFileSync(project.path('.userhome/patch.yaml'), 'p')
    mkdirSync(project.path('.config'))
    writeFileSync(project.path('.config/yoke.yaml'), 'c')
    mkdirSync(project.path('sub/deeper'), { recursive: true })
    writeFileSync(project.path('sub/deeper/missing.yaml'), 'b')
    writeFileSync(project.path('exists.yaml'), 'b')
    writeFileSync(project.path('sibling/deep/noise.yaml'), 'unwatched')
    const changes = () => `five changes, seen: ${JSON.stringify(seen)}`
    await until(changes, () => seen.length >= 5, { ms: 5000 })
    await sleep(150)
    assert.deepEqual(seen.sort(), [
      'add /.config/yoke.yaml',
      'add /.userhome/patch.yaml',
      'add /missing.yaml',
      'add /sub/deeper/missing.yaml',
      'change /exists.yaml',
    ])
  } finally {
    await watcher.close()
  }
})
