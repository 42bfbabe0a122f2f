/**
 * @module errors
 * The one error catalogue, open to plugins. Every error yoke raises or reports has a stable code,
 * a message template (`{name}` placeholders) and a hint that says what to do. The kernel's codes are
 * below; a plugin declares its own beside its code with `defineErrors`, and they join the same
 * table. README's error table lists every code; test/errors.test.ts keeps the two in step.
 */

/** Shared by every copy of yoke in a process (Symbol.for): the brand and the catalogue's table. */
const BRAND = Symbol.for('yoke.error')
const CATALOGUE = Symbol.for('yoke.error-catalogue')

export interface ErrorSpec {
  readonly message: string
  readonly hint: string
}

/** The kernel's own codes. */
export const catalogue = {
  USAGE: {
    message: '{reason}',
    hint: 'Run `yoke --help` (or `yoke <command> --help`) for the commands and flags.',
  },
  CONFIG_NOT_FOUND: {
    message: '{kind} not found: {name}',
    hint: 'Check the spelling and the path; relative paths resolve from the file that names them.',
  },
  CONFIG_READ_FAILED: {
    message: 'cannot read {file}: {reason}',
    hint: 'Check that the file exists, is readable and is a regular file (not a FIFO, a device or a directory).',
  },
  CONFIG_TOO_LARGE: {
    message: '{file} is {size} bytes; a config file may be at most {limit} bytes',
    hint: 'Config files hold choices, not data: move large content into a file that a plugin reads.',
  },
  CONFIG_NOT_TEXT: {
    message: '{file} is not UTF-8 text ({reason})',
    hint: 'Point the layer at a YAML or JSON file; check that an editor or tool did not corrupt it.',
  },
  CONFIG_SYNTAX: {
    message: 'YAML syntax error: {reason}',
    hint: 'Fix the YAML at the position shown (indentation and unclosed quotes are the usual causes).',
  },
  CONFIG_DUPLICATE_KEY: {
    message: 'duplicate key {key}',
    hint: 'A mapping may name a key once; merge the two entries or remove one.',
  },
  CONFIG_ALIAS_LIMIT: {
    message: 'YAML aliases expand too far ({reason})',
    hint: 'Aliases (*name) may expand at most 100 times; write the values out instead of nesting aliases.',
  },
  CONFIG_TOO_DEEP: {
    message: 'nesting is deeper than {limit} levels',
    hint: 'Flatten the structure; presets never need deep nesting.',
  },
  CONFIG_SHAPE: {
    message: '{reason}',
    hint: 'A layer has the keys extends, preset, runtime and plugins (and x-… keys for YAML anchors); each instance has use, config and enabled.',
  },
  CONFIG_ENV_MISSING: {
    message: 'environment variable {name} is not set',
    hint: 'Set {name}, or give a default with ${{name}:-default}.',
  },
  CONFIG_EXTENDS_CYCLE: {
    message: 'extends cycle: {chain}',
    hint: 'Remove one of the extends entries so the chain ends.',
  },
  CONFIG_SET_INVALID: {
    message: 'bad --set "{arg}": {reason}',
    hint: 'Write --set plugins.<instance>.config.<key>=<YAML value>, e.g. --set plugins.agent.enabled=true.',
  },
  CONFIG_NOT_WRITABLE: {
    message: '{file} was not edited: {reason}',
    hint: 'yoke leaves a file it may not write as it is: make it writable (chmod u+w) if it should change, or add the entry by hand.',
  },
  CONFIG_EDIT_UNSAFE: {
    message: 'cannot edit {file} safely: {reason}',
    hint: 'yoke edits a config only when nothing but the entry changes: make the entry plain YAML (no anchor it shares, no alias, one document), or add the entry by hand.',
  },
  EDIT_CONFLICT: {
    message: '{file} changed while yoke was editing it; nothing was written',
    hint: 'Another program (an editor, another yoke command) wrote it at the same time: look at the file, then run the command again.',
  },
  EDIT_LOCKED: {
    message: '{file} stayed locked by another process for {ms} ms',
    hint: 'Another yoke command is editing it: run again when it is done. If none is running, remove the lock directory {lock}.',
  },
  EDIT_WRITE_FAILED: {
    message: 'writing {file} failed: {reason}; the file is as it was',
    hint: 'Check the disk space and the permissions of its directory (the new text is written beside it, then renamed over it).',
  },
  CONFIG_INVALID: {
    message: 'invalid config for instance "{instance}" (plugin {plugin}): {reason}',
    hint: "Compare the value with the plugin's README; the position shows the layer that set it.",
  },
  PLUGIN_NOT_FOUND: {
    message: 'cannot resolve plugin "{use}": {reason}',
    hint: 'use: takes a built-in name ({builtins}), a ./path relative to the file, or an installed npm package.',
  },
  PLUGIN_IMPORT_FAILED: {
    message: 'importing {file} failed: {reason}',
    hint: 'Fix the module (the running version, if any, keeps working until the new one loads).',
  },
  PLUGIN_INVALID: {
    message: '{file} does not export a plugin: {reason}',
    hint: 'Export default definePlugin({ name, apply }) or a function with a name.',
  },
  PLUGIN_APPLY_FAILED: {
    message: 'instance "{instance}" (plugin {plugin}) failed to apply: {reason}',
    hint: 'The error and its cause say why; the other instances keep running.',
  },
  PLUGIN_FAULT: {
    message: 'instance "{instance}" (plugin {plugin}) failed after it started: {reason}',
    hint: 'Something the plugin started (a timer, a callback, a promise nobody awaited) threw; the other instances keep running. Fix the plugin, then save it to reload.',
  },
  PLUGIN_TIMEOUT: {
    message: '{what} did not finish within {ms} ms',
    hint: 'A module whose top-level code never settles, or an apply that waits forever (on a network, a lock): fix it, or raise the limit (importTimeoutMs / applyTimeoutMs in the compose options).',
  },
  PLUGIN_WAITING: {
    message: 'instance "{instance}" is waiting: {reason}',
    hint: 'It stays pending until what it waits for is there; {what}.',
  },
  RELOAD_ROLLED_BACK: {
    message:
      'instance "{instance}" could not restart with its new version ({reason}); the previous version was restored',
    hint: 'Fix the change; the previous version keeps running until the new one applies.',
  },
  SERVICE_CONFLICT: {
    message: 'service "{name}" is already provided by {owner}',
    hint: 'Two instances provide the same service: disable one of them (enabled: false) or rename one.',
  },
  SERVICE_UNAVAILABLE: {
    message: 'service "{name}" is not available to {who}',
    hint: "List the service in the plugin's inject array so the instance waits for it, or use ctx.get() for an optional read.",
  },
  HOOK_FAILED: {
    message: 'tap "{tap}" on hook {hook} threw: {reason}',
    hint: 'The tap belongs to the named plugin instance; its error is the cause.',
  },
  DISPOSE_FAILED: {
    message: '{count} of the disposers of {what} threw',
    hint: 'Every other disposer still ran; the causes are listed in the AggregateError.',
  },
  EFFECT_AFTER_DISPOSE: {
    message:
      '{what} was registered on instance "{instance}" after it was disposed; it was disposed at once',
    hint: 'A plugin kept working after its instance ended: stop timers and callbacks in its disposer.',
  },
  TOOL_INVALID: {
    message: 'cannot register tool "{name}" (instance {owner}): {reason}',
    hint: 'Tool names are 1-64 of A-Z a-z 0-9 _ -; input schemas are JSON objects of type "object", at most 10 levels deep and 64 KiB, whose patterns run on RE2 (no lookarounds or backreferences).',
  },
  TOOL_DUPLICATE: {
    message: 'tool "{name}" is already registered in scope {scope}: {reason}',
    hint: 'Two instances register the same tool name in one layer: rename one, or register it in a scope of its own.',
  },
  UNKNOWN_TOOL: {
    message: 'no tool named "{name}" is visible from scope {scope}',
    hint: 'List the tools with `yoke tools list`; names are exact, and a scope may mask global tools.',
  },
  SCOPE_UNKNOWN: {
    message: 'no scope named {scope} exists (the call to "{name}" was not run)',
    hint: 'Leave scope out for the global layer, or call in a scope that exists: a scope is made with runtime.scope(key) and ends with its session or agent run.',
  },
  INVALID_ARGS: {
    message: 'the arguments for {name} do not match its input schema: {reason}',
    hint: "Call it again with arguments that match the tool's inputSchema.",
  },
  DENIED: {
    message: 'the call to {name} was denied: {reason}',
    hint: 'To allow it: {how} (tool "{name}").',
  },
  BLOCKED: {
    message: 'the result of {name} was blocked: {reason}',
    hint: 'A post-execute hook refused the result; its reason says why.',
  },
  TIMEOUT: {
    message: '{name} did not finish within {ms} ms',
    hint: "Raise the tool's timeoutMs or runtime.timeoutMs in the config, or make the tool faster.",
  },
  ABORTED: {
    message: 'the call to {name} was cancelled',
    hint: 'The caller aborted it; call again if it is still wanted.',
  },
  UNLOADED: {
    message: '{name} was unloaded while the call ran',
    hint: 'Its plugin was reloaded or removed; call it again once it is back.',
  },
  EXEC_FAILED: {
    message: '{name} failed: {reason}',
    hint: "The tool's own error is the cause; check its arguments and its plugin's log.",
  },
  TOOL_ERROR: {
    message: '{name} reported an error',
    hint: "The tool's output says what went wrong.",
  },
  SERVER_UNAVAILABLE: {
    message: 'MCP server "{server}" is unavailable, {state}',
    hint: "Try again in a few seconds or use another tool; `yoke mcp list` shows the server's state and last error.",
  },
  INTEGRITY_FAILED: {
    message: '{name} was refused: {reason}',
    hint: 'The executable is not the one that was verified: reinstall the package, or update manifest.json sha256 if you changed it on purpose.',
  },

  CONTROL_CONFLICT: {
    message: 'the control "{name}" is already answered by {owner}',
    hint: 'Two instances answer the same control name: give one of them another name, or remove one.',
  },
  CONTROL_NAME: {
    message: 'the control "{name}" of {owner} is not named <plugin>/<verb>',
    hint: 'Name a control after its plugin: "{plugin}/<verb>", the verb in lowercase letters, digits and -, and declare it in `Controls` beside `Services`.',
  },
  SECTION_UNKNOWN: {
    message: 'no plugin contributes an inspect section "{title}" (sections: {known})',
    hint: 'A section comes from a plugin in the config that answers `<plugin>/inspect`: check the title, or add the plugin.',
  },
  CONTROL_FAILED: {
    message: 'the control "{name}" of {owner} failed: {reason}',
    hint: 'The plugin that answers it threw; its message says why. The running dev keeps running.',
  },
  CONTROL_UNKNOWN: {
    message: 'nothing answers the control "{name}" (answered: {known})',
    hint: 'The plugin that answers it is not in the preset or not active; `yoke inspect` says why.',
  },
} as const satisfies Record<string, ErrorSpec>

