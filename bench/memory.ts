/**
 * Memory at scale: 1,000 skills + 300 tools + 20 MCP stdio servers, the client process's RSS in
 * yoke against the same work done by hand, each side in a fresh node process of its own (the same
 * flags: `--expose-gc`, no TypeScript loader), alternating over rounds.
 * - yoke: `createYoke` from its build (compiled by this bench into a directory of its own, as
 *   `npm run build` compiles it: what a user runs) on the base preset with a project config: the
 *   skills plugin on 1,000 SKILL.md folders, a local plugin (tools.mjs) registering 300 tools with
 *   JSON Schemas, and 20 mcp-client instances on test/fixtures/mcp/modern.mjs (protocol auto);
 * - by hand: the same 1,000 SKILL.md read and parsed (front matter by `yaml`, body kept), the same
 *   300 tool definitions held with their schemas compiled by ajv (with ajv-formats), and 20 v2 SDK
 *   Clients on the same server, each listing its tools.
 * Each side reports process.memoryUsage() once the work is done, settled and garbage-collected;
 * the servers are processes of their own and are not counted. The figure is the base preset's;
 * the same project on the default preset (tool search, the agent, serve) is printed beside it.
 * Rounds rotate the order of the sides.
 *
 * Run alone: `node --import tsx --conditions=yoke-source bench/memory.ts`. MEMORY_ROUNDS sets the
 * rounds (default 5); MEMORY_YOKE_ENTRY=…/dist/src/index.js measures that build instead of
 * compiling one; MEMORY_INSPECT=/path/module.mjs is imported by each side after its measurement
 * and its default export called with the side's name (heap snapshots, loaded scripts).
 */
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const SKILLS = 1000
const TOOLS = 300
const SERVERS = 20
const HERE = fileURLToPath(import.meta.url)
const ROOT = join(dirname(HERE), '..')
const SERVER = join(ROOT, 'test/fixtures/mcp/modern.mjs')

export interface Usage {
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  /** the young generation's committed size (physical) */
  newSpace: number
  /** ms from the start to the work done */
  ms: number
}

// ---------------------------------------------------------------------------------------------
// the fixture: skills, tool definitions, the yoke project config

const words = 'parse chart table csv report image audit review deploy index query sync'.split(' ')
const skillMd = (i: number) =>
  [
    '---',
    `name: skill-${i}`,
    `description: ${words[i % 12]} and ${words[(i * 7) % 12]} helper number ${i}. Use it when a task asks to ${words[(i * 5) % 12]} files of kind ${i % 17}.`,
    'license: MIT',
    ...(i % 3 === 0 ? ['requires_bins: ls'] : []),
    ...(i % 5 === 0 ? [`metadata: { author: bench, version: "1.${i % 9}" }`] : []),
    '---',
    `# Skill ${i}`,
    '',
    ...Array.from(
      { length: 24 },
      (_, l) =>
        `${l + 1}. Step ${l} of skill ${i}: run \`scripts/${words[(i + l) % 12]}.sh\` on the input, then check the output for ${words[l % 12]} problems and report them plainly.`,
    ),
    '',
  ].join('\n')

/** 300 tool definitions, schemas of a realistic shape (strings, enums, bounds, arrays, a nested object) */
function toolDefinitions() {
  return Array.from({ length: TOOLS }, (_, i) => ({
    name: `tool_${i}`,
    description: `Does ${words[i % 12]} on a ${words[(i * 3) % 12]} target (tool ${i}); returns a short text summary.`,
    inputSchema: {
      type: 'object',
      properties: {
        target: { type: 'string', description: 'what to work on', minLength: 1, maxLength: 500 },
        mode: { type: 'string', enum: ['fast', 'full', `mode-${i % 7}`] },
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 10 },
        tags: { type: 'array', items: { type: 'string', pattern: '^[a-z0-9-]+$' }, maxItems: 20 },
        options: {
          type: 'object',
          properties: {
            dryRun: { type: 'boolean' },
            since: { type: 'string', format: 'date-time' },
            [`extra${i % 5}`]: { type: 'number' },
          },
          additionalProperties: false,
        },
      },
      required: ['target'],
      additionalProperties: false,
    },
  }))
}

