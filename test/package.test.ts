// The package as a user gets it: `npm pack`, installed offline into a temporary project that is
// not this repository, and used there as documented: the CLI (--help, init, tools list, tools
// call), `import` from plain Node, `require` (Node ≥ 20.19 requires ES modules), a strict
// consumer's `tsc --noEmit`, and examples/embed. The tarball holds what users need and no more.
//
// Offline: the consumer gets a package-lock.json cut from this repository's (the closure of
// yoke's dependencies, and @types/node), so `npm ci --offline` takes every tarball from the npm
// cache that this checkout's `npm ci` filled; only when that fails is the registry asked.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ROOT } from './helpers/project.ts'

const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
const timings: Record<string, number> = {}

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a command to its end, killed (and failing) after `timeoutMs`. */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Ran> {
  const timeoutMs = options.timeoutMs ?? 60_000
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...ENV, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`${command} ${args.join(' ')}: no end in ${timeoutMs} ms\n${stdout}\n${stderr}`),
      )
    }, timeoutMs)
    child.on('error', (err) => (clearTimeout(timer), reject(err)))
    child.on('close', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr })))
  })
}

/** `run`, timed under `label`; fails unless it exits 0. */
async function step(
  label: string,
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
) {
  const started = performance.now()
  const ran = await run(command, args, options)
  timings[label] = Math.round(performance.now() - started)
  assert.equal(ran.code, 0, `${label}: exit ${ran.code}\n${ran.stdout}\n${ran.stderr}`)
  return ran
}

let work: string
let consumer: string
const ENV: Record<string, string> = {
  NO_COLOR: '1',
  npm_config_update_notifier: 'false',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
  npm_config_offline: 'true', // npx finds the installed bin without asking the registry
}

interface PackedFile {
  path: string
}

let packed: { filename: string; integrity: string; files: PackedFile[]; unpackedSize: number }

