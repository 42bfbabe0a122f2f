// `yoke --help` imports every built-in plugin's commands module to list the commands, so those
// modules must be light: importing one loads no SDK, validator, container or watcher (they load
// inside `run`). Each module is imported in a fresh node process whose resolve hook records every
// module it resolves; CommonJS packages required from there show in require.cache.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, it } from 'node:test'
import { ROOT } from './helpers/project.ts'

const HEAVY = [
  'zod',
  'ajv',
  'ajv-formats',
  'awilix',
  'chokidar',
  'execa',
  'yaml',
  'smol-toml',
  'undici',
  '@modelcontextprotocol/[^/]+',
  'openai',
  '@anthropic-ai/sdk',
]
const HEAVY_PATH = new RegExp(`/node_modules/(${HEAVY.join('|')})/`)
// the 'yoke' entry composes the whole runtime: a commands module imports it only inside `run`
const YOKE_ENTRY = /\/src\/index\.[jt]s$/

// the hook runs on the loader thread: it keeps the URLs it resolved and hands them over on request
const HOOK = `
const seen = []
export async function initialize({ port }) {
  port.on('message', () => port.postMessage(seen))
  port.unref()
}
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context)
  seen.push(result.url)
  return result
}
`

// imports one module, then prints what was loaded and which of its commands' flags say nothing
const PROBE = `
import { register, createRequire } from 'node:module'
import { MessageChannel } from 'node:worker_threads'
const { port1, port2 } = new MessageChannel()
register('data:text/javascript,' + encodeURIComponent(process.env.HOOK), import.meta.url, {
  data: { port: port2 },
  transferList: [port2],
})
const module = await import(process.env.MODULE)
const resolved = await new Promise((done) => {
  port1.once('message', done)
  port1.postMessage('report')
})
port1.close()
const required = Object.keys(createRequire(import.meta.url).cache).map((f) => 'file://' + f)
const undescribed = (module.commands ?? []).flatMap((c) =>
  Object.entries(c.flags ?? {}).filter(([, f]) => !f.description).map(([name]) => c.name + ' --' + name),
)
process.stdout.write(JSON.stringify({ loaded: [...resolved, ...required], undescribed }))
`

interface Probe {
  loaded: string[]
  undescribed: string[]
}

function probe(file: string): Promise<Probe> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', '--conditions=yoke-source', '--input-type=module', '-e', PROBE],
      {
        cwd: ROOT,
        timeout: 30000,
        env: { ...process.env, HOOK, MODULE: pathToFileURL(file).href },
      },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`importing ${file} failed: ${err.message}\n${stderr}`))
        resolve(JSON.parse(stdout) as Probe)
      },
    )
  })
}

const modules = readdirSync(join(ROOT, 'plugins'))
  .map((name) => join(ROOT, 'plugins', name, 'commands.ts'))
  .filter((file) => existsSync(file))

describe('built-in commands modules are light', () => {
  it('finds the commands modules', () => {
    assert.ok(modules.length >= 5, `only ${modules.length} commands modules found`)
  })

  for (const file of modules) {
    const name = file.slice(ROOT.length)
    it(`${name} loads no heavy package and describes every flag`, async () => {
      const { loaded, undescribed } = await probe(file)
      // the probe does see packages: importing the module resolved 'yoke/cli' at least
      assert.ok(
        loaded.some((url) => url.includes('/src/cli/api.')),
        'the hook recorded nothing',
      )
      const heavy = [...new Set(loaded.filter((url) => HEAVY_PATH.test(url)))].map(
        (url) => HEAVY_PATH.exec(url)![1],
      )
      assert.deepEqual([...new Set(heavy)], [], `importing ${name} loaded heavy packages`)
      assert.deepEqual(
        loaded.filter((url) => YOKE_ENTRY.test(url)),
        [],
        `importing ${name} loaded the 'yoke' entry`,
      )
      assert.deepEqual(undescribed, [], 'flags without a description')
    })
  }
})
