/**
 * @module tool-search/onnx-model
 * A sentence-embedding model the user keeps on disk, in ONNX, for the semantic arm: a Hugging Face
 * model folder (`tokenizer.json`, and `onnx/model.onnx` or `model.onnx`; `tokenizer_config.json`,
 * `config.json` and sentence-transformers' `1_Pooling/config.json` when present), run by
 * onnxruntime-node and tokenized by @huggingface/tokenizers. Both packages are the user's to install
 * and are imported only when the arm starts. A model is a path, never a name: nothing is fetched.
 *
 * Everything is checked before the runtime sees it — each file regular (not a FIFO or a device) and
 * under its size cap, each JSON parsed with its line named — and a model whose inputs or outputs
 * are not a sentence encoder's is refused with what it has. A refusal names the file and the fix.
 */
import { createHash } from 'node:crypto'
import { statSync, type Stats } from 'node:fs'
import { homedir } from 'node:os'
import { basename, dirname, isAbsolute, join, resolve } from 'node:path'
import { unit, type Embedder } from './embedder.ts'
import { checkRegular, readRegular } from './files.ts'

/** How the token vectors become one sentence vector. */
export type Pooling = 'mean' | 'cls' | 'max' | 'last'

export interface OnnxModelOptions {
  /** the model's folder, or its `.onnx` file (with `tokenizer.json` beside it or one folder up); absolute or `~/` */
  path: string
  /** default: `1_Pooling/config.json`'s mode, else mean */
  pooling?: Pooling
  /** put before each query (E5's `query: `, BGE's instruction) */
  queryPrefix?: string
  /** put before each tool's text (E5's `passage: `) */
  documentPrefix?: string
  /** tokens per text, the rest cut (default: the model's `max_position_embeddings`, at most 512) */
  maxTokens?: number
  /** threads one inference may use (default 1: search shares the machine with the agent) */
  threads?: number
}

/** A model that cannot be used: the message names the file and what to do. */
export class ModelRefused extends Error {
  override name = 'ModelRefused'
}

/** What the folder holds, found and checked before anything is loaded. */
export interface ModelFiles {
  model: string
  tokenizer: string
  tokenizerConfig?: string
  config?: string
  pooling?: string
}

const MAX_MODEL_BYTES = 2 * 1024 ** 3
const MAX_JSON_BYTES = 64 * 1024 ** 2
/** what an input named so is fed: the token ids, their mask, or zeros (one segment) */
const FEEDS = ['input_ids', 'attention_mask', 'token_type_ids'] as const
/** the outputs read, in this order: one already pooled, else the tokens' vectors */
const POOLED = ['sentence_embedding', 'pooler_output_normalized']
const TOKENS = ['last_hidden_state', 'token_embeddings']

/** The folder's files, or ModelRefused saying which is missing or wrong. */
export function locateModel(path: string): ModelFiles {
  // a relative path would read the current project's files, whoever's config named it
  if (!isAbsolute(path) && !path.startsWith('~/'))
    throw new ModelRefused(
      `${path}: tool-search's model.path must be absolute or start with ~/ (a relative one would be read in whichever project yoke runs)`,
    )
  const given = resolve(path.startsWith('~/') ? join(homedir(), path.slice(2)) : path)
  const stat = statOf(given)
  if (!stat) throw new ModelRefused(`${given}: no such file or folder (tool-search's model.path)`)
  let model: string | undefined
  if (stat.isDirectory()) {
    model = [join(given, 'onnx', 'model.onnx'), join(given, 'model.onnx')].find((f) => statOf(f))
    if (!model)
      throw new ModelRefused(
        `${given}: no onnx/model.onnx or model.onnx in it; export the model to ONNX (optimum-cli export onnx --model NAME DIR), or give the .onnx file as model.path`,
      )
  } else model = given
  if (!model.endsWith('.onnx')) throw new ModelRefused(`${model}: not an .onnx file`)
  regular(model, MAX_MODEL_BYTES)
  const folder = [dirname(model), dirname(dirname(model))].find((dir) =>
    statOf(join(dir, 'tokenizer.json')),
  )
  if (!folder)
    throw new ModelRefused(
      `${model}: no tokenizer.json beside it or one folder up; copy the model's tokenizer.json there`,
    )
  const optional = (file: string) => (statOf(join(folder, file)) ? join(folder, file) : undefined)
  return {
    model,
    tokenizer: join(folder, 'tokenizer.json'),
    tokenizerConfig: optional('tokenizer_config.json'),
    config: optional('config.json'),
    pooling: optional(join('1_Pooling', 'config.json')),
  }
}

