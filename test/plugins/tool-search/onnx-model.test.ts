// tool-search's own-model road: a sentence encoder in ONNX from a folder the user gives, run by
// onnxruntime-node (a real inference session) on a model the test writes in a real export's layout.
// It embeds as the model says (pooling, prefixes, the window), a composition searches on its
// meaning, and every broken folder is refused naming the file and the fix — a FIFO without
// hanging — while search goes on by words and `yoke doctor` says why.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { createYoke, type LogRecord, type ToolResult, type Yoke } from '../../../src/index.ts'
import { loadOnnxModel, ModelRefused } from '../../../plugins/tool-search/onnx-model.ts'
import { writeModelFolder, type TinyModel } from '../../helpers/onnx-model.ts'
import { runYoke, tempProject, type Project } from '../../helpers/project.ts'
import { everyday, LISTED } from './tools.ts'

const TOOLS = everyday('move_file', 'get_forecast', 'send_email', 'create_issue', 'list_events')

// five meanings (mail, weather, files, issues, calendar) and a faint sixth the special tokens
// share; words of one meaning are synonyms, words of none (and unknown ones) are zeros
const MEANINGS: Record<string, string> = {
  mail: 'send email mail message letter recipient inbox',
  weather: 'weather forecast rain umbrella sunny temperature',
  files: 'file move directory path folder read',
  issues: 'issue bug ticket repository create report',
  calendar: 'calendar events meeting schedule date range list',
}
const axis = (n: number, value = 1) => Array.from({ length: 6 }, (_, i) => (i === n ? value : 0))
const ROWS: TinyModel['rows'] = [
  // padding has a strong vector of its own, as a real encoder's padded positions do: only the
  // mask keeps it out of a sentence's vector
  ['[PAD]', axis(0, 5)],
  ['[UNK]', axis(5, 0)],
  ['[CLS]', axis(5, 0.1)],
  ['[SEP]', axis(5, 0.1)],
  ...Object.values(MEANINGS).flatMap((words, n) =>
    words.split(' ').map((w): [string, number[]] => [w, axis(n)]),
  ),
  ...'query passage the a an to of for in get new another do i need it will tomorrow my'
    .split(' ')
    .map((w): [string, number[]] => [w, w === 'query' ? axis(5, 1) : axis(5, 0)]),
]
const cosine = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i]!, 0)

const projects: Project[] = []
const yokes: Yoke[] = []
after(async () => {
  for (const y of yokes) await y.close()
  for (const p of projects) p.cleanup()
})
const scratch = () => {
  const p = tempProject({})
  projects.push(p)
  return p
}