type KernelCodes = typeof catalogue

/**
 * Every code: the kernel's and those plugins declare, by declaration merging.
 * @example
 * // plugins/weather/errors.ts
 * export const errors = defineErrors('weather', {
 *   WEATHER_STATION_DOWN: { message: 'station {id} does not answer', hint: 'Try another station.' },
 * })
 * type Codes = typeof errors
 * declare module 'yoke' { interface ErrorCodes extends Codes {} }
 */
export interface ErrorCodes extends KernelCodes {}

export type ErrorCode = keyof ErrorCodes & string

export interface CatalogueEntry extends ErrorSpec {
  code: string
  /** `yoke` for the kernel's codes, else the plugin that declared it */
  owner: string
}

/**
 * One table per process, whatever copy of yoke declares into it (the source and the build side by
 * side, a plugin package that brings its own yoke): every copy finds every code's hint.
 */
const shared = globalThis as { [CATALOGUE]?: Map<string, CatalogueEntry> }
const entries = (shared[CATALOGUE] ??= new Map())
for (const [code, spec] of Object.entries(catalogue))
  entries.set(code, { code, owner: 'yoke', ...spec })

/**
 * Adds a plugin's codes to the catalogue. Codes are UPPER_SNAKE and unique: one taken by another
 * owner is an error at load time, so two plugins can never give one code two meanings.
 */
