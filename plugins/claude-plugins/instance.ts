/**
 * One claude-plugins instance as an object: its fields are its state (the roots, the folders an
 * installer added, each running plugin's child and what it published), its methods what it does.
 * Which folders run is decided by decide.ts; this finds them, runs one child per plugin
 * (folder.ts) and answers the `claudePlugins` service and the `claude-plugins/list` control.
 */
import { join, resolve, sep } from 'node:path'
import { defineHooks, SyncHook, type ChildHandle, type InjectedContext } from 'yoke'
import type { ClaudePluginsApi } from './api.ts'
import { byName, choose, fingerprint, restarts, type Chosen } from './decide.ts'
import { discover, expandDir, type Found } from './discover.ts'
import { pluginFolder, type FolderState } from './folder.ts'
import { claudeCodeInstalls } from './installed.ts'
import { readManifest } from './manifest.ts'

/** claude-plugins' config, validated (index.ts holds the schema). */
export interface ClaudePluginsConfig {
  dirs: string[]
  claudeCode: boolean
  claudeHome: string
  except: string[]
  dataDir: string
  watch: boolean
}

/** below a watched folder: what others watch, or nobody needs to */
const SKIPPED = /[\\/](node_modules|\.git|skills|commands|agents)([\\/]|$)/

export class ClaudePlugins {
  /** the configured folders (plugin folders, folders of them, marketplaces) */
  readonly roots: string[]
  /** folders an installer added (`add`): folder → source */
  readonly #added = new Map<string, string>()
  /** what each running plugin published (its info, commands, agents), by plugin name */
  readonly #states = new Map<string, FolderState>()
  /** each running plugin's child instance, and the fingerprint it runs */
  readonly #running = new Map<string, { spec: string; dir: string; child: ChildHandle }>()
  readonly #except: ReadonlySet<string>
  readonly hooks = defineHooks('claude-plugins', { change: new SyncHook<[]>([]) })

  constructor(
    private readonly ctx: InjectedContext<['project']>,
    private readonly cfg: ClaudePluginsConfig,
  ) {
    this.roots = [...new Set(cfg.dirs.map((d) => this.#expand(d)))]
    this.#except = new Set(cfg.except)
  }

  #expand(dir: string): string {
    return expandDir(this.ctx.project.dir, dir)
  }

  /** The first reading, then the watch of the roots and of Claude Code's installs. */
  start(): void {
    this.sync()
    if (this.cfg.watch && this.roots.length) this.#watchDirs(this.roots)
    if (this.cfg.watch && this.cfg.claudeCode)
      this.ctx.watch(
        join(this.#expand(this.cfg.claudeHome), 'plugins', 'installed_plugins.json'),
        () => this.sync(),
      )
  }

  #watchDirs(dirs: string[]) {
    return this.ctx.watch(dirs, () => this.sync(), {
      // skills watch their own roots and folders their prompts: only manifests, hooks and servers restart a plugin
      ignored: (path) =>
        dirs.some((d) => path.startsWith(d + sep) && SKIPPED.test(path.slice(d.length))),
    })
  }

  /** Every plugin folder found now: the roots', the added ones, and Claude Code's installs. */
  #found(): Found[] {
    const warn = (message: string) => this.ctx.logger.warn(message)
    const installs = this.cfg.claudeCode
      ? claudeCodeInstalls(this.#expand(this.cfg.claudeHome), this.ctx.project.dir, warn).map(
          (i) => ({ dir: i.dir, source: `Claude Code (${i.id})` }),
        )
      : []
    return [
      ...this.roots.flatMap((root) => discover(root, 'config', warn)),
      ...[...this.#added].map(([dir, source]) => ({ dir, source })),
      ...installs,
    ]
  }

  /** Starts, restarts and stops children to match what the folders hold now. */
  sync(): void {
    const { next, warnings } = choose(this.#found(), readManifest, fingerprint, this.#except)
    for (const warning of warnings) this.ctx.logger.warn(warning)
    const { stop, start } = restarts(this.#running, next)
    for (const name of stop) {
      const run = this.#running.get(name)!
      this.#running.delete(name)
      void run.child()
    }
    for (const name of start) {
      if (this.ctx.signal.aborted) break
      this.#startPlugin(name, next.get(name)!)
    }
  }

  #startPlugin(name: string, { spec, dir, source }: Chosen): void {
    const manifest = readManifest(dir)
    for (const problem of manifest.problems) this.ctx.logger.warn(`plugin ${name}: ${problem}`)
    const settings = {
      dir,
      source,
      manifest,
      projectDir: this.ctx.project.dir,
      dataRoot: this.#expand(this.cfg.dataDir),
      watch: this.cfg.watch,
      publish: (state: FolderState | undefined) => this.#publish(name, state),
    }
    try {
      const child = this.ctx.plugin(pluginFolder, settings, { key: `plugin-${name}` })
      this.#running.set(name, { spec, dir, child })
    } catch (err) {
      this.ctx.logger.error(`plugin ${name} (${dir}) was not loaded`, err)
    }
  }

  /** A plugin's child set (or, going, cleared) what it brought. */
  #publish(name: string, state: FolderState | undefined): void {
    if (state) this.#states.set(name, state)
    else this.#states.delete(name)
    this.hooks.change.call()
  }

  #all(): FolderState[] {
    return [...this.#states.values()].sort((a, b) => a.info.name.localeCompare(b.info.name))
  }

  /** One more plugin folder (an installer's), watched when the instance watches; the disposer unloads it. */
  add(dir: string, options: { source?: string } = {}): () => void {
    const full = resolve(this.ctx.project.dir, dir)
    this.#added.set(full, options.source ?? 'added')
    const unwatch = this.cfg.watch ? this.#watchDirs([full]) : undefined
    this.sync()
    return () => {
      unwatch?.()
      if (this.#added.delete(full)) this.sync()
    }
  }

  /** The `claudePlugins` service. */
  service(): ClaudePluginsApi {
    const api: ClaudePluginsApi = {
      hooks: this.hooks,
      list: () => this.#all().map((s) => s.info),
      commands: () => this.#all().flatMap((s) => s.commands),
      command: (name) => byName(api.commands(), name),
      agents: () => this.#all().flatMap((s) => s.agents),
      agent: (name) => byName(api.agents(), name),
      add: (dir, options) => this.add(dir, options),
    }
    return api
  }
}