/**
 * Loads the model (its runtime and tokenizer imported now), runs it once to learn its dimensions,
 * and returns it as an Embedder whose id names the model file, its size and time, and the options
 * (vectors of another model, or of the same one pooled otherwise, are never mixed in).
 */
export async function loadOnnxModel(options: OnnxModelOptions): Promise<Embedder> {
  const files = locateModel(options.path)
  const [runtime, tokenizers] = await Promise.all([
    importOr('onnxruntime-node'),
    importOr('@huggingface/tokenizers'),
  ])
  // onnxruntime-node is CommonJS: its exports are the namespace's, or its default's
  const ort = (runtime.InferenceSession ? runtime : runtime.default) as Ort
  const Tokenizer = tokenizers.Tokenizer as new (json: object, config: object) => TokenizerLike
  const tokenizerConfig = files.tokenizerConfig ? readJson(files.tokenizerConfig) : {}
  let tokenizer: TokenizerLike
  try {
    tokenizer = new Tokenizer(readJson(files.tokenizer), tokenizerConfig)
  } catch (err) {
    throw new ModelRefused(`${files.tokenizer}: not a tokenizer this package reads (${first(err)})`)
  }
  const config = files.config ? readJson(files.config) : {}
  const pooling = options.pooling ?? poolingOf(files.pooling)
  const maxTokens =
    options.maxTokens ?? Math.min(512, numberAt(config, 'max_position_embeddings') ?? 512)
  let session: OrtSession
  try {
    session = (await ort.InferenceSession.create(files.model, {
      intraOpNumThreads: options.threads ?? 1,
      interOpNumThreads: 1,
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'all',
    })) as OrtSession
  } catch (err) {
    throw new ModelRefused(`${files.model}: onnxruntime did not load it (${first(err)})`)
  }
  let runner: OnnxRunner
  let dimensions: number
  try {
    runner = new OnnxRunner({
      ort,
      session,
      tokenizer,
      output: encoderOutput(files.model, session),
      pooling,
      maxTokens,
      padId: padIdOf(tokenizer, tokenizerConfig),
      int32: inputIsInt32(session),
    })
    // one run learns the dimensions, and that the model answers as an encoder does
    const [probe] = await runner.run(['dimensions'])
    dimensions = probe!.length
    if (dimensions < 2)
      throw new ModelRefused(
        `${files.model}: its output has ${dimensions} dimension per text: a classifier or a reranker, not a sentence encoder`,
      )
  } catch (err) {
    // the native session holds the model's memory: a refused model lets it go
    await session.release().catch(() => undefined)
    if (err instanceof ModelRefused) throw err
    throw new ModelRefused(`${files.model}: its first run failed (${first(err)})`)
  }
  // the model's file and its tokenizer's, as they are now, and how they are used
  const version = [files.model, files.tokenizer, files.tokenizerConfig].map((file) => {
    const stat = file ? statSync(file) : undefined
    return [file, stat?.size, stat?.mtimeMs]
  })
  const id = `onnx-${createHash('sha256')
    .update(
      JSON.stringify([version, pooling, maxTokens, options.queryPrefix, options.documentPrefix]),
    )
    .digest('hex')
    .slice(0, 12)}-${dimensions}`
  return {
    id,
    dimensions,
    describe: `${basename(dirname(files.tokenizer))} (ONNX, ${dimensions} dimensions, ${pooling} pooling)`,
    embed(texts, kind = 'document') {
      const prefix = (kind === 'query' ? options.queryPrefix : options.documentPrefix) ?? ''
      return runner.run(texts.map((t) => prefix + t))
    },
    close: () => runner.close(),
  }
}

/**
 * The output a sentence vector is read from: one named as encoders name theirs (pooled, or the
 * tokens' vectors); a model without such an output (a classifier's `logits`) or whose inputs are
 * not an encoder's is refused.
 */
function encoderOutput(model: string, session: OrtSession): string {
  const unknown = session.inputNames.filter((n) => !(FEEDS as readonly string[]).includes(n))
  if (!session.inputNames.includes('input_ids') || unknown.length)
    throw new ModelRefused(
      `${model}: not a sentence encoder's inputs (${session.inputNames.join(', ')}; expected input_ids, and attention_mask or token_type_ids)`,
    )
  const output = [...POOLED, ...TOKENS].find((n) => session.outputNames.includes(n))
  if (!output)
    throw new ModelRefused(
      `${model}: not a sentence encoder's outputs (${session.outputNames.join(', ')}; expected one of ${[...POOLED, ...TOKENS].join(', ')})`,
    )
  return output
}

