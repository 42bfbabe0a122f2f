/**
 * @module roots
 * Where yoke's own files are, whether it runs from its TypeScript source or from its build. Kept
 * free of dependencies: `yoke --help` reads it.
 */
import { readdirSync, statSync } from 'node:fs'
import { basename, dirname, join, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

/** Where yoke's code is: the package root when it runs from source, its `dist/` when built. */
export const CODE_ROOT = fileURLToPath(new URL('../', import.meta.url))
/** The package root: package.json, presets/ (the built code is in its dist/). */
export const YOKE_ROOT = basename(CODE_ROOT) === 'dist' ? dirname(CODE_ROOT) + sep : CODE_ROOT
export const BUILTIN_PRESETS = join(YOKE_ROOT, 'presets')
export const BUILTIN_PLUGINS = join(CODE_ROOT, 'plugins')
/** Running from TypeScript source (tsx is loaded already), not from the build. */
export const FROM_SOURCE = import.meta.url.endsWith('.ts')
const EXTENSION = FROM_SOURCE ? '.ts' : '.js'
/** A built-in plugin's entry file name: the source's, or the build's. */
export const BUILTIN_ENTRY = `index${EXTENSION}`

/** yoke's own modules, as the loader hooks (config/loader-hooks.mjs) tell them from a plugin's. */
export const YOKE_MODULES = {
  /** URL prefixes of modules every plugin shares one copy of */
  shared: [pathToFileURL(join(CODE_ROOT, 'src')).href + '/'],
  /** where `yoke/…` resolves from */
  host: pathToFileURL(join(YOKE_ROOT, 'package.json')).href,
  /** the entry points plugins import */
  entries: {
    yoke: pathToFileURL(join(CODE_ROOT, 'src', `index${EXTENSION}`)).href,
    'yoke/cli': pathToFileURL(join(CODE_ROOT, 'src', 'cli', `api${EXTENSION}`)).href,
  },
}

export function builtinNames(): string[] {
  const isEntry = (name: string) =>
    statSync(join(BUILTIN_PLUGINS, name, BUILTIN_ENTRY), { throwIfNoEntry: false })?.isFile()
  return readdirSync(BUILTIN_PLUGINS, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && isEntry(entry.name))
    .map((entry) => entry.name)
    .sort()
}
