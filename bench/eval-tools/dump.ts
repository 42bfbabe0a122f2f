/**
 * Rebuilds the eval's corpus from real servers: each one is spawned over stdio with the MCP SDK's
 * v1 client, its `tools/list` (every page) is written as given to corpus/<server>.json. Not part of
 * the eval run (which reads the fixtures only): rerun it by hand to refresh them.
 *
 *   node --import tsx bench/eval-tools/dump.ts [--prefix DIR] [server ...]
 *
 * The devDependencies resolve from the repository; the other packages from DIR/<slug>/node_modules,
 * where `npm install --prefix DIR/<slug> --ignore-scripts <package>@<version>` put them (slug: the
 * package name with `@` and `/` turned into `_`). A server that does not list its tools within the
 * wait is reported and skipped.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { format, resolveConfig } from 'prettier'
import { z } from 'zod'
import { SERVERS, type ServerSource } from './servers.ts'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '../..')
const WAIT_MS = 30_000
const LOOSE_PAGE = z.looseObject({
  tools: z.array(
    z.looseObject({
      name: z.string(),
      description: z.string().optional(),
      inputSchema: z.unknown(),
    }),
  ),
  nextCursor: z.string().optional(),
})

interface PackageJson {
  version: string
  bin?: string | Record<string, string>
}

function packageDir(pkg: string, prefix: string | undefined): string {
  const local = join(ROOT, 'node_modules', pkg)
  if (existsSync(local)) return local
  if (!prefix) throw new Error(`${pkg}: not in node_modules; pass --prefix`)
  return join(prefix, pkg.replace(/[@/]/g, '_'), 'node_modules', pkg)
}

function entry(dir: string, source: ServerSource): { script: string; version: string } {
  const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson
  const bin =
    typeof json.bin === 'string'
      ? json.bin
      : (json.bin?.[source.bin ?? ''] ?? Object.values(json.bin ?? {})[0])
  const script = source.script ?? bin
  if (!script) throw new Error(`${source.package}: no bin`)
  return { script: join(dir, script), version: json.version }
}

async function listTools(source: ServerSource, script: string, cwd: string) {
  for (const [path, text] of Object.entries(source.files ?? {})) {
    mkdirSync(dirname(join(cwd, path)), { recursive: true })
    writeFileSync(join(cwd, path), text)
  }
  const env = Object.fromEntries(
    Object.entries(source.env ?? {}).map(([k, v]) => [k, v.replaceAll('{home}', cwd)]),
  )
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [script, ...(source.args ?? []).map((a) => a.replaceAll('{home}', cwd))],
    env: { PATH: process.env.PATH ?? '', HOME: cwd, ...env },
    cwd,
    stderr: process.env.EVAL_DUMP_STDERR ? 'inherit' : 'ignore',
  })
  const client = new Client({ name: 'yoke-eval-dump', version: '1.0.0' })
  const timer = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`no tools/list within ${WAIT_MS} ms`)), WAIT_MS).unref(),
  )
  try {
    return await Promise.race([
      (async () => {
        await client.connect(transport)
        const tools = []
        let cursor: string | undefined
        do {
          // a loose result schema: some real servers give a tool a schema the SDK's would refuse
          const page = await client.request(
            { method: 'tools/list', params: cursor ? { cursor } : {} },
            LOOSE_PAGE,
          )
          tools.push(...page.tools)
          cursor = page.nextCursor
        } while (cursor)
        return tools.map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: t.inputSchema,
        }))
      })(),
      timer,
    ])
  } finally {
    await client.close().catch(() => {})
  }
}

const args = process.argv.slice(2)
const prefixAt = args.indexOf('--prefix')
const prefix = prefixAt >= 0 ? resolve(args.splice(prefixAt, 2)[1]!) : undefined
const wanted = new Set(args)
const cwd = mkdtempSync(join(tmpdir(), 'yoke-eval-dump-'))
for (const source of SERVERS) {
  if (wanted.size && !wanted.has(source.server)) continue
  try {
    const { script, version } = entry(packageDir(source.package, prefix), source)
    const tools = await listTools(source, script, cwd)
    if (!tools.length) throw new Error('no tools')
    const file = join(HERE, 'corpus', `${source.server}.json`)
    const fixture = { server: source.server, package: source.package, version, tools }
    // as prettier would have it, so `npm run lint` passes over the fixtures as written
    const options = { ...(await resolveConfig(file)), filepath: file }
    writeFileSync(file, await format(JSON.stringify(fixture), options))
    console.log(`${source.server}: ${tools.length} tools (${source.package}@${version})`)
  } catch (error) {
    console.log(`${source.server}: skipped (${(error as Error).message})`)
  }
}
process.exit(0)