interface TokenizerLike {
  encode(text: string): { ids: number[]; attention_mask: number[] }
  token_to_id(token: string): number | undefined
}
interface OrtTensor {
  dims: readonly number[]
  /** `float32`; a float16 model's data is its raw bits */
  type?: string
  data: Float32Array
}
interface OrtSession {
  inputNames: readonly string[]
  outputNames: readonly string[]
  inputMetadata?: ReadonlyArray<{ name: string; isTensor?: boolean; type?: string }>
  run(feeds: Record<string, unknown>): Promise<Record<string, OrtTensor>>
  release(): Promise<void>
}
type Ort = {
  InferenceSession: { create(path: string, options: object): Promise<unknown> }
  Tensor: new (type: string, data: BigInt64Array | Int32Array, dims: number[]) => unknown
}

/** One model's inference: tokenize, pad the batch, run, pool, scale to length 1; one run at a time. */
class OnnxRunner {
  #queue: Promise<unknown> = Promise.resolve()
  #closed = false

  constructor(
    readonly model: {
      ort: Ort
      session: OrtSession
      tokenizer: TokenizerLike
      output: string
      pooling: Pooling
      maxTokens: number
      padId: number
      int32: boolean
    },
  ) {}

  run(texts: readonly string[]): Promise<Float32Array[]> {
    if (!texts.length) return Promise.resolve([])
    const next = this.#queue.then(() => this.#run(texts))
    this.#queue = next.catch(() => undefined)
    return next
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#queue
    await this.model.session.release()
  }

