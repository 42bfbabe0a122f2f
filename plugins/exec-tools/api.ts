/**
 * The public face of exec-tools: the `execTools` service (the packages and why each did or did not
 * load) and `loadPackage` (what `yoke plugins check` reads). The process rules and runner it uses
 * are the process library's (plugins/process/api.ts).
 */
import type { Disposer, SyncHook } from 'yoke'
import type { ManifestProblem } from './manifest.ts'

export type { Manifest, ManifestProblem } from './manifest.ts'
export { loadPackage, promptFiles, type Package, type PackageFailure } from './load.ts'

export interface PackageInfo {
  id: string
  dir: string
  /** the `source` of the added root it comes from (`addRoot`); none for a configured directory */
  source?: string
  /** loaded: its tools are registered; failed: see errors; shadowed: a package with the same id in a higher directory won; filtered: the skill filter leaves it out; held: `hold` unloaded it (see why) */
  state: 'loaded' | 'failed' | 'shadowed' | 'filtered' | 'held'
  /** held: the reasons of the holds on it, oldest first, joined by `; ` */
  why?: string
  version?: string
  tools: string[]
  executable?: string
  sha256?: string
  /** sha256 (hex) over what the package runs: the manifest's text, the executable's sha256, its prompt files and SKILL.md; none unless loaded or held */
  fingerprint?: string
  signed: boolean
  extras: { prompts: number; mcpServers: number; hooks: number }
  errors: ManifestProblem[]
  warnings: ManifestProblem[]
}

export interface ExecToolsApi {
  /** the package directories, highest priority first: the configured ones, then the added ones */
  readonly roots: string[]
  /** `change(ids)`: the entries of these packages in list() changed (state, identity, why, one came or went) */
  readonly hooks: { readonly change: SyncHook<[ids: string[]]> }
  list(): PackageInfo[]
  /**
   * One more package directory, at the lowest priority: a folder of package folders, or a single
   * package folder (one with manifest.json). It is watched like the configured ones, and its
   * packages load and unload as theirs do; `source` is shown with its packages (`yoke plugins
   * list`). The disposer removes it and unloads its packages. Called through an instance's
   * `ctx.execTools`, the root is also one of that instance's effects: it goes when the instance does.
   * @example const remove = ctx.execTools.addRoot(join(ctx.project.home, 'installed'), { source: 'yoke add' })
   */
  addRoot(dir: string, options?: { source?: string }): () => void
  /**
   * Resolves once the loads asked for so far (an `addRoot`, a change seen by the watch) are done
   * and the packages they load have started: what an installer awaits so that a one-shot command
   * sees the packages it added.
   * @example ctx.execTools.addRoot(dir); await ctx.execTools.settled()
   */
  settled(): Promise<void>
  /**
   * Unloads the loaded package `packageId` as if it were removed (its tools, hooks, prompt
   * sections and MCP servers go; the servers' processes end) until the disposer is called; list()
   * keeps its entry, `held`, with its identity and `why`. Holds are counted: it loads again (read
   * afresh) when the last one is released, and the disposer of that one resolves once it has.
   * Edits while held keep it held (list() shows the new version and fingerprint). Undefined: no
   * package by that id is loaded or held. Called through an instance's `ctx.execTools`, the hold
   * is one of that instance's effects; the holds go with this exec-tools instance when it reloads.
   * @example const release = ctx.execTools.hold('deploy', 'withdrawn: deploy@1.2.0')
   */
  hold(packageId: string, why: string): Disposer | undefined
}

declare module 'yoke' {
  interface Services {
    execTools: ExecToolsApi
  }
}
