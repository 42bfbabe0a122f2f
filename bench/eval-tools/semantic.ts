/**
 * The eval's semantic side: one model for the whole run, each distinct text embedded once (tool
 * texts are shared by the sizes, since each size's corpus is a prefix of the next, and by the
 * clones of one tool), with a progress line; the semantic-only method; and the split of the
 * queries that the hybrid's options were chosen on.
 */
import {
  loadUniversalSentenceEncoder,
  VectorCache,
  type Embedder,
} from '../../plugins/tool-search/embedder.ts'
import { loadOnnxModel, type OnnxModelOptions } from '../../plugins/tool-search/onnx-model.ts'
import { SemanticArm } from '../../plugins/tool-search/semantic.ts'
import type { Method } from './baselines.ts'
import type { Query } from './queries.ts'

/** The model, with every text it embedded kept, and what that cost. */
export interface SharedModel {
  embedder: Embedder
  cache: VectorCache
  loadMs: number
  /** texts embedded so far, and the time that took */
  embedded: { texts: number; ms: number }
}

/** The built-in encoder, or with `own` a model of the user's (`--model DIR`, onnx-model.ts). */
export async function sharedModel(
  cacheFile?: string,
  own?: OnnxModelOptions,
): Promise<SharedModel> {
  const t0 = performance.now()
  const model = own ? await loadOnnxModel(own) : await loadUniversalSentenceEncoder()
  const loadMs = performance.now() - t0
  const embedded = { texts: 0, ms: 0 }
  const memo = new Map<string, Float32Array>()
  const embedder: Embedder = {
    id: model.id,
    dimensions: model.dimensions,
    async embed(texts, kind = 'document') {
      // a query and a tool's text may be embedded differently (a model's prefixes)
      const keyOf = (t: string) => `${kind}\n${t}`
      const fresh = [...new Set(texts.filter((t) => !memo.has(keyOf(t))))]
      const started = performance.now()
      const vectors = await model.embed(fresh, kind)
      fresh.forEach((t, i) => memo.set(keyOf(t), vectors[i]!))
      embedded.texts += fresh.length
      embedded.ms += performance.now() - started
      if (fresh.length > 1 && process.stderr.isTTY)
        process.stderr.write(
          `\r  embedded ${embedded.texts} texts (${(embedded.ms / 1000).toFixed(0)} s)`,
        )
      return texts.map((t) => memo.get(keyOf(t))!)
    },
  }
  return { embedder, cache: new VectorCache(cacheFile), loadMs, embedded }
}

/** A semantic arm on the shared model, every tool text embedded. */
export async function armOn(model: SharedModel): Promise<SemanticArm> {
  const arm = new SemanticArm({
    onState: (state, err) => err && console.error(state, err),
    load: async () => model.embedder,
    cache: model.cache,
    batch: 64,
  })
  arm.start()
  return arm
}

/**
 * Each query embedded once, alone, timed: what a search pays for its query's vector (the timed
 * passes then find it embedded and measure the rest).
 */
export async function embedQueries(arm: SemanticArm, queries: Query[]): Promise<number[]> {
  const times: number[] = []
  for (const q of queries) {
    const t0 = performance.now()
    await arm.queryVector(q.q)
    times.push(performance.now() - t0)
  }
  return times
}

/** Meaning alone: the most similar tools; no match below a similarity. */
export function semanticOnly(arm: SemanticArm, minSimilarity: number): Method {
  return {
    label: 'semantic only',
    async search(query, limit) {
      const vector = await arm.queryVector(query)
      const { top } = arm.similarityTo(vector!, limit)
      return {
        names: top.map((t) => t.name),
        noMatch: (top[0]?.similarity ?? 0) < minSimilarity,
      }
    },
  }
}

/** The half the hybrid's options were chosen on (even positions) and the half held out (odd). */
export const TUNE = (i: number) => i % 2 === 0
export const HELD_OUT = (i: number) => i % 2 === 1
