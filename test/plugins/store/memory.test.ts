// The memory engine (the default) through the shared suite: two views of one backend play two
// replicas, as two connections to one Redis do in redis.test.ts.
import { MemoryBackend, MemoryStore } from '../../../plugins/store/memory.ts'
import { storeConformance } from './conformance.ts'

storeConformance('memory', async () => {
  const backend = new MemoryBackend()
  const [a, b] = [new MemoryStore(backend), new MemoryStore(backend)]
  return { a, b, close: () => [a, b].forEach((s) => s.close()) }
})
