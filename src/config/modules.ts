/**
 * @module config/modules
 * Resolves `use:` (built-in name, ./path relative to the file that says it, npm package) and
 * imports plugin modules. A local module is versioned by the content of its local import graph;
 * a new version is imported under a fresh `?yoke-gen=N` (see loader-hooks.mjs), so edited code
 * runs without a restart while the old module object stays intact for rollback.
 */
import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { register } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { MessageChannel } from 'node:worker_threads'
import { messageOf, YokeError } from '../errors.ts'
import { faultContext } from '../kernel/faults.ts'
import { toPlugin, type Plugin } from '../kernel/plugin.ts'
import {
  BUILTIN_ENTRY,
  BUILTIN_PLUGINS,
  builtinNames,
  FROM_SOURCE,
  YOKE_MODULES,
} from '../roots.ts'
import { didYouMean } from '../suggest.ts'
import { loadTypeScript } from './typescript.ts'

export interface ResolvedUse {
  kind: 'builtin' | 'local' | 'package'
  /** the module's file; for a package, its name (Node resolves it at import) */
  file: string
  /** for a package: the directory it is resolved from */
  from?: string
}

export interface LoadedModule {
  plugin: Plugin
  file: string
  /** changes whenever the code (the module or a local file it imports) changes */
  version: string
  /** local files the module imports (watched for changes) */
  deps: string[]
}

const LOCAL = /^(\.{1,2}[\\/]|[\\/]|file:|[A-Za-z]:[\\/])/
/** a module tsx loads: Node alone cannot */
const TYPESCRIPT = /\.[cm]?tsx?$/i
/** what importing a JavaScript module that imports TypeScript fails with, without tsx */
const TYPESCRIPT_NEEDED = [
  'ERR_UNKNOWN_FILE_EXTENSION',
  'ERR_MODULE_NOT_FOUND',
  'ERR_UNSUPPORTED_DIR_IMPORT',
]

/** `uses` names built-ins only: a plugin composes another's code by name, never by path. */
function builtinUse(name: string): ResolvedUse {
  const file = join(BUILTIN_PLUGINS, name, BUILTIN_ENTRY)
  if (/^[a-z0-9-]+$/.test(name) && isFile(file)) return { kind: 'builtin', file }
  throw new YokeError('PLUGIN_NOT_FOUND', {
    use: name,
    reason: 'a plugin declares it in `uses`, and `uses` names built-in plugins only',
    builtins: builtinNames().join(', '),
  })
}

export function resolveUse(use: string, baseDir: string, projectDir: string): ResolvedUse {
  const fail = (reason: string) =>
    new YokeError('PLUGIN_NOT_FOUND', {
      use,
      reason,
      builtins: builtinNames().join(', ') || 'none yet',
    })
  if (LOCAL.test(use)) {
    const path = use.startsWith('file:') ? fileURLToPath(use) : resolve(baseDir, use)
    const file = ['', '.ts', '.mts', '.js', '.mjs', '/index.ts', '/index.js', '/index.mjs']
      .map((ext) => path + ext)
      .find(isFile)
    if (!file) throw fail(`no file at ${path}`)
    return { kind: 'local', file }
  }
  const builtin = join(BUILTIN_PLUGINS, use, BUILTIN_ENTRY)
  if (/^[a-z0-9-]+$/.test(use) && isFile(builtin)) return { kind: 'builtin', file: builtin }
  // a `.` or `..` segment would walk out of the package (into the project's own files)
  if (!/^(@[\w.-]+\/)?[\w.-]+(\/[\w./-]*)?$/.test(use) || /(^|\/)\.\.?(\/|$)/.test(use))
    throw fail('it is neither a path, a built-in name nor an npm package name')
  return { kind: 'package', file: use, from: projectDir }
}

export class ModuleLoader {
  constructor(private readonly importTimeoutMs = 30_000) {}

  #cache = new Map<string, LoadedModule>()
  /** the built-in plugins loaded so far, by name: what `uses` + ctx.plugin('<name>') composes */
  #builtins = new Map<string, Plugin>()
  /** importer URL → the local URLs it imports, for the current pass (reported by loader-hooks.mjs) */
  #imports = new Map<string, Set<string>>()
  /** one per registration of the loader hooks: resolves once its edges so far are delivered */
  #drains: Array<() => Promise<void>> = []
  #pass = 1
  #hooked?: Promise<void>
  /** tsx is loaded (from source, it was at start) */
  #typescript = FROM_SOURCE

