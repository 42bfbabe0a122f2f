// metrics-jsonl's instance without a kernel: a MetricsSink over a real metrics store seeds it from
// the file, appends only what was counted since its last write (so two processes add up), writes
// once more when it closes, and keeps the metrics in memory (said once) when the file is no
// regular file.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { CapabilitiesApi } from '../../../plugins/capabilities/api.ts'
import { MetricsStore } from '../../../plugins/capabilities/metrics.ts'
import { readRows } from '../../../plugins/metrics-jsonl/file.ts'
import { MetricsSink } from '../../../plugins/metrics-jsonl/sink.ts'

const dir = mkdtempSync(join(tmpdir(), 'yoke-metrics-sink-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** The part of the capabilities service a sink uses, over a real store. */
const service = (store = new MetricsStore()) =>
  ({
    local: () => store.rows(),
    seed: (rows) => store.seed(rows),
    drain: () => store.drain(),
  }) as CapabilitiesApi
const alpha = { id: 'alpha', hash: 'sha256:0123456789ab', source: 'native' }
const options = { compactBytes: 1024 * 1024, maxBytes: 1024 * 1024 }

describe('MetricsSink', () => {
  it('appends what each process counted since its last write; the file sums them', () => {
    const file = join(dir, 'two.jsonl')
    const said: string[] = []
    const [a, b] = [new MetricsStore(), new MetricsStore()]
    const one = new MetricsSink(file, service(a), options, (p) => said.push(p))
    const two = new MetricsSink(file, service(b), options, (p) => said.push(p))
    one.start()
    two.start()
    a.called(alpha, 'ok', 5)
    a.called(alpha, 'ok', 7)
    one.write()
    b.called(alpha, 'TOOL_ERROR', 9)
    two.close()
    one.write() // nothing new: nothing appended
    assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, 2)
    a.called(alpha, 'ok', 3)
    one.close()
    const [row] = readRows(file)
    assert.equal(row?.called, 4)
    assert.equal(row?.ok, 3)
    assert.deepEqual(row?.errors, { TOOL_ERROR: 1 })
    assert.deepEqual(said, [])

    // a new process is seeded with the sum, and appends only its own calls
    const c = new MetricsStore()
    const three = new MetricsSink(file, service(c), options, () => {})
    three.start()
    assert.equal(c.rows()[0]?.called, 4)
    c.called(alpha, 'ok', 1)
    three.close()
    assert.equal(readRows(file)[0]?.called, 5)
  })

  it('a FIFO in its place: not read, not appended to, said once; the counts stay in memory', () => {
    const file = join(dir, 'fifo.jsonl')
    execFileSync('mkfifo', [file])
    const said: string[] = []
    const store = new MetricsStore()
    const sink = new MetricsSink(file, service(store), options, (p) => said.push(p))
    sink.start()
    store.called(alpha, 'ok', 1)
    sink.close()
    assert.equal(said.length, 2, said.join('\n'))
    assert.match(said[0]!, /fifo\.jsonl: it is not a regular file \(a FIFO\)/)
    assert.match(said[1]!, /metrics are kept in memory only: .*fifo\.jsonl is not appended to/)
    assert.equal(store.rows()[0]?.called, 1)
  })
})
