/**
 * exec-tools test helpers: packages written to a temporary directory (manifest.json plus a real
 * executable: a Node script or a shell script), and a kernel with the runtime, the prompt plugin,
 * the mcp registry and an exec-tools instance over that directory.
 */
import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import execTools, { type ExecToolsApi } from '../../plugins/exec-tools/index.ts'
import mcpClient from '../../plugins/mcp-client/index.ts'
import mcpHub from '../../plugins/mcp/index.ts'
import promptPlugin from '../../plugins/prompt/index.ts'
import shellHooks from '../../plugins/shell-hooks/index.ts'
import { removeTree } from './temp.ts'
import {
  Kernel,
  runtimePlugin,
  toPlugin,
  validateConfig,
  type Fiber,
  type LogRecord,
  type Plugin,
  type ToolRuntime,
} from '../../src/index.ts'

export interface PackageSpec {
  manifest: Record<string, unknown>
  /** the executable's text (a #! script), named after the manifest's name unless `exeName` */
  exe?: string
  exeName?: string
  files?: Record<string, string>
  /** symlinks: name in the package → target */
  links?: Record<string, string>
}

/** A Node executable: `body` runs with `tool` (argv[2]) and `args` (stdin JSON) in scope. */
export const nodeExe = (body: string) =>
  `#!${process.execPath}\nconst tool = process.argv[2]\nlet input = ''\nprocess.stdin.on('data', (d) => (input += d)).on('end', async () => {\n  const args = JSON.parse(input || '{}')\n  ${body}\n})\n`

export function writePackage(root: string, dir: string, spec: PackageSpec): string {
  const path = join(root, dir)
  mkdirSync(path, { recursive: true })
  writeFileSync(join(path, 'manifest.json'), JSON.stringify(spec.manifest, null, 2))
  if (spec.exe !== undefined) {
    const exe = join(path, spec.exeName ?? String(spec.manifest.name))
    writeFileSync(exe, spec.exe)
    chmodSync(exe, 0o755)
  }
  for (const [rel, text] of Object.entries(spec.files ?? {})) {
    mkdirSync(join(path, rel, '..'), { recursive: true })
    writeFileSync(join(path, rel), text, { mode: text.startsWith('#!') ? 0o755 : 0o644 }) // scripts are executable
  }
  for (const [name, target] of Object.entries(spec.links ?? {}))
    symlinkSync(target, join(path, name))
  return path
}

export interface ExecHarness {
  root: string
  kernel: Kernel
  rt: ToolRuntime
  api: ExecToolsApi
  logs: LogRecord[]
  fiber: Fiber
  /** another exec-tools instance over `dirs` (waits for its apply) */
  spawnExec(key: string, dirs: string[]): Promise<Fiber>
  close(): Promise<void>
}

export async function execHarness(
  packages: Record<string, PackageSpec>,
  config: Record<string, unknown> = {},
  extra: Array<[unknown, unknown, string]> = [],
  prepare?: (root: string) => void,
): Promise<ExecHarness> {
  const root = mkdtempSync(join(tmpdir(), 'yoke-exec-'))
  for (const [dir, spec] of Object.entries(packages))
    writePackage(join(root, 'packages'), dir, spec)
  prepare?.(root)
  mkdirSync(join(root, 'packages'), { recursive: true })
  // the children a package composes by name (`uses`), as the config's module loader finds them
  const builtins: Record<string, unknown> = { 'mcp-client': mcpClient, 'shell-hooks': shellHooks }
  const kernel = new Kernel({
    pluginNamed: (name) => (builtins[name] ? (toPlugin(builtins[name]) as Plugin) : undefined),
  })
  const logs: LogRecord[] = []
  kernel.hooks.log.tap('test', (r) => void logs.push(r))
  kernel.spawn(toPlugin(runtimePlugin) as Plugin, { unloadGraceMs: 200 }, { key: 'yoke:runtime' })
  kernel.spawn(
    toPlugin({
      name: 'project',
      provides: ['project'],
      apply: (ctx: any) => void ctx.provide('project', { dir: root, home: join(root, '.home') }),
    }) as Plugin,
    {},
    { key: 'yoke:project' },
  )
  kernel.spawn(toPlugin(promptPlugin) as Plugin, {}, { key: 'prompt' })
  kernel.spawn(toPlugin(mcpHub) as Plugin, {}, { key: 'mcp' })
  for (const [plugin, cfg, key] of extra) {
    const p = toPlugin(plugin) as Plugin
    const checked = validateConfig(p, cfg)
    assert.ok('value' in checked, JSON.stringify(checked))
    kernel.spawn(p, checked.value, { key })
  }
  await kernel.settled()
  const plugin = toPlugin(execTools) as Plugin
  const checked = validateConfig(plugin, {
    dirs: [join(root, 'packages')],
    watch: false,
    ...config,
  })
  assert.ok('value' in checked, JSON.stringify(checked))
  const fiber = kernel.spawn(plugin, checked.value, { key: 'packages' })
  await kernel.whenSettled(fiber, 30_000)
  await kernel.settled()
  return {
    root,
    kernel,
    rt: kernel.services.get('runtime')!.value as ToolRuntime,
    api: kernel.services.get('execTools')!.value as ExecToolsApi,
    logs,
    fiber,
    async spawnExec(key, dirs) {
      const more = validateConfig(plugin, { dirs, watch: false, ...config })
      assert.ok('value' in more, JSON.stringify(more))
      const spawned = kernel.spawn(plugin, more.value, { key })
      await kernel.whenSettled(spawned, 30_000)
      return spawned
    },
    async close() {
      await kernel.dispose()
      await removeTree(root)
    },
  }
}
