/**
 * claude-plugins: Claude Code plugin folders (and Codex's and Agent Plugins' where they overlap)
 * as yoke parts. `dirs` names plugin folders, folders of them, or a marketplace checkout
 * (`.claude-plugin/marketplace.json` with `./` sources); an installer adds more through the
 * service. Each plugin runs as a child instance (folder.ts): an edit to one restarts that one.
 */
import { existsSync, readdirSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, relative, resolve, sep } from 'node:path'
import { z } from 'zod'
import { defineHooks, definePlugin, readConfigText, SyncHook, type ChildHandle } from 'yoke'
import type { ClaudePluginsApi } from './api.ts'
import { pluginFolder, type FolderState } from './folder.ts'
import { claudeCodeInstalls } from './installed.ts'
import { isObject, isPluginFolder, readJson, readManifest } from './manifest.ts'

export * from './api.ts'

const config = z
  .object({
    /** plugin folders, folders of plugin folders, or marketplace checkouts; relative to the project */
    dirs: z.array(z.string().min(1)).default([]),
    /**
     * also the plugins this machine's Claude Code has installed and enabled (its
     * installed_plugins.json and the enabledPlugins of its settings)
     */
    claudeCode: z.boolean().default(false),
    /** where Claude Code keeps its files */
    claudeHome: z.string().min(1).default('~/.claude'),
    /** plugin names not to load */
    except: z.array(z.string().min(1)).default([]),
    /** where each plugin's `${CLAUDE_PLUGIN_DATA}` folder is made (relative to the project) */
    dataDir: z.string().min(1).default('.yoke/plugin-data'),
    watch: z.boolean().default(true),
  })
  .strict()

/** below a watched folder: what others watch, or nobody needs to */
const SKIPPED = /[\\/](node_modules|\.git|skills|commands|agents)([\\/]|$)/

interface Found {
  dir: string
  source: string
}

export default definePlugin({
  name: 'claude-plugins',
  inject: ['project'],
  provides: ['claudePlugins'],
  config,
  runsProjectCode: (cfg) => cfg.dirs.length > 0, // their hooks and stdio servers wait for `yoke trust`
  apply(ctx, cfg) {
    const expand = (d: string) =>
      resolve(ctx.project.dir, d.startsWith('~/') ? join(homedir(), d.slice(2)) : d)
    const roots = [...new Set(cfg.dirs.map(expand))]
    const added = new Map<string, string>()
    const states = new Map<string, FolderState>()
    const running = new Map<string, { spec: string; dir: string; child: ChildHandle }>()
    const hooks = defineHooks('claude-plugins', { change: new SyncHook<[]>([]) })
    const except = new Set(cfg.except)
    const warn = (message: string) => ctx.logger.warn(message)

    const publish = (name: string) => (state: FolderState | undefined) => {
      if (state) states.set(name, state)
      else states.delete(name)
      hooks.change.call()
    }

    /** Starts, restarts and stops children to match what the folders hold now. */
    const sync = () => {
      const found = [
        ...roots.flatMap((root) => discover(root, 'config', warn)),
        ...[...added].map(([dir, source]) => ({ dir, source })),
        ...(cfg.claudeCode
          ? claudeCodeInstalls(expand(cfg.claudeHome), ctx.project.dir, warn).map((i) => ({
              dir: i.dir,
              source: `Claude Code (${i.id})`,
            }))
          : []),
      ]
      const next = new Map<string, { spec: string; dir: string; source: string }>()
      for (const { dir, source } of found) {
        const manifest = readManifest(dir)
        if (except.has(manifest.name)) continue
        const taken = next.get(manifest.name)
        if (taken) {
          ctx.logger.warn(
            `plugin ${manifest.name} in ${dir} is not loaded: ${taken.dir} has the same name (the first is used)`,
          )
          continue
        }
        next.set(manifest.name, { spec: fingerprint(dir, manifest), dir, source })
      }
      for (const [name, { spec, child }] of running) {
        if (next.get(name)?.spec === spec) continue
        running.delete(name)
        void child()
      }
      for (const [name, { spec, dir, source }] of next) {
        if (running.has(name) || ctx.signal.aborted) continue
        const manifest = readManifest(dir)
        for (const problem of manifest.problems) ctx.logger.warn(`plugin ${name}: ${problem}`)
        try {
          const child = ctx.plugin(
            pluginFolder,
            {
              dir,
              source,
              manifest,
              projectDir: ctx.project.dir,
              dataRoot: expand(cfg.dataDir),
              watch: cfg.watch,
              publish: publish(name),
            },
            { key: `plugin-${name}` },
          )
          running.set(name, { spec, dir, child })
        } catch (err) {
          ctx.logger.error(`plugin ${name} (${dir}) was not loaded`, err)
        }
      }
    }

    const watchDirs = (dirs: string[]) =>
      ctx.watch(dirs, sync, {
        // skills watch their own roots and folders their prompts: only manifests, hooks and servers restart a plugin
        ignored: (path) =>
          dirs.some((d) => path.startsWith(d + sep) && SKIPPED.test(path.slice(d.length))),
      })

    sync()
    if (cfg.watch && roots.length) watchDirs(roots)
    if (cfg.watch && cfg.claudeCode)
      ctx.watch(join(expand(cfg.claudeHome), 'plugins', 'installed_plugins.json'), sync)

    const all = () => [...states.values()].sort((a, b) => a.info.name.localeCompare(b.info.name))
    const byName = <T extends { name: string }>(items: T[], name: string) => {
      const exact = items.find((i) => i.name === name)
      if (exact) return exact
      const bare = items.filter((i) => i.name.slice(i.name.indexOf(':') + 1) === name)
      return bare.length === 1 ? bare[0] : undefined
    }
    const api: ClaudePluginsApi = {
      hooks,
      list: () => all().map((s) => s.info),
      commands: () => all().flatMap((s) => s.commands),
      command: (name) => byName(api.commands(), name),
      agents: () => all().flatMap((s) => s.agents),
      agent: (name) => byName(api.agents(), name),
      add(dir, options = {}) {
        const full = resolve(ctx.project.dir, dir)
        added.set(full, options.source ?? 'added')
        const unwatch = cfg.watch ? watchDirs([full]) : undefined
        sync()
        return () => {
          unwatch?.()
          if (added.delete(full)) sync()
        }
      },
    }
    ctx.provide('claudePlugins', api)
    ctx.control('claude-plugins-list', () => ({ roots, plugins: api.list() }))
  },
})