describe('tool-search: a model of your own (ONNX)', () => {
  it('embeds through onnxruntime: synonyms near, other meanings far, unit vectors, its id names the model', async () => {
    const dir = writeModelFolder(join(scratch().dir, 'tiny'), { rows: ROWS })
    const model = await loadOnnxModel({ path: dir })
    try {
      assert.equal(model.dimensions, 6)
      assert.match(model.id, /^onnx-[0-9a-f]{12}-6$/)
      assert.match(model.describe!, /tiny \(ONNX, 6 dimensions, mean pooling\)/)
      const [umbrella, forecast, email] = await model.embed([
        'do i need an umbrella tomorrow',
        'get the weather forecast for a location',
        'send an email message',
      ])
      for (const v of [umbrella!, forecast!, email!])
        assert.ok(Math.abs(cosine(v, v) - 1) < 1e-5, 'a unit vector')
      assert.ok(cosine(umbrella!, forecast!) > 0.95, `${cosine(umbrella!, forecast!)}`)
      assert.ok(cosine(umbrella!, email!) < 0.1, `${cosine(umbrella!, email!)}`)
      // a batch of texts of different lengths is padded and masked: each as if alone
      const [alone] = await model.embed(['send an email message'])
      assert.deepEqual(
        [...alone!].map((x) => x.toFixed(5)),
        [...email!].map((x) => x.toFixed(5)),
      )
    } finally {
      await model.close?.()
    }
  })

  it('pools as 1_Pooling/config.json says (cls here), or as configured; a query gets its prefix', async () => {
    const dir = writeModelFolder(join(scratch().dir, 'cls'), { rows: ROWS }, { pooling: 'cls' })
    const cls = await loadOnnxModel({ path: dir })
    const mean = await loadOnnxModel({ path: dir, pooling: 'mean', queryPrefix: 'query: ' })
    try {
      assert.match(cls.describe!, /cls pooling/)
      // [CLS]'s own vector, whatever follows it
      const [a, b] = await cls.embed(['send email', 'weather forecast'])
      assert.deepEqual([...a!], [...b!])
      assert.notEqual(cls.id, mean.id)
      const [asQuery] = await mean.embed(['send email'], 'query')
      const [asTool] = await mean.embed(['send email'])
      assert.ok(cosine(asQuery!, asTool!) < 0.99, 'the prefix moved the query')
      assert.ok(cosine(asQuery!, asTool!) > 0.5)
      // the last token the mask keeps: [SEP], whatever the length
      const last = await loadOnnxModel({ path: dir, pooling: 'last' })
      const [short, long] = await last.embed(['mail', 'send email to the recipient'])
      assert.deepEqual([...short!], [...long!])
      assert.deepEqual([...short!].map(Math.round), [0, 0, 0, 0, 0, 1])
      await last.close?.()
    } finally {
      await Promise.all([cls.close?.(), mean.close?.()])
    }
  })

  it('reads a model that pools itself (sentence_embedding), given as its .onnx file', async () => {
    const dir = writeModelFolder(join(scratch().dir, 'pooled'), { rows: ROWS, output: 'pooled' })
    const model = await loadOnnxModel({ path: join(dir, 'onnx', 'model.onnx') })
    try {
      const [email, mail] = await model.embed(['send email', 'mail a letter'])
      assert.ok(cosine(email!, mail!) > 0.9)
    } finally {
      await model.close?.()
    }
  })

  it('cuts a text to the window, keeping its closing token', async () => {
    const dir = writeModelFolder(join(scratch().dir, 'window'), { rows: ROWS })
    const model = await loadOnnxModel({ path: dir, maxTokens: 8 })
    try {
      // past the window, the weather words are cut off: what is left is about mail
      const long = `send email ${'letter '.repeat(20)} weather forecast rain`
      const [cut] = await model.embed([long])
      const [mail] = await model.embed(['mail'])
      assert.ok(cosine(cut!, mail!) > 0.95, `${cosine(cut!, mail!)}`)
    } finally {
      await model.close?.()
    }
  })
})

describe('tool-search: models exported otherwise', () => {
  it('a model without attention_mask runs each text alone (its padding would count); int32 inputs are fed as int32', async () => {
    const root = scratch().dir
    const maskless = await loadOnnxModel({
      path: writeModelFolder(join(root, 'maskless'), { rows: ROWS, inputs: ['input_ids'] }),
    })
    const int32 = await loadOnnxModel({
      path: writeModelFolder(join(root, 'int32'), { rows: ROWS, inputType: 'int32' }),
    })
    try {
      for (const model of [maskless, int32]) {
        const [short, long] = await model.embed(['mail', 'send an email message to the recipient'])
        const [alone] = await model.embed(['mail'])
        assert.deepEqual(
          [...short!].map((x) => x.toFixed(5)),
          [...alone!].map((x) => x.toFixed(5)),
        )
        assert.ok(cosine(short!, long!) > 0.95)
      }
    } finally {
      await Promise.all([maskless.close?.(), int32.close?.()])
    }
  })
})