export function defineErrors<const T extends Record<string, ErrorSpec>>(
  owner: string,
  specs: T,
): T {
  for (const [code, spec] of Object.entries(specs)) {
    if (!/^[A-Z][A-Z0-9_]+$/.test(code))
      throw new Error(`${owner}: error code "${code}" is not UPPER_SNAKE`)
    const taken = entries.get(code)
    if (taken && taken.owner !== owner) {
      throw new Error(`${owner}: error code ${code} is already declared by ${taken.owner}`)
    }
    entries.set(code, { code, owner, message: spec.message, hint: spec.hint })
  }
  return specs
}

/** Every code declared so far (the kernel's, and those of the plugins loaded), by code. */
export function errorCatalogue(): ReadonlyMap<string, CatalogueEntry> {
  return entries
}

function specOf(code: string): ErrorSpec {
  return (
    entries.get(code) ?? {
      message: `${code}: {reason}`,
      hint: `The code ${code} is not in the catalogue: its plugin did not declare it with defineErrors.`,
    }
  )
}

/** Where an error points: a file position, and the instance/plugin/hook involved. */
export interface ErrorSite {
  file?: string
  line?: number
  col?: number
  instance?: string
  plugin?: string
  hook?: string
}

export interface YokeErrorOptions extends ErrorSite {
  cause?: unknown
}