  /**
   * Starts a new load pass: local modules imported in one pass share one copy of the local files
   * they import. (Across passes they do not: a plugin that was not re-imported keeps its copies,
   * so state shared between plugins belongs in a service, not in a helper module.)
   */
  newPass(): void {
    this.#pass++
    this.#imports.clear()
  }

  async load(target: ResolvedUse): Promise<LoadedModule> {
    const cached = this.#cache.get(target.file)
    if (
      cached &&
      (target.kind !== 'local' || versionOf(target.file, cached.deps) === cached.version)
    )
      return cached
    let gen = target.kind === 'local' ? this.#pass : 0
    // tsx for TypeScript only: a package's entry is known once Node resolves it, so it gets tsx
    if (target.kind !== 'builtin')
      await this.#hook(target.kind === 'package' || TYPESCRIPT.test(target.file))
    // a package is resolved by Node itself, from the project (see loader-hooks.mjs)
    const urlOf = (gen: number) =>
      target.from
        ? `yoke-from:${encodeURIComponent(JSON.stringify([target.from, target.file]))}`
        : pathToFileURL(target.file).href + (gen ? `?yoke-gen=${gen}` : '')
    let url = urlOf(gen)
    const size = target.kind === 'local' ? statSync(target.file).size : 0
    if (size > MAX_MODULE_BYTES)
      throw new YokeError('PLUGIN_IMPORT_FAILED', {
        file: target.file,
        reason: `it is ${size} bytes; a plugin module may be at most ${MAX_MODULE_BYTES} (code, not data)`,
      })
    let namespace: Record<string, unknown>
    const typescript = this.#typescript
    try {
      try {
        namespace = await this.#import(url, target.file)
      } catch (err) {
        // a JavaScript plugin that imports TypeScript (or a path without its extension, which tsx
        // resolves): tsx now, and the import again under a new generation (Node keeps the failure)
        if (typescript || !gen || !(await this.#wantsTypeScript(url, err))) throw err
        await this.#hook(true)
        url = urlOf((gen = ++this.#pass))
        namespace = await this.#import(url, target.file)
      }
    } catch (err) {
      if (err instanceof YokeError && err.code === 'PLUGIN_TIMEOUT') throw err
      const code = (err as NodeJS.ErrnoException)?.code
      if (
        target.from &&
        (code === 'ERR_MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED')
      ) {
        throw new YokeError('PLUGIN_NOT_FOUND', {
          use: target.file,
          reason: `no npm package "${target.file}" is installed for ${target.from}${didYouMean(target.file, builtinNames(), (g) => `the built-in "${g}"`)} (${(err as Error).message.split('\n')[0]})`,
          builtins: builtinNames().join(', '),
        })
      }
      throw new YokeError(
        'PLUGIN_IMPORT_FAILED',
        { file: target.file, reason: messageOf(err) },
        { cause: err },
      )
    }
    if (gen) await this.#drain() // every import edge of this module has been reported
    const deps = gen ? this.#localGraph(url) : []
    const plugin = toPlugin(namespace.default ?? namespace.plugin ?? namespace)
    if (typeof plugin === 'string')
      throw new YokeError('PLUGIN_INVALID', { file: target.file, reason: plugin })
    const loaded = {
      plugin,
      file: target.file,
      deps,
      version: target.kind === 'local' ? versionOf(target.file, deps) : target.kind,
    }
    this.#cache.set(target.file, loaded)
    if (target.kind === 'builtin') this.#builtins.set(plugin.name, plugin)
    for (const name of plugin.uses) if (!this.#builtins.has(name)) await this.load(builtinUse(name))
    return loaded
  }

  /** A built-in plugin loaded already (some loaded plugin declared it in `uses`, or the config uses it). */
  builtin(name: string): Plugin | undefined {
    return this.#builtins.get(name)
  }

  /** Whether the failed import of `url` is one tsx would load: it reached a TypeScript file, or a path that is not there as written. */
  async #wantsTypeScript(url: string, err: unknown): Promise<boolean> {
    const code = (err as NodeJS.ErrnoException)?.code ?? ''
    if (TYPESCRIPT_NEEDED.includes(code)) return true
    await this.#drain() // every import edge of the module has been reported
    return this.#localGraph(url).some((file) => TYPESCRIPT.test(file))
  }

  /** Named for the fault guard (process.exit at import throws), and bounded: a top-level await that never settles fails this module instead of hanging every load and reload. */
  #import(url: string, file: string): Promise<Record<string, unknown>> {
    return faultContext.run({ module: file }, () =>
      withTimeout(import(url), this.importTimeoutMs, `the import of ${file}`),
    )
  }

  /**
   * The loader hooks, with tsx beneath them once `typescript` asks for it (each once; every
   * concurrent load waits). tsx costs ~9 MB (its code in both threads), so a config of
   * JavaScript plugins goes without. Registered after yoke's hooks, tsx would see each import
   * first (a tsconfig's `paths` could send `yoke` elsewhere): yoke's hooks then go on top again.
   */
  #hook(typescript: boolean): Promise<void> {
    if (this.#hooked && (this.#typescript || !typescript)) return this.#hooked
    this.#typescript ||= typescript
    return (this.#hooked = (this.#hooked ?? Promise.resolve()).then(async () => {
      if (typescript) await loadTypeScript()
      this.#registerHooks()
    }))
  }

  #registerHooks() {
    const { port1, port2 } = new MessageChannel()
    const pongs: Array<() => void> = []
    port1.on('message', (message: { parent: string; url: string } | 'pong') => {
      if (message === 'pong') {
        if (pongs.length === 1) port1.unref()
        return pongs.shift()?.()
      }
      this.#imports.set(
        message.parent,
        (this.#imports.get(message.parent) ?? new Set()).add(message.url),
      )
    })
    port1.unref()
    // each registration gets a module instance of its own (a port of its own)
    const hooks = new URL(`./loader-hooks.mjs?n=${this.#drains.length}`, import.meta.url)
    this.#drains.push(
      () =>
        new Promise((resolve) => {
          port1.ref() // keep the process alive for the answer
          pongs.push(resolve)
          port1.postMessage('ping')
        }),
    )
    register(hooks, { data: { port: port2, ...YOKE_MODULES }, transferList: [port2] })
  }

  /** Resolves once the loader thread has delivered every message it sent before now. */
  async #drain(): Promise<void> {
    await Promise.all(this.#drains.map((drain) => drain()))
  }

  /** The local files `entry` imports, directly or not. */
  #localGraph(entry: string): string[] {
    const seen = new Set<string>()
    const visit = (url: string) => {
      for (const child of this.#imports.get(url) ?? []) {
        if (seen.has(child)) continue
        seen.add(child)
        visit(child)
      }
    }
    visit(entry)
    return [...seen].map((u) => fileURLToPath(u.replace(/\?.*$/, '')))
  }
}

/** A plugin module (and each local file it imports) may be this large: code, not data. */
const MAX_MODULE_BYTES = 8 * 1024 * 1024

function versionOf(file: string, deps: string[]): string {
  const hash = createHash('sha256')
  for (const f of [file, ...deps].sort()) {
    hash.update(f + '\0')
    try {
      // checked first: a FIFO would block this read (and every reload) forever, a huge file the
      // event loop; such a module is refused at import (below), so its size stands in for it here
      const stat = statSync(f)
      if (!stat.isFile()) hash.update('not a file')
      else if (stat.size > MAX_MODULE_BYTES) hash.update(`too large ${stat.size} ${stat.mtimeMs}`)
      else hash.update(readFileSync(f))
    } catch {
      hash.update('missing')
    }
  }
  return hash.digest('hex').slice(0, 16)
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new YokeError('PLUGIN_TIMEOUT', { what, ms })), ms)
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/** The directory a `use:` path is relative to: the file that set it (a --set: the project). */
export function baseOf(file: string | undefined, projectDir: string) {
  return file && !file.startsWith('--set') ? dirname(file) : projectDir
}