const TOOLS_PLUGIN = `import { readFileSync } from 'node:fs'
const defs = JSON.parse(readFileSync(new URL('./tools.json', import.meta.url), 'utf8'))
export default {
  name: 'bench-tools',
  inject: ['runtime'],
  apply(ctx) {
    for (const def of defs)
      ctx.runtime.register({ ...def, execute: async (args) => ({ content: [{ type: 'text', text: def.name + ' ' + args.target }] }) })
  },
}
`

function projectConfig(): string {
  const lines = [
    'preset: base',
    'plugins:',
    '  skills:',
    '    config: { dirs: [./skills] }',
    '  bench-tools:',
    '    use: ./tools.mjs',
  ]
  for (let s = 0; s < SERVERS; s++)
    lines.push(
      `  server-${s}:`,
      '    use: mcp-client',
      `    config: { serverName: s${s}, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(SERVER)}] }`,
    )
  return lines.join('\n') + '\n'
}

/** Writes the scenario's files into a fresh directory (its .home is $YOKE_HOME, kept empty). */
export function writeFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'yoke-memory-'))
  mkdirSync(join(dir, '.home'))
  for (let i = 0; i < SKILLS; i++) {
    mkdirSync(join(dir, 'skills', `skill-${i}`), { recursive: true })
    writeFileSync(join(dir, 'skills', `skill-${i}`, 'SKILL.md'), skillMd(i))
  }
  writeFileSync(join(dir, 'tools.json'), JSON.stringify(toolDefinitions()))
  writeFileSync(join(dir, 'tools.mjs'), TOOLS_PLUGIN)
  writeFileSync(join(dir, 'yoke.config.yaml'), projectConfig())
  writeFileSync(
    join(dir, 'yoke.default.yaml'),
    projectConfig().replace('preset: base', 'preset: default'),
  )
  writeFileSync(join(dir, 'side.mjs'), SIDE)
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules')) // what side.mjs imports by hand
  return dir
}

// ---------------------------------------------------------------------------------------------
// the two sides, each run in a node process of its own from a plain ES module (side.mjs, written
// beside the fixture): no TypeScript loader in either process, yoke imported from its build