/**
 * An error from the catalogue: `code`, the formatted message, a `hint`, and where it points.
 * Its identity is its brand, not its class: `err instanceof YokeError` holds for a YokeError made
 * by any copy of yoke, so its code and hint survive every boundary.
 */
export class YokeError extends Error {
  readonly code: ErrorCode
  readonly hint: string
  readonly site: ErrorSite

  static [Symbol.hasInstance](value: unknown): boolean {
    // a subclass (LoginRequired) keeps the ordinary prototype test
    if (this !== YokeError) return Function.prototype[Symbol.hasInstance].call(this, value)
    return typeof value === 'object' && value !== null && BRAND in value
  }

  constructor(
    code: ErrorCode,
    params: Record<string, unknown> = {},
    options: YokeErrorOptions = {},
  ) {
    const { cause, ...site } = options
    super(fill(specOf(code).message, params), cause === undefined ? undefined : { cause })
    this.name = 'YokeError'
    this.code = code
    this.hint = fill(specOf(code).hint, params)
    this.site = site
    Object.defineProperty(this, BRAND, { value: true })
  }

  /** "file:line:col" when the error has a file position. */
  get location(): string | undefined {
    const { file, line, col } = this.site
    if (!file) return undefined
    return line ? `${file}:${line}:${col ?? 1}` : file
  }

  toJSON() {
    return {
      code: this.code,
      message: this.message,
      hint: this.hint,
      location: this.location,
      ...this.site,
      cause: this.cause instanceof Error ? this.cause.message : this.cause,
    }
  }
}

function fill(template: string, params: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (whole, key: string) =>
    key in params ? String(params[key]) : whole,
  )
}

/** Normalises anything thrown into a YokeError, keeping a YokeError's code and adding site details. */
export function asYokeError(
  err: unknown,
  fallback: ErrorCode,
  params: Record<string, unknown>,
  site: ErrorSite = {},
) {
  if (err instanceof YokeError) {
    for (const [k, v] of Object.entries(site)) {
      const key = k as keyof ErrorSite
      if (err.site[key] === undefined) (err.site as Record<string, unknown>)[key] = v
    }
    return err
  }
  return new YokeError(fallback, { reason: messageOf(err), ...params }, { ...site, cause: err })
}

export function messageOf(err: unknown): string {
  if (err instanceof AggregateError)
    return `${err.message}: ${err.errors.map(messageOf).join('; ')}`
  if (err instanceof Error) return err.message
  return String(err)
}