describe('tool-search: a broken model folder is refused by name, and nothing else is harmed', () => {
  const refused = async (path: string, pattern: RegExp) => {
    await assert.rejects(loadOnnxModel({ path }), (err: Error) => {
      assert.ok(err instanceof ModelRefused, err.stack)
      assert.match(err.message, pattern)
      return true
    })
  }

  it('a missing folder, one without a model, a model without a tokenizer', async () => {
    const root = scratch().dir
    await refused(
      join(root, 'nowhere'),
      /nowhere: no such file or folder \(tool-search's model\.path\)/,
    )
    mkdirSync(join(root, 'empty'))
    await refused(
      join(root, 'empty'),
      /empty: no onnx\/model\.onnx or model\.onnx in it; export the model/,
    )
    const dir = writeModelFolder(join(root, 'no-tokenizer'), { rows: ROWS })
    execFileSync('rm', [join(dir, 'tokenizer.json')])
    await refused(dir, /model\.onnx: no tokenizer\.json beside it or one folder up/)
  })

  it('garbage for a model, JSON errors by line, a FIFO for a tokenizer (no hang)', async () => {
    const root = scratch().dir
    const garbage = writeModelFolder(join(root, 'garbage'), { rows: ROWS })
    writeFileSync(join(garbage, 'onnx', 'model.onnx'), 'this is not protobuf\n'.repeat(50))
    await refused(garbage, /garbage\/onnx\/model\.onnx: onnxruntime did not load it \(/)
    const badJson = writeModelFolder(join(root, 'bad-json'), { rows: ROWS })
    writeFileSync(join(badJson, 'tokenizer.json'), '{\n  "version": "1.0",\n  "model": {,\n}')
    await refused(badJson, /bad-json\/tokenizer\.json:3: /)
    const fifo = writeModelFolder(join(root, 'fifo'), { rows: ROWS })
    execFileSync('rm', [join(fifo, 'tokenizer.json')])
    execFileSync('mkfifo', [join(fifo, 'tokenizer.json')])
    await refused(fifo, /fifo\/tokenizer\.json: not a regular file/)
    const notTokenizer = writeModelFolder(join(root, 'not-tokenizer'), { rows: ROWS })
    writeFileSync(join(notTokenizer, 'tokenizer.json'), JSON.stringify({ model: { type: 'Nope' } }))
    await refused(
      notTokenizer,
      /not-tokenizer\/tokenizer\.json: not a tokenizer this package reads/,
    )
  })

  it('a clone made without Git LFS: its pointers are said as such, with the fix', async () => {
    const root = scratch().dir
    const pointer = (size: number) =>
      `version https://git-lfs.github.com/spec/v1\noid sha256:${'ab'.repeat(32)}\nsize ${size}\n`
    const model = writeModelFolder(join(root, 'lfs-model'), { rows: ROWS })
    writeFileSync(join(model, 'onnx', 'model.onnx'), pointer(133093491))
    await refused(
      model,
      /lfs-model\/onnx\/model\.onnx: a Git LFS pointer \(\d+ bytes\), not the file itself; fetch the files \(git lfs pull/,
    )
    const tokenizer = writeModelFolder(join(root, 'lfs-tokenizer'), { rows: ROWS })
    writeFileSync(join(tokenizer, 'tokenizer.json'), pointer(711661))
    await refused(tokenizer, /lfs-tokenizer\/tokenizer\.json: a Git LFS pointer/)
  })

  it('a float16 export, a classifier, a relative path: each refused with why', async () => {
    const root = scratch().dir
    await refused(
      writeModelFolder(join(root, 'fp16'), { rows: ROWS, float16: true }),
      /fp16\/onnx\/model\.onnx: its first run failed \(its output is float16, not float32: use the model's float32 export/,
    )
    await refused(
      writeModelFolder(join(root, 'classifier'), { rows: ROWS, outputName: 'logits' }),
      /classifier\/onnx\/model\.onnx: not a sentence encoder's outputs \(logits; expected one of sentence_embedding/,
    )
    await refused(
      'models/tiny',
      /models\/tiny: tool-search's model\.path must be absolute or start with ~\//,
    )
  })

  it("a model whose inputs are not a sentence encoder's is refused naming them", async () => {
    const dir = writeModelFolder(join(scratch().dir, 'vision'), {
      rows: ROWS,
      inputs: ['pixel_values'],
    })
    await refused(dir, /not a sentence encoder's inputs \(pixel_values; expected input_ids/)
  })
})

describe('tool-search: a composition searching on a model of your own', () => {
  const config = (model: Record<string, unknown>, semantic = 'auto') =>
    JSON.stringify({
      plugins: {
        listed: { use: LISTED, config: { tools: TOOLS } },
        'tool-search': { use: 'tool-search', config: { default: 'deferred', semantic, model } },
      },
    })
  /** a project whose config names the model at `path` under the project's folder */
  const compose = async (path: string, before?: (p: Project) => void) => {
    const p = tempProject({})
    projects.push(p)
    p.write('yoke.config.yaml', config({ path: join(p.dir, path) }))
    before?.(p)
    const logs: LogRecord[] = []
    const yoke = createYoke({ cwd: p.dir, home: p.home, onLog: (r) => logs.push(r) })
    yokes.push(yoke)
    assert.deepEqual((await yoke.ready).failed, [])
    return { p, yoke, logs }
  }

  it('finds a need by meaning the words miss; vectors cached under the model id', async () => {
    const { p, yoke } = await compose('models/tiny', (p) => {
      writeModelFolder(join(p.dir, 'models', 'tiny'), { rows: ROWS })
    })
    const api = yoke.get('toolSearch')!
    await api.semanticSettled()
    const status = api.semantic()
    assert.equal(status.state, 'ready', status.error)
    assert.match(status.model!, /tiny \(ONNX, 6 dimensions/)
    assert.equal(status.embedded, status.tools)
    const result: ToolResult = await yoke.call('tool_search', {
      query: 'do i need an umbrella tomorrow',
    })
    const text = result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
    const structured = result.structured as {
      arms: string
      noMatch: boolean
      tools: Array<{ name: string }>
    }
    assert.equal(structured.arms, 'hybrid', text)
    assert.equal(structured.noMatch, false, text)
    assert.equal(structured.tools[0]?.name, 'get_forecast', text)
    // a need nothing here serves is still no match
    const pizza = await api.search('order a pizza')
    assert.equal(pizza.noMatch, true)
    const cached = readdirSync(join(p.home, 'cache', 'tool-search'))
    assert.ok(
      cached.some((f) => /^onnx-[0-9a-f]{12}-6\.vectors$/.test(f)),
      cached.join(', '),
    )
  })

  it("a model from an untrusted project's config waits for `yoke trust` (native code parses it), and says so", async () => {
    const p = tempProject({})
    projects.push(p)
    p.write('yoke.config.yaml', config({ path: join(p.dir, 'models', 'tiny') }))
    writeModelFolder(join(p.dir, 'models', 'tiny'), { rows: ROWS })
    const logs: LogRecord[] = []
    const yoke = createYoke({ cwd: p.dir, home: p.home, trust: false, onLog: (r) => logs.push(r) })
    yokes.push(yoke)
    await yoke.ready
    const said = logs.find((r) => /wait for trust: .*tool-search \(project code/.test(r.message))
    assert.ok(said, logs.map((r) => r.message).join('\n'))
    assert.equal(said.level, 'warn')
    assert.match(said.message, /run `yoke trust`/)
    assert.equal(yoke.get('toolSearch'), undefined)
  })

  it('a model that does not load leaves search on words, warns why, and `yoke doctor` says it with the fix', async () => {
    const { p, yoke, logs } = await compose('models/missing')
    const api = yoke.get('toolSearch')!
    await api.semanticSettled()
    assert.equal(api.semantic().state, 'failed')
    assert.match(api.semantic().error!, /models\/missing: no such file or folder/)
    const outcome = await api.search('create a new issue')
    assert.equal(outcome.arms, 'lexical')
    assert.equal(outcome.candidates[0]?.item.name, 'create_issue')
    assert.ok(
      logs.some(
        (r) => r.level === 'warn' && /its model did not load: .*models\/missing/.test(r.message),
      ),
      logs.map((r) => r.message).join('\n'),
    )
    const doctor = await runYoke(['doctor', '--json'], { cwd: p.dir, env: { YOKE_HOME: p.home } })
    const report = JSON.stringify(JSON.parse(doctor.stdout))
    assert.match(report, /tool search's model did not load: search is on words only/, doctor.stderr)
    assert.match(report, /fix model\.path in tool-search's config/)
    assert.ok(existsSync(join(p.dir, 'yoke.config.yaml')))
  })
})