const SIDE = `
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { getHeapSpaceStatistics } from 'node:v8'
const [side, dir, yokeEntry] = process.argv.slice(2)
const SKILLS = ${SKILLS}, TOOLS = ${TOOLS}, SERVERS = ${SERVERS}, SERVER = ${JSON.stringify(SERVER)}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
async function until(done, what, ms = 60_000) {
  const end = Date.now() + ms
  while (!done()) {
    if (Date.now() > end) throw new Error('timed out waiting for ' + what)
    await sleep(20)
  }
}

// yoke: the project config does it all (base preset, or the default one); returns the closer
async function yokeSide(config) {
  const { createYoke } = await import(yokeEntry)
  const errors = []
  const yoke = createYoke({
    cwd: dir,
    config,
    home: join(dir, '.home'),
    trust: true,
    onLog: (r) => void (r.level === 'error' && errors.push(r.message)),
  })
  const event = await yoke.ready
  if (!event.ok || event.failed.length)
    throw new Error('yoke did not compose: ' + JSON.stringify(event.failed) + errors.join('\\n'))
  const connected = () => yoke.get('mcp').list().filter((s) => s.state === 'connected' && s.tools).length
  await until(() => connected() >= SERVERS, SERVERS + " servers' tools")
  if (yoke.get('skills')?.list().length !== SKILLS) throw new Error('yoke lists no ' + SKILLS + ' skills')
  // the default preset's tool search offers them on demand: only the base preset lists them all
  if (config === 'yoke.config.yaml' && yoke.tools().filter((t) => t.name.startsWith('tool_')).length !== TOOLS)
    throw new Error('yoke does not list the ' + TOOLS + ' tools')
  return () => yoke.close()
}

// by hand: read and parse the skills, compile the schemas, connect the servers; returns the closer
async function handSide() {
  const { parse } = await import('yaml')
  const { Ajv } = await import('ajv')
  const addFormats = (await import('ajv-formats')).default
  const { Client } = await import('@modelcontextprotocol/client')
  const { StdioClientTransport } = await import('@modelcontextprotocol/client/stdio')
  const root = join(dir, 'skills')
  const skills = readdirSync(root).map((name) => {
    const text = readFileSync(join(root, name, 'SKILL.md'), 'utf8')
    const end = text.indexOf('\\n---', 4)
    return {
      dir: join(root, name),
      frontmatter: parse(text.slice(4, end)),
      body: text.slice(text.indexOf('\\n', end + 1) + 1),
    }
  })
  const ajv = new Ajv({ strict: false, allErrors: true })
  addFormats(ajv)
  const defs = JSON.parse(readFileSync(join(dir, 'tools.json'), 'utf8'))
  const tools = defs.map((def) => ({ ...def, validate: ajv.compile(def.inputSchema) }))
  const clients = await Promise.all(
    Array.from({ length: SERVERS }, async (_, s) => {
      const client = new Client({ name: 'hand-' + s, version: '1' })
      await client.connect(new StdioClientTransport({ command: process.execPath, args: [SERVER], stderr: 'ignore' }))
      return { client, tools: (await client.listTools()).tools }
    }),
  )
  if (skills.length !== SKILLS || tools.length !== TOOLS || clients.some((c) => !c.tools.length))
    throw new Error('the hand side did not do the work')
  const held = { skills, tools, clients }
  return () => Promise.all(held.clients.map((c) => c.client.close()))
}

const t0 = performance.now()
const close = await (side === 'hand' ? handSide() : yokeSide(side === 'yoke' ? 'yoke.config.yaml' : 'yoke.default.yaml'))
const ms = performance.now() - t0
await sleep(1000) // timers, late list results and the watcher's first scan settle
for (let i = 0; i < 3; i++) {
  globalThis.gc()
  await sleep(100)
}
// the young generation's committed pages: 0-32 MB, as allocation happened to grow it (an outlier's cause)
const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0
process.stdout.write(JSON.stringify({ ...process.memoryUsage(), newSpace, ms }) + '\\n')
if (process.env.MEMORY_INSPECT) await (await import(process.env.MEMORY_INSPECT)).default(side)
await close()
process.exit(0)
`

/**
 * Spawns one side in a fresh node process: `node --expose-gc side.mjs SIDE DIR ENTRY`, the same
 * flags for both sides; `extra` flags go before the script (e.g. --heap-prof).
 */
export function measure(
  side: Side,
  dir: string,
  entry: string,
  extra: string[] = [],
): Promise<Usage> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', ...extra, join(dir, 'side.mjs'), side, dir, pathToFileURL(entry).href],
      // the default preset serves MCP over HTTP: on a port of the system's choosing
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, YOKE_MCP_PORT: '0' } },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d))
    child.stderr.on('data', (d: Buffer) => (err += d))
    child.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{'))
      if (code === 0 && line) resolve(JSON.parse(line) as Usage)
      else reject(new Error(`memory bench: the ${side} side exited ${code}\n${err}`))
    })
  })
}

/**
 * yoke's build, as `npm run build` makes it, in a directory of this bench's own (incremental):
 * the checkout's dist/ belongs to whoever built it last. Returns the entry, dist/src/index.js.
 * Type errors do not stop it (tsc emits anyway); a build with no entry does.
 */
