/**
 * The public face of exec-tools: the `execTools` service (the packages and why each did or did not
 * load), `loadPackage` (what `yoke plugins check` reads), the environment rules every plugin
 * process gets (an allowlist: the essentials and the listed names; blocked variables never,
 * secret-looking ones only when listed), the executable format check (a program this machine
 * runs), and the process runner (a program in a process group of its own, bounded output, the
 * whole group ended).
 */
import type { ManifestProblem } from './manifest.ts'

export {
  BLOCKED_ENV,
  envNameProblem,
  HIJACK_ENV,
  isBlockedEnv,
  isEssential,
  isHijackEnv,
  isSecretName,
  isSecretValue,
  toolEnv,
  type ToolEnvOptions,
} from './env.ts'
export { executableFormat, formatOf, THIS_HOST, type Format, type Host } from './format.ts'
export { runExecutable, runProcess, type ProcessSpec, type Ran, type RunSpec } from './run.ts'
export type { Manifest, ManifestProblem } from './manifest.ts'
export { HOOK_EVENT_NAMES } from './manifest.ts'
export { loadPackage, promptFiles, type Package, type PackageFailure } from './load.ts'

export interface PackageInfo {
  id: string
  dir: string
  /** the `source` of the added root it comes from (`addRoot`); none for a configured directory */
  source?: string
  /** loaded: its tools are registered; failed: see errors; shadowed: a package with the same id in a higher directory won; filtered: the skill filter leaves it out */
  state: 'loaded' | 'failed' | 'shadowed' | 'filtered'
  version?: string
  tools: string[]
  executable?: string
  sha256?: string
  /** sha256 (hex) over what the package runs: the manifest's text, the executable's sha256, its prompt files and SKILL.md; none unless loaded */
  fingerprint?: string
  signed: boolean
  extras: { prompts: number; mcpServers: number; hooks: number }
  errors: ManifestProblem[]
  warnings: ManifestProblem[]
}

export interface ExecToolsApi {
  /** the package directories, highest priority first: the configured ones, then the added ones */
  readonly roots: string[]
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
}

declare module 'yoke' {
  interface Services {
    execTools: ExecToolsApi
  }
}
