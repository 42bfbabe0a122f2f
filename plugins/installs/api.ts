/**
 * The public face of the installs plugin: what `yoke.lock` records for each install, the
 * `installs` service (every install the lock names, verified, and whether it is registered), its
 * controls and its config.
 */
import { z } from 'zod'
import type { SummarySection } from 'yoke'

/** The plugin's config. */
export const config = z
  .object({
    /** also load the installs of $YOKE_HOME/yoke.lock (`yoke add --user`) */
    user: z.boolean().default(true),
    watch: z.boolean().default(true),
  })
  .strict()

/**
 * What an install is, which says which service takes it: a skill or a folder of skills (the
 * `skills` service), a plugin executable package (`execTools`), a Claude Code plugin
 * (`claudePlugins`).
 */
export type InstallKind = 'skill' | 'skills' | 'exec-package' | 'claude-plugin'

/** Where an install came from, as given and as it resolved when it was fetched. */
export interface InstallSource {
  /** the SOURCE argument of `yoke add`, as typed (a relative path made absolute) */
  given: string
  /** how it was fetched (`server-json`: a file or URL; `registry`: an MCP Registry's entry) */
  type: 'folder' | 'git' | 'tarball' | 'npm' | 'server-json' | 'registry'
  /** the folder, the repository, the URL or the package that was read */
  location: string
  /** git: the ref asked for (`#ref`) and the commit it resolved to */
  ref?: string
  commit?: string
  /** a path inside the fetched tree (git-subdir, `.agents/skills`, a marketplace entry's folder) */
  subdir?: string
  /** a marketplace entry: the marketplace and the entry's name */
  marketplace?: string
  entry?: string
  /** a prebuilt executable (octos `binaries`): the platform key and its URL */
  binary?: { platform: string; url: string; sha256?: string }
}

/** One entry of `yoke.lock`: keys in this order, the file is meant to be committed. */
export interface LockEntry {
  name: string
  kind: InstallKind
  version?: string
  source: InstallSource
  /** the installed tree's hash: see tree.ts (sorted paths, executable bits, contents) */
  sha256: string
  installedAt: string
}

/** A marketplace `yoke marketplace add` recorded. */
export interface MarketplaceRecord {
  name: string
  /** a folder, a marketplace.json file or an http(s) URL */
  source: string
  addedAt: string
}

export interface LockFile {
  lockfileVersion: 1
  installs: Record<string, LockEntry>
  marketplaces: Record<string, MarketplaceRecord>
}

/** An install as the plugin found it at load. */
export interface InstallState {
  entry: LockEntry
  scope: 'project' | 'user'
  /** the installed tree (`.yoke/installed/NAME`) */
  dir: string
  /**
   * registered: its service has it; tampered / missing: refused; skipped: its service is absent;
   * shadowed: a project install of the same name wins; waiting: a project install that runs code,
   * in a project that is not trusted (`yoke trust`)
   */
  state: 'registered' | 'tampered' | 'missing' | 'skipped' | 'shadowed' | 'waiting'
  /** why it is not registered */
  why?: string
}

export interface InstallsApi {
  /** the lock files read, project first */
  readonly locks: string[]
  list(): InstallState[]
}

declare module 'yoke' {
  interface Services {
    installs: InstallsApi
  }
  interface Controls {
    /** every install with its state, and the locks read: asked of a running `yoke dev` */
    'installs/list': {
      request: Record<string, never>
      answer: { locks: string[]; installs: InstallState[] }
    }
    /** its section of the dev screen and `yoke doctor` (title 'installs'), none without installs */
    'installs/summary': {
      request: Record<string, never>
      answer: (SummarySection & { title: string }) | undefined
    }
  }
}