export function buildYoke(): string {
  const out = join(
    tmpdir(),
    `yoke-memory-build-${createHash('sha1').update(ROOT).digest('hex').slice(0, 8)}`,
  )
  mkdirSync(out, { recursive: true })
  for (const name of ['node_modules', 'presets'])
    if (!existsSync(join(out, name))) symlinkSync(join(ROOT, name), join(out, name))
  copyFileSync(join(ROOT, 'package.json'), join(out, 'package.json'))
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
  const args = ['-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(out, 'dist')]
  args.push('--tsBuildInfoFile', join(out, 'dist/.tsbuildinfo'), '--declaration', 'false')
  args.push('--declarationMap', 'false', '--sourceMap', 'false', '--inlineSources', 'false')
  const built = spawnSync(process.execPath, [tsc, ...args], { encoding: 'utf8' })
  const entry = join(out, 'dist/src/index.js')
  if (!existsSync(entry)) throw new Error(`memory bench: the build failed\n${built.stdout}`)
  if (built.status) console.error(`memory bench: the build has type errors (emitted anyway)`)
  return entry
}

// ---------------------------------------------------------------------------------------------
// the bench

/** yoke on the base preset (the figure), by hand, and yoke on the default preset (printed) */
type Side = 'yoke' | 'hand' | 'yoke-default'
const SIDES: Side[] = ['yoke', 'hand', 'yoke-default']
const mb = (bytes: number) => bytes / 2 ** 20
const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!

export async function memoryBench() {
  const { figure, ratioSpread, row } = await import('./stats.ts')
  const rounds = Number(process.env.MEMORY_ROUNDS ?? 5)
  const entry = process.env.MEMORY_YOKE_ENTRY ?? buildYoke()
  const dir = writeFixture()
  const runs: Record<Side, Usage[]> = { yoke: [], hand: [], 'yoke-default': [] }
  try {
    for (let r = 0; r < rounds; r++)
      for (const side of [...SIDES.slice(r % 3), ...SIDES.slice(0, r % 3)])
        runs[side].push(await measure(side, dir, entry))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const { yoke, hand } = runs
  const dflt = runs['yoke-default']
  const at = (us: Usage[], k: keyof Usage) => mid(us.map((u) => u[k]))
  const ratio = (us: Usage[], k: keyof Usage) => `${(at(us, k) / at(hand, k)).toFixed(2)}×`
  const spread = (us: Usage[], k: keyof Usage) =>
    ratioSpread(
      us.map((u) => u[k]),
      hand.map((u) => u[k]),
    )
  console.log(
    `\nmemory: ${SKILLS} skills + ${TOOLS} tools + ${SERVERS} MCP stdio servers, client process after a GC, median of ${rounds} fresh processes per side (MB); yoke on the base preset (the figure) and on the default one (tool search, agent, serve)`,
  )
  console.log(row(['', 'by hand', 'yoke', '÷ hand', 'spread', 'default', '÷ hand', 'spread']))
  for (const k of ['rss', 'heapUsed', 'heapTotal', 'newSpace', 'external', 'ms'] as const) {
    const scale = k === 'ms' ? (x: number) => x : mb
    console.log(
      row([
        k === 'ms' ? 'ready (ms)' : k,
        scale(at(hand, k)),
        scale(at(yoke, k)),
        ratio(yoke, k),
        spread(yoke, k),
        scale(at(dflt, k)),
        ratio(dflt, k),
        spread(dflt, k),
      ]),
    )
  }
  const [y, h] = [at(yoke, 'rss'), at(hand, 'rss')]
  figure({
    name: 'RSS scale scenario yoke ÷ by hand',
    value: y / h,
    goal: 1.5,
    better: 'lower',
    unit: '×',
    spread: spread(yoke, 'rss'),
    baseline: 'the same work by hand',
  })
}

if (process.argv[1] === HERE) {
  await memoryBench()
  process.exit(0)
}
