// exec-tools' load decisions (plugins/exec-tools/decide.ts) without a kernel: which directories
// are read again, each package's state (loaded, failed, shadowed, filtered, held) and which
// running packages stop and which start.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  classify,
  needsReading,
  restarts,
  type Gates,
  type ReadPackage,
} from '../../../plugins/exec-tools/decide.ts'
import type { Package, PackageFailure } from '../../../plugins/exec-tools/load.ts'

const pkg = (dir: string, id: string, fingerprint = `${id}@1`): Package =>
  ({
    dir,
    manifest: { id, version: '1', tools: [], promptsInclude: [], mcpServers: [], hooks: [] },
    warnings: [],
    prompts: [],
    fingerprint,
  }) as unknown as Package
const failure = (dir: string): PackageFailure => ({
  dir,
  errors: [{ file: `${dir}/manifest.json`, line: 1, col: 1, message: 'bad' }],
})
const gates = (held: Record<string, string> = {}, allowed?: string[]): Gates => ({
  held: (id) => id in held,
  why: (id) => held[id],
  ...(allowed && { allows: (id: string) => allowed.includes(id) }),
})
const states = (read: ReadPackage[], g: Gates) =>
  classify(read, g).infos.map((i) => `${i.id}:${i.state}${i.why ? `(${i.why})` : ''}`)

describe('exec-tools: what is read again', () => {
  it('everything on a full re-read; a touched directory or a path under it; a directory with nothing running', () => {
    assert.equal(needsReading('/p/a', undefined, true), true)
    assert.equal(needsReading('/p/a', ['/p/a'], true), true)
    assert.equal(needsReading('/p/a', ['/p/a/manifest.json'], true), true)
    assert.equal(needsReading('/p/a', ['/p/ab/manifest.json'], true), false, 'a sibling prefix')
    assert.equal(needsReading('/p/a', [], true), false, 'a running package is reused')
    assert.equal(needsReading('/p/a', [], false), true, 'a new, failed or held one is read')
  })
})

describe('exec-tools: each package state', () => {
  it('the higher directory wins an id; the lower one is shadowed even when the higher is held', () => {
    const read = [
      { dir: '/hi/x', result: pkg('/hi/x', 'x') },
      { dir: '/lo/x', result: pkg('/lo/x', 'x') },
    ]
    assert.deepEqual(states(read, gates()), ['x:loaded', 'x:shadowed'])
    assert.deepEqual(states(read, gates({ x: 'withdrawn' })), ['x:held(withdrawn)', 'x:shadowed'])
    assert.deepEqual(
      [...classify(read, gates()).next.values()].map((p) => p.dir),
      ['/hi/x'],
    )
  })

  it('a failed read is failed under its folder name, and does not claim an id', () => {
    const read = [
      { dir: '/hi/x', result: failure('/hi/x') },
      { dir: '/lo/x', result: pkg('/lo/x', 'x') },
    ]
    assert.deepEqual(states(read, gates()), ['x:failed', 'x:loaded'])
  })

  it('the filter leaves a package out (filtered); a hold wins over the filter; no filter allows all', () => {
    const read = [
      { dir: '/p/a', result: pkg('/p/a', 'a') },
      { dir: '/p/b', result: pkg('/p/b', 'b') },
      { dir: '/p/c', result: pkg('/p/c', 'c') },
    ]
    assert.deepEqual(states(read, gates({ c: 'held by test' }, ['a'])), [
      'a:loaded',
      'b:filtered',
      'c:held(held by test)',
    ])
    assert.deepEqual([...classify(read, gates({ c: 'h' }, ['a'])).next.keys()], ['a'])
    assert.deepEqual(states(read, gates()), ['a:loaded', 'b:loaded', 'c:loaded'])
  })

  it('an added root keeps its source in the entry', () => {
    const [entry] = classify(
      [{ dir: '/i/a', result: pkg('/i/a', 'a'), source: 'yoke add' }],
      gates(),
    ).infos
    assert.equal(entry!.source, 'yoke add')
  })
})

describe('exec-tools: what stops and what starts', () => {
  const running = new Map([
    ['same', pkg('/p/same', 'same')],
    ['edited', pkg('/p/edited', 'edited', 'edited@1')],
    ['moved', pkg('/p/moved', 'moved')],
    ['gone', pkg('/p/gone', 'gone')],
  ])
  const next = new Map([
    ['same', pkg('/p/same', 'same')],
    ['edited', pkg('/p/edited', 'edited', 'edited@2')],
    ['moved', pkg('/q/moved', 'moved')],
    ['new', pkg('/p/new', 'new')],
  ])

  it('an unchanged package keeps running; a changed, moved or gone one stops; changed and new ones start', () => {
    const { stop, start } = restarts(running, next, gates())
    assert.deepEqual(stop, ['edited', 'moved', 'gone'])
    assert.deepEqual(start, ['edited', 'moved', 'new'])
  })

  it('a hold or a filter that came meanwhile keeps a package from starting', () => {
    assert.deepEqual(restarts(running, next, gates({ new: 'h' })).start, ['edited', 'moved'])
    assert.deepEqual(restarts(running, next, gates({}, ['same', 'moved'])).start, ['moved'])
  })
})