  async #run(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.#closed) throw new Error('the model was closed')
    const { ort, session, tokenizer, maxTokens, padId, int32 } = this.model
    // without a mask the model would attend to the padding: each text then runs alone
    if (texts.length > 1 && !session.inputNames.includes('attention_mask')) {
      const vectors: Float32Array[] = []
      for (const text of texts) vectors.push(...(await this.#run([text])))
      return vectors
    }
    const encoded = texts.map((text) => {
      const { ids } = tokenizer.encode(text)
      // cut to the window, keeping the closing special token (BERT's [SEP], XLM-R's </s>)
      return ids.length > maxTokens ? [...ids.slice(0, maxTokens - 1), ids.at(-1)!] : ids
    })
    const width = Math.max(1, ...encoded.map((ids) => ids.length))
    const size = texts.length * width
    const ids = new Array<number>(size).fill(padId)
    const mask = new Array<number>(size).fill(0)
    encoded.forEach((row, r) =>
      row.forEach((id, c) => {
        ids[r * width + c] = id
        mask[r * width + c] = 1
      }),
    )
    const tensor = (values: number[]) =>
      new ort.Tensor(
        int32 ? 'int32' : 'int64',
        int32 ? Int32Array.from(values) : BigInt64Array.from(values, (v) => BigInt(v)),
        [texts.length, width],
      )
    const feeds: Record<string, unknown> = {}
    for (const name of session.inputNames)
      feeds[name] = tensor(
        name === 'input_ids' ? ids : name === 'attention_mask' ? mask : new Array(size).fill(0),
      )
    const result = (await session.run(feeds))[this.model.output]!
    if (result.type && result.type !== 'float32')
      throw new Error(
        `its output is ${result.type}, not float32: use the model's float32 export (onnx/model.onnx, not model_fp16.onnx)`,
      )
    return pool(result, mask, texts.length, width, this.model.pooling)
  }
}

/** Sentence vectors from the output: already one per text, or pooled from the tokens' vectors. */
export function pool(
  out: OrtTensor,
  mask: readonly number[],
  rows: number,
  width: number,
  pooling: Pooling,
): Float32Array[] {
  if (out.dims.length === 2) {
    const d = out.dims[1]!
    return Array.from({ length: rows }, (_, r) => unit(out.data.slice(r * d, (r + 1) * d)))
  }
  if (out.dims.length !== 3 || out.dims[1] !== width)
    throw new Error(
      `the model's output has dimensions [${out.dims.join(', ')}], not [batch, tokens, d]`,
    )
  const d = out.dims[2]!
  return Array.from({ length: rows }, (_, r) => {
    const vector = new Float32Array(d)
    const at = (token: number) => (r * width + token) * d
    if (pooling === 'cls') vector.set(out.data.subarray(at(0), at(0) + d))
    else if (pooling === 'last') {
      // the last token the mask keeps (padding is on the right)
      let last = 0
      for (let t = 0; t < width; t++) if (mask[r * width + t]) last = t
      vector.set(out.data.subarray(at(last), at(last) + d))
    } else {
      if (pooling === 'max') vector.fill(-Infinity)
      let count = 0
      for (let t = 0; t < width; t++) {
        if (!mask[r * width + t]) continue
        count++
        const from = at(t)
        for (let i = 0; i < d; i++)
          vector[i] =
            pooling === 'max'
              ? Math.max(vector[i]!, out.data[from + i]!)
              : vector[i]! + out.data[from + i]!
      }
      if (pooling === 'mean') for (let i = 0; i < d; i++) vector[i]! /= count || 1
    }
    return unit(vector)
  })
}

function poolingOf(file: string | undefined): Pooling {
  if (!file) return 'mean'
  const modes = readJson(file) as Record<string, unknown>
  if (modes.pooling_mode_cls_token === true) return 'cls'
  if (modes.pooling_mode_max_tokens === true) return 'max'
  if (modes.pooling_mode_lasttoken === true) return 'last'
  // the mean over the square root of the count is the mean scaled: the same once made length 1
  if (modes.pooling_mode_mean_tokens === true || modes.pooling_mode_mean_sqrt_len_tokens === true)
    return 'mean'
  throw new ModelRefused(
    `${file}: no pooling mode yoke runs (cls, mean, max or last token); set tool-search's model.pooling`,
  )
}

function padIdOf(tokenizer: TokenizerLike, config: Record<string, unknown>): number {
  const token = config.pad_token
  const name =
    typeof token === 'string' ? token : (token as { content?: string } | undefined)?.content
  return (name ? tokenizer.token_to_id(name) : undefined) ?? 0
}

function inputIsInt32(session: OrtSession): boolean {
  return session.inputMetadata?.find((m) => m.name === 'input_ids')?.type === 'int32'
}

async function importOr(name: string): Promise<Record<string, unknown> & { default?: unknown }> {
  try {
    return (await import(name)) as Record<string, unknown>
  } catch (err) {
    throw new ModelRefused(
      `tool-search's model needs the ${name} package (${first(err)}); install it: npm install onnxruntime-node @huggingface/tokenizers`,
    )
  }
}

/** A JSON file read within its cap; a parse error names the line. */
function readJson(file: string): Record<string, unknown> {
  const text = regular(file, MAX_JSON_BYTES).toString('utf8')
  try {
    const value: unknown = JSON.parse(text)
    if (value && typeof value === 'object' && !Array.isArray(value))
      return value as Record<string, unknown>
    throw new Error('not a JSON object')
  } catch (err) {
    const at = /position (\d+)/.exec(first(err))?.[1]
    const line = at ? `:${text.slice(0, Number(at)).split('\n').length}` : ''
    throw new ModelRefused(`${file}${line}: ${first(err)}`)
  }
}

/** The file's bytes (none for the model: onnxruntime reads it) when it is a regular file under `max`. */
function regular(file: string, max: number): Buffer {
  let bytes: Buffer
  try {
    const model = file.endsWith('.onnx')
    const stat = checkRegular(file, max)
    // a model's pointer is small: only then is it read, to tell one
    bytes = model && stat.size > LFS_POINTER_MAX ? Buffer.alloc(0) : readRegular(file, max)
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT'
    throw new ModelRefused(`${file}: ${missing ? 'no such file' : first(err)}`)
  }
  // a repository cloned without Git LFS holds pointers where the model's files should be
  if (bytes.subarray(0, LFS_POINTER.length).toString() === LFS_POINTER)
    throw new ModelRefused(
      `${file}: a Git LFS pointer (${bytes.length} bytes), not the file itself; fetch the files (git lfs pull in the model's clone), or download the model again`,
    )
  return file.endsWith('.onnx') ? Buffer.alloc(0) : bytes
}

const LFS_POINTER = 'version https://git-lfs.github.com/spec/'
const LFS_POINTER_MAX = 1024

function statOf(file: string): Stats | undefined {
  try {
    return statSync(file)
  } catch {
    return undefined
  }
}

function numberAt(object: Record<string, unknown>, key: string): number | undefined {
  const value = object[key]
  return typeof value === 'number' && value > 0 ? value : undefined
}

const first = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0]!