describe('the npm package, installed into another project', () => {
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'yoke-pack-'))
    consumer = join(work, 'consumer')
    mkdirSync(consumer)
    ENV.YOKE_HOME = join(work, 'home')
    await buildIfStale()
    // prepack would rebuild dist from scratch under the feet of the other tests: it is fresh already
    const pack = await step(
      'npm pack',
      'npm',
      ['pack', '--ignore-scripts', '--json', '--pack-destination', work],
      { cwd: ROOT },
    )
    packed = JSON.parse(pack.stdout)[0]
    writeConsumer(consumer, `../${packed.filename}`, packed.integrity)
    const started = performance.now()
    const offline = await run('npm', ['ci', '--offline'], { cwd: consumer, timeoutMs: 120_000 })
    timings['npm ci --offline'] = Math.round(performance.now() - started)
    if (offline.code !== 0) {
      // a cache without some tarball: fetch what is missing (the one step that may use the network)
      process.stderr.write(`npm ci --offline failed, trying --prefer-offline:\n${offline.stderr}\n`)
      await step('npm ci --prefer-offline', 'npm', ['ci', '--prefer-offline'], {
        cwd: consumer,
        env: { npm_config_offline: 'false' },
        timeoutMs: 180_000,
      })
    }
  })
  after(() => {
    process.stdout.write(`# package test timings (ms): ${JSON.stringify(timings)}\n`)
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it('the tarball holds the build, the presets, the bin, README and LICENSE; no tests, fixtures, bench or scratch', () => {
    const paths = packed.files.map((f) => f.path)
    for (const needed of [
      'package.json',
      'README.md',
      'LICENSE',
      'bin/yoke.js',
      'presets/base.yaml',
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/src/index.js.map',
      'dist/src/embed.d.ts',
      'dist/src/cli/api.d.ts',
      'dist/plugins/skills/index.js',
      'dist/console/index.html', // the web console, bundled at build time
      'dist/console/app.js',
    ])
      assert.ok(paths.includes(needed), `${needed} is packed`)
    // tsc can leave a relative `.ts` import as it is (a dynamic one in an object literal's method),
    // which the build cannot load
    const tsImports = paths.filter(
      (p) =>
        p.endsWith('.js') &&
        /import\(\s*['"]\.{1,2}\/[^'"]*\.ts['"]\s*\)/.test(readFileSync(join(ROOT, p), 'utf8')),
    )
    assert.deepEqual(tsImports, [])
    const unwanted = paths.filter((p) =>
      /(^|\/)(test|tests|fixtures|bench|scratch|\.ci|\.yoke|node_modules)\/|\.test\.|tsbuildinfo|\.tgz$/.test(
        p,
      ),
    )
    assert.deepEqual(unwanted, [])
    const outside = paths.filter(
      (p) => !/^(dist|presets|bin)\/|^(package\.json|README\.md|LICENSE)$/.test(p),
    )
    assert.deepEqual(outside, [])
    timings['packed files'] = paths.length
  })

  it('the CLI: yoke --help, yoke init, and tools list / tools call in the project it made', async () => {
    const help = await step('npx yoke --help', 'npx', ['yoke', '--help'], { cwd: consumer })
    for (const command of ['dev', 'tools list', 'tools call', 'init'])
      assert.match(help.stdout, new RegExp(`^  ${command} `, 'm'))
    const init = await step('npx yoke init app', 'npx', ['yoke', 'init', 'app'], { cwd: consumer })
    assert.match(init.stdout, /made plugins\/hello\.ts/)
    const app = join(consumer, 'app')
    assert.ok(existsSync(join(app, 'yoke.config.yaml')))
    const list = await step('npx yoke tools list', 'npx', ['yoke', 'tools', 'list'], { cwd: app })
    for (const tool of ['hello', 'shout', 'skills_list'])
      assert.match(list.stdout, new RegExp(`^${tool}\\s`, 'm'), list.stdout)
    // the TypeScript plugin runs from the installed package (tsx registered when it is imported)
    const call = await step(
      'npx yoke tools call hello',
      'npx',
      ['yoke', 'tools', 'call', 'hello', '--args', '{"name":"Ada"}'],
      { cwd: app },
    )
    assert.equal(call.stdout.trim(), 'Hello, Ada!')
  })

  it('plain Node ESM imports yoke and yoke/cli', async () => {
    const script = `
      import { createYoke, definePlugin, YokeError } from 'yoke'
      import { defineCommand, YokeError as CliError } from 'yoke/cli'
      const error = new YokeError('USAGE', { reason: 'x' })
      console.log(JSON.stringify([typeof createYoke, typeof definePlugin, typeof defineCommand, error.code, CliError === YokeError]))`
    const esm = await step('node import', process.execPath, ['--input-type=module', '-e', script], {
      cwd: consumer,
    })
    assert.deepEqual(JSON.parse(esm.stdout), ['function', 'function', 'function', 'USAGE', true])
  })

  it('CommonJS require(yoke) works (Node ≥ 20.19 requires an ES module graph)', async (t) => {
    const script = `
      const yoke = require('yoke')
      const cli = require('yoke/cli')
      console.log(JSON.stringify([typeof yoke.createYoke, typeof yoke.YokeError, cli.YokeError === yoke.YokeError]))`
    const cjs = await step('node require', process.execPath, ['-e', script], { cwd: consumer })
    assert.deepEqual(JSON.parse(cjs.stdout), ['function', 'function', true])
    if (/ExperimentalWarning/.test(cjs.stderr))
      t.diagnostic(`require(esm) warns: ${cjs.stderr.trim()}`)
  })

  it("a strict consumer's tsc --noEmit passes on yoke's types (skipLibCheck false, no DOM lib), and so does yoke init's tsconfig", async () => {
    const dir = join(consumer, 'typed')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(STRICT_TSCONFIG, null, 2))
    writeFileSync(join(dir, 'consumer.ts'), TYPED_CONSUMER)
    // both at once: each is a few seconds of CPU
    const [strict, scaffolded] = await Promise.all([
      step('tsc strict consumer', process.execPath, [TSC, '-p', dir], {
        cwd: consumer,
        timeoutMs: 120_000,
      }),
      existsSync(join(consumer, 'app', 'tsconfig.json'))
        ? step('tsc yoke init app', process.execPath, [TSC, '-p', 'app'], {
            cwd: consumer,
            timeoutMs: 120_000,
          })
        : undefined,
    ])
    assert.equal(strict.stdout + strict.stderr, '')
    if (scaffolded) assert.equal(scaffolded.stdout + scaffolded.stderr, '')
  })

  it('examples/embed runs against the installed package', async () => {
    const example = join(consumer, 'embed')
    cpSync(join(ROOT, 'examples', 'embed'), example, {
      recursive: true,
      filter: (src) => !/[/\\](node_modules|package-lock\.json)$/.test(src),
    })
    const ran = await step('node embed/index.mjs', process.execPath, ['embed/index.mjs'], {
      cwd: consumer,
    })
    assert.equal(ran.stderr, '')
    const lines = ran.stdout.trim().split('\n')
    assert.deepEqual(lines, [
      'ready: 9 instances (policy, prompt, skills, mcp, models, installs, claude-plugins, capabilities, todos)',
      'tools: todo_add (low), todo_list (low), todo_clear (high)',
      'added "write the report" (1 in all)',
      'added "review the pull request" (2 in all)',
      '1. write the report',
      '2. review the pull request',
      'todo_add with an empty text: INVALID_ARGS',
      'the todos service counts 2',
      'approval asked for todo_clear (todo_clear is high risk): allowed once',
      'cleared 2 todos',
      'the todos service counts 0',
    ])
  })
})

const STRICT_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    skipLibCheck: false,
    noEmit: true,
    types: ['node'],
  },
  files: ['consumer.ts'],
}

