import assert from 'node:assert/strict'
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
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

/** A watcher on `rel` whose handler reads each changed file, as a reload would. */
async function reader(rel: string) {
  const reads: Array<{ event: string; text: string | undefined }> = []
  const watcher = new DebouncedWatcher(
    [project.path(rel)],
    (changes) => {
      for (const c of changes)
        reads.push({
          event: c.event,
          text: existsSync(c.path) ? readFileSync(c.path, 'utf8') : undefined,
        })
    },
    (err) => assert.fail(String(err)),
  )
  await watcher.ready()
  const texts = () => reads.map((r) => r.text)
  const saw = (what: string, check: () => boolean) =>
    until(() => `${what}; read: ${JSON.stringify(reads)}`, check, { ms: 5000 })
  return { watcher, reads, texts, saw }
}

// the first half parses, as something else: plugin a enabled
const WHOLE = 'plugins:\n  a:\n    use: ./a.mjs\n    enabled: false\n'
const CHUNKS = ['plugins:\n  a:\n', '    use: ./a.mjs\n', '    enabled: false\n']

it('a file written in slow chunks is handed over whole, never a half that parses differently', async () => {
  project.write('chunks.yaml', 'plugins: {}\n')
  const { watcher, texts, saw } = await reader('chunks.yaml')
  try {
    writeFileSync(project.path('chunks.yaml'), CHUNKS[0]!) // truncated, then the first part
    for (const chunk of CHUNKS.slice(1)) {
      await sleep(5) // shorter than the quiet time: one save, however loaded the machine
      appendFileSync(project.path('chunks.yaml'), chunk)
    }
    await saw('the whole file', () => texts().includes(WHOLE))
    await sleep(150)
    assert.deepEqual(new Set(texts()), new Set([WHOLE]))
  } finally {
    await watcher.close()
  }
})

it('a file emptied, then written after a pause, is never handed over empty', async () => {
  project.write('emptied.yaml', 'plugins: {}\n')
  const { watcher, texts, saw } = await reader('emptied.yaml')
  try {
    writeFileSync(project.path('emptied.yaml'), '')
    await sleep(25) // longer than the quiet time: an empty file waits the slow window
    writeFileSync(project.path('emptied.yaml'), WHOLE)
    await saw('the whole file', () => texts().includes(WHOLE))
    await sleep(150)
    assert.deepEqual(new Set(texts()), new Set([WHOLE]))
  } finally {
    await watcher.close()
  }
})

it('a save right after a reported one is seen (chokidar drops a change within 50 ms of the last)', async () => {
  project.write('twice.yaml', 'v: 0\n')
  const { watcher, texts, saw } = await reader('twice.yaml')
  try {
    for (let v = 1; v <= 3; v++) {
      project.write('twice.yaml', `v: ${v}\n`)
      await saw(`save ${v}`, () => texts().at(-1) === `v: ${v}\n`)
    }
  } finally {
    await watcher.close()
  }
})

it('an atomic save (temp file, rename) is seen whole, a deletion as one; reading is no change', async () => {
  project.write('atomic.yaml', 'v: 0\n')
  const { watcher, reads, texts, saw } = await reader('atomic.yaml')
  try {
    project.writeAtomic('atomic.yaml', WHOLE)
    await saw('the atomic save', () => texts().includes(WHOLE))
    await sleep(150)
    const count = reads.length
    for (let i = 0; i < 3; i++) readFileSync(project.path('atomic.yaml'))
    await sleep(150)
    assert.equal(reads.length, count, 'reading the file is no change')
    assert.deepEqual(new Set(texts()), new Set([WHOLE]))
    unlinkSync(project.path('atomic.yaml'))
    await saw('the deletion', () => reads.some((r) => r.event === 'unlink'))
    assert.equal(reads.at(-1)!.text, undefined)
  } finally {
    await watcher.close()
  }
})

it('a burst of writes to several files is coalesced and ends in the final state', async () => {
  const files = ['one.yaml', 'two.yaml', 'three.yaml']
  for (const f of files) project.write(f, 'v: 0\n')
  const calls: string[][] = []
  const watcher = new DebouncedWatcher(
    files.map(project.path),
    (changes) => void calls.push(changes.map((c) => readFileSync(c.path, 'utf8'))),
    (err) => assert.fail(String(err)),
  )
  try {
    await watcher.ready()
    for (let v = 1; v <= 10; v++) for (const f of files) project.write(f, `v: ${v}\n`)
    const final = () => calls.flat().filter((t) => t === 'v: 10\n').length >= files.length
    await until(() => `the final state; calls: ${JSON.stringify(calls)}`, final, { ms: 5000 })
    assert.ok(calls.length < 10, `coalesced: ${calls.length} calls for 10 writes of each file`)
    assert.deepEqual(
      calls.flat().filter((t) => t !== 'v: 10\n'),
      [],
    )
  } finally {
    await watcher.close()
  }
})