/**
 * The plugin folders under `root`: itself when it is one, the plugins a marketplace.json lists
 * with `./` sources, else its immediate subfolders that are plugins.
 */
export function discover(root: string, source: string, warn: (m: string) => void): Found[] {
  if (!existsSync(root)) return []
  if (isPluginFolder(root)) return [{ dir: root, source }]
  const market = join(root, '.claude-plugin', 'marketplace.json')
  if (existsSync(market)) return marketplacePlugins(root, market, source, warn)
  let names: string[]
  try {
    names = readdirSync(root).sort()
  } catch (err) {
    warn(`${root}: ${(err as Error).message}`)
    return []
  }
  return names
    .filter((n) => !n.startsWith('.'))
    .map((n) => join(root, n))
    .filter((dir) => isDir(dir) && isPluginFolder(dir))
    .map((dir) => ({ dir, source }))
}

function marketplacePlugins(root: string, file: string, source: string, warn: (m: string) => void) {
  const read = readJson(file)
  if ('problem' in read) {
    warn(read.problem)
    return []
  }
  const market = isObject(read.value) ? read.value : {}
  const base =
    isObject(market.metadata) && typeof market.metadata.pluginRoot === 'string'
      ? resolve(root, market.metadata.pluginRoot)
      : root
  const out: Found[] = []
  for (const entry of Array.isArray(market.plugins) ? market.plugins : []) {
    if (!isObject(entry)) continue
    const from = entry.source
    if (typeof from !== 'string' || !from.startsWith('./')) {
      warn(
        `${file}: plugin ${JSON.stringify(entry.name)} comes from outside this folder; \`yoke add ${String(entry.name)}@<marketplace>\` installs it`,
      )
      continue
    }
    const dir = resolve(base, from)
    const rel = relative(root, dir)
    if (rel.startsWith('..') || rel.startsWith(sep))
      warn(`${file}: plugin ${JSON.stringify(entry.name)}: ${from} leads out of the marketplace`)
    else if (isDir(dir))
      out.push({ dir, source: `${source} (marketplace ${String(market.name ?? root)})` })
    else warn(`${file}: plugin ${JSON.stringify(entry.name)}: ${from} does not exist`)
  }
  return out
}

/** What restarts a plugin when it changes: its manifest and its server files (hooks files are watched by claude-hooks). */
function fingerprint(dir: string, manifest: ReturnType<typeof readManifest>): string {
  const read = (f: string) => {
    try {
      return readConfigText(f) // checked: a FIFO named plugin.json must not hang every reload
    } catch {
      return ''
    }
  }
  return JSON.stringify([
    dir,
    manifest.file ? read(manifest.file) : '',
    manifest.mcpFiles.map(read),
    manifest.hookFiles,
    manifest.skills,
    manifest.commands,
    manifest.agents,
  ])
}

function isDir(p: string) {
  try {
    return statSync(p).isDirectory()
  } catch {
    return false
  }
}