// what an application and a plugin author write against yoke's API
const TYPED_CONSUMER = `import { createYoke, definePlugin, YokeError, type ReloadEvent, type ToolResult, type Yoke } from 'yoke'
import { defineCommand } from 'yoke/cli'

declare module 'yoke' {
  interface Services {
    clock: { now(): number }
  }
}

export const clock = definePlugin({
  name: 'clock',
  inject: ['runtime'],
  provides: ['clock'],
  apply(ctx, config: { offsetMs?: number }) {
    ctx.provide('clock', { now: () => Date.now() + (config.offsetMs ?? 0) })
    ctx.runtime.register({ name: 'now', description: 'the time', execute: () => String(Date.now()) })
    ctx.setInterval(() => ctx.logger.debug('tick'), 60_000)
  },
})

export const command = defineCommand({
  name: 'clock show',
  summary: 'prints the time',
  usage: 'yoke clock show',
  async run(_args, _positionals, cli) {
    return cli.compose(async (composition) => (composition.get('clock')?.now() ? 0 : 1))
  },
})

export async function main(): Promise<ToolResult> {
  const yoke: Yoke = createYoke({
    cwd: '.',
    set: { 'plugins.clock': { use: './clock.js' } },
    approval: ({ call }) => (call.name === 'now' ? 'allow-once' : 'deny'),
  })
  try {
    const event: ReloadEvent = await yoke.ready
    const now: number | undefined = yoke.get('clock')?.now()
    console.log(event.added, now, yoke.tools().map((t) => t.name))
    return await yoke.call('now', {}, { caller: 'app' })
  } catch (err) {
    if (err instanceof YokeError) console.error(err.code, err.location, err.hint)
    throw err
  } finally {
    await yoke.close()
  }
}

export async function scoped(): Promise<number> {
  await using yoke = createYoke({ preset: 'minimal', onLog: (r) => console.log(r.level, r.message) })
  return (await yoke.ready).added.length
}
`

/**
 * The consumer's package.json and package-lock.json: yoke from the tarball, and the closure of
 * its dependencies (and of @types/node) as this repository's lockfile pins them.
 */
function writeConsumer(dir: string, tarball: string, integrity: string) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages as Record<
    string,
    Record<string, unknown>
  >
  const typesNode = lock['node_modules/@types/node']!.version as string
  const picked: Record<string, Record<string, unknown>> = {}
  const visit = (path: string, dev: boolean) => {
    const seen = picked[path]
    if (seen) {
      if (!dev) delete seen.dev
      return
    }
    const { dev: _dev, devOptional: _devOptional, ...entry } = lock[path]!
    picked[path] = dev ? { ...entry, dev: true } : entry
    for (const field of ['dependencies', 'optionalDependencies', 'peerDependencies'] as const) {
      for (const name of Object.keys((entry[field] ?? {}) as object)) {
        const found = locate(lock, path, name)
        if (found) visit(found, dev)
        else assert.notEqual(field, 'dependencies', `${path} needs ${name}: not in the lockfile`)
      }
    }
  }
  for (const name of Object.keys(pkg.dependencies)) visit(`node_modules/${name}`, false)
  visit('node_modules/@types/node', true)
  const root = {
    name: 'consumer',
    private: true,
    type: 'module',
    dependencies: { yoke: `file:${tarball}` },
    devDependencies: { '@types/node': typesNode },
  }
  const packages = {
    '': { name: root.name, dependencies: root.dependencies, devDependencies: root.devDependencies },
    'node_modules/yoke': {
      version: pkg.version,
      resolved: `file:${tarball}`,
      integrity,
      license: pkg.license,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    },
    ...picked,
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify(root, null, 2))
  writeFileSync(
    join(dir, 'package-lock.json'),
    JSON.stringify({ name: root.name, lockfileVersion: 3, requires: true, packages }, null, 2),
  )
}

/** Where Node finds `name` from the package at `from`: its own node_modules, then its parents'. */
function locate(lock: Record<string, unknown>, from: string, name: string): string | undefined {
  for (let base = from; ;) {
    const candidate = `${base ? `${base}/` : ''}node_modules/${name}`
    if (candidate in lock) return candidate
    if (!base) return undefined
    const up = base.lastIndexOf('/node_modules/')
    base = up >= 0 ? base.slice(0, up) : ''
  }
}

/**
 * `npm test` builds before the tests; a file run alone (`node test/run.js package`) after an edit
 * gets a build here, so the tarball never ships an older dist than the sources.
 */
async function buildIfStale() {
  const built = join(ROOT, 'dist', '.tsbuildinfo')
  const builtAt = existsSync(built) ? statSync(built).mtimeMs : 0
  const newer = [...sources(join(ROOT, 'src')), ...sources(join(ROOT, 'plugins'))].find(
    (file) => statSync(file).mtimeMs > builtAt,
  )
  if (newer) {
    process.stderr.write(`dist is older than ${relative(ROOT, newer)}: building\n`)
    await step('npm run build', 'npm', ['run', 'build'], { cwd: ROOT, timeoutMs: 120_000 })
  }
}

function* sources(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules' && entry.name !== 'fixtures') yield* sources(path)
    } else if (/\.(ts|mts|mjs|js)$/.test(entry.name) && !entry.name.includes('.test.')) yield path
  }
}
