/**
 * A sentence encoder small enough to write in a test: an ONNX graph that looks each token up in a
 * table (Gather), in a Hugging Face model folder with a WordPiece tokenizer.json — the layout a
 * real exported model has (onnx/model.onnx, tokenizer.json, 1_Pooling/config.json), so the loading
 * code under test is the code a real model meets. Words given one row are synonyms to it.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

// the protobuf wire format, as much of it as an ONNX ModelProto needs
const varint = (value: number) => {
  const out: number[] = []
  let n = BigInt(value)
  do {
    let byte = Number(n & 0x7fn)
    n >>= 7n
    if (n) byte |= 0x80
    out.push(byte)
  } while (n)
  return Buffer.from(out)
}
const key = (field: number, wire: number) => varint((field << 3) | wire)
const int = (field: number, n: number) => Buffer.concat([key(field, 0), varint(n)])
const bytes = (field: number, value: string | Buffer) => {
  const b = typeof value === 'string' ? Buffer.from(value) : value
  return Buffer.concat([key(field, 2), varint(b.length), b])
}
const message = (field: number, parts: Buffer[]) => bytes(field, Buffer.concat(parts))

const FLOAT = 1
const INT32 = 6
const INT64 = 7
const FLOAT16 = 10
type Dim = number | string
const dimension = (d: Dim) => message(1, [typeof d === 'number' ? int(1, d) : bytes(2, d)])
/** a ValueInfoProto: a graph input (field 11) or output (12) */
const tensorInfo = (field: number, name: string, type: number, dims: Dim[]) =>
  message(field, [
    bytes(1, name),
    message(2, [message(1, [int(1, type), message(2, dims.map(dimension))])]),
  ])
const node = (op: string, inputs: string[], outputs: string[], attributes: Buffer[] = []) =>
  message(1, [
    ...inputs.map((i) => bytes(1, i)),
    ...outputs.map((o) => bytes(2, o)),
    bytes(4, op),
    ...attributes,
  ])
const intAttribute = (name: string, value: number) =>
  message(5, [bytes(1, name), int(20, 2), int(3, value)])
const intsAttribute = (name: string, values: number[]) =>
  message(5, [bytes(1, name), int(20, 7), ...values.map((v) => int(8, v))])

export interface TinyModel {
  /** the vocabulary, special tokens first; a word's row is its vector */
  rows: Array<[token: string, vector: number[]]>
  /** `tokens`: [batch, tokens, d] named last_hidden_state; `pooled`: [batch, d] named sentence_embedding (mean over all tokens) */
  output?: 'tokens' | 'pooled'
  /** the graph's inputs (default input_ids and attention_mask) */
  inputs?: string[]
  /** the inputs' element type (default int64) */
  inputType?: 'int64' | 'int32'
  /** the tokens' output as float16 (a model_fp16.onnx export) */
  float16?: boolean
  /** the output's name (default last_hidden_state, or sentence_embedding when pooled) */
  outputName?: string
}

/** The ONNX bytes of a table lookup over `rows`. */
export function onnxModel(model: TinyModel): Buffer {
  const d = model.rows[0]![1].length
  const table = Buffer.alloc(model.rows.length * d * 4)
  model.rows.forEach(([, vector], r) =>
    vector.forEach((x, i) => table.writeFloatLE(x, (r * d + i) * 4)),
  )
  const embeddings = message(5, [
    int(1, model.rows.length),
    int(1, d),
    int(2, FLOAT),
    bytes(8, 'embeddings'),
    bytes(9, table),
  ])
  const inputs = model.inputs ?? ['input_ids', 'attention_mask']
  const pooled = model.output === 'pooled'
  const out = model.outputName ?? (pooled ? 'sentence_embedding' : 'last_hidden_state')
  const direct = !pooled && !model.float16
  const nodes = [
    node(
      'Gather',
      ['embeddings', inputs[0]!],
      [direct ? out : 'tokens'],
      [intAttribute('axis', 0)],
    ),
    ...(pooled
      ? [
          node(
            'ReduceMean',
            ['tokens'],
            [out],
            [intsAttribute('axes', [1]), intAttribute('keepdims', 0)],
          ),
        ]
      : []),
    ...(model.float16 ? [node('Cast', ['tokens'], [out], [intAttribute('to', FLOAT16)])] : []),
  ]
  const graph = message(7, [
    ...nodes,
    bytes(2, 'tiny-encoder'),
    embeddings,
    ...inputs.map((name) =>
      tensorInfo(11, name, model.inputType === 'int32' ? INT32 : INT64, ['batch', 'tokens']),
    ),
    pooled
      ? tensorInfo(12, out, FLOAT, ['batch', d])
      : tensorInfo(12, out, model.float16 ? FLOAT16 : FLOAT, ['batch', 'tokens', d]),
  ])
  // IR version 8, opset 13 (ReduceMean still takes `axes` as an attribute there)
  return Buffer.concat([
    int(1, 8),
    message(8, [bytes(1, ''), int(2, 13)]),
    bytes(2, 'yoke-test'),
    graph,
  ])
}

export const SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]']

/** A BERT-style WordPiece tokenizer.json over these tokens (ids in order). */
export function tokenizerJson(tokens: string[]): object {
  const vocab = Object.fromEntries(tokens.map((t, i) => [t, i]))
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((content) => ({
      id: vocab[content],
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: {
      type: 'BertNormalizer',
      clean_text: true,
      handle_chinese_chars: true,
      strip_accents: null,
      lowercase: true,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab,
    },
  }
}

/**
 * Writes a model folder as a real export lays it out: onnx/model.onnx, tokenizer.json,
 * tokenizer_config.json, config.json and, with `pooling`, 1_Pooling/config.json.
 */
export function writeModelFolder(
  dir: string,
  model: TinyModel,
  options: { pooling?: 'mean' | 'cls' | 'max' } = {},
): string {
  mkdirSync(join(dir, 'onnx'), { recursive: true })
  writeFileSync(join(dir, 'onnx', 'model.onnx'), onnxModel(model))
  writeFileSync(
    join(dir, 'tokenizer.json'),
    JSON.stringify(tokenizerJson(model.rows.map(([t]) => t))),
  )
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({ pad_token: '[PAD]', model_max_length: 512 }),
  )
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({ model_type: 'bert', max_position_embeddings: 64 }),
  )
  if (options.pooling) {
    mkdirSync(join(dir, '1_Pooling'), { recursive: true })
    writeFileSync(
      join(dir, '1_Pooling', 'config.json'),
      JSON.stringify({
        word_embedding_dimension: model.rows[0]![1].length,
        pooling_mode_cls_token: options.pooling === 'cls',
        pooling_mode_mean_tokens: options.pooling === 'mean',
        pooling_mode_max_tokens: options.pooling === 'max',
      }),
    )
  }
  return dir
}
