/**
 * @module embed
 * `createYoke`: yoke as a library in one call. It composes the project's layers as the CLI does,
 * and hands back what an application needs: `ready` (the config applied and every spawned
 * instance settled, so an MCP server's or a package's tools exist), typed services, the tools,
 * calls through the whole pipeline, reload and close. `composition` is the full Composition for
 * anything else (its hooks, the kernel).
 */
import {
  Composition,
  RELOAD_CAPABILITIES,
  type ReloadEvent,
  type ReloadOptions,
} from './config/composer.ts'
import { logLine } from './cli/output.ts'
import { waitingLines } from './cli/waiting.ts'
import { settledWithin } from './kernel/disposer.ts'
import type { LogRecord, RunMode, ServiceName, ServiceOf } from './kernel/types.ts'
import type { ApprovalAnswer, ApprovalBridge, ApprovalRequest } from './runtime/approval.ts'
import { hostTrack, runtimeView, type RuntimeApi } from './runtime/index.ts'
import type { CallOptions } from './runtime/types.ts'
import type { RegisteredTool, ToolResult } from './runtime/types.ts'
import type { TrustOption } from './config/trust.ts'

export interface YokeOptions {
  /** where the project config is searched for, as the CLI searches from its cwd (default: process.cwd()) */
  cwd?: string
  /** the preset, a name or a path (default: the project config's `preset:`, else `base`) */
  preset?: string
  /** the project config file (relative to cwd), instead of searching for one */
  config?: string
  /** patch layers on top, in order (as `--patch FILE`) */
  patches?: readonly string[]
  /**
   * values on top of every layer: `path=YAML` strings as `--set` takes them, or an object of
   * path → value, e.g. `{ 'plugins.notes': { use: './notes.mjs' } }` (relative paths resolve from
   * the project's directory)
   */
  set?: readonly string[] | Readonly<Record<string, unknown>>
  /** what `${VAR}` reads (default: process.env) */
  env?: NodeJS.ProcessEnv
  /** $YOKE_HOME (default: env.YOKE_HOME, else ~/.yoke) */
  home?: string
  /**
   * Whether the project's own code may run: its local plugins, exec packages, shell hooks and
   * stdio MCP servers. `true` for an application's own config; `false` never; a function decides
   * from the project's directory and config files (`true`, or why not). Default: as the CLI, once
   * `yoke trust` recorded the project (in `home`), or with YOKE_TRUST=1; until then they wait.
   */
  trust?: TrustOption
  /**
   * who answers approval requests (a policy's `ask`): a bridge, or a function of the request.
   * Without one, a call that needs approval is denied.
   */
  approval?:
    ApprovalBridge | ((request: ApprovalRequest) => ApprovalAnswer | Promise<ApprovalAnswer>)
  /** reload when a layer file or a local plugin module changes, as `yoke dev` does (default false) */
  watch?: boolean
  /**
   * every log record; without it, warnings and errors are written to stderr. Once ready (and
   * after each reload that changes it), each instance that waits is one `warn` record starting
   * `waiting:`; those that wait for `yoke trust` share one record that names it.
   */
  onLog?: (record: LogRecord) => void
  /** `serve` (default): runs until closed; `once`: plugins skip ports and background work */
  runMode?: RunMode
  /** how long one instance's apply may take before it fails with PLUGIN_TIMEOUT (default 30 s) */
  settleMs?: number
  /** how long a plugin module's import may take (default 30 s) */
  importTimeoutMs?: number
}

/** A running yoke. `await using yoke = createYoke(…)` closes it at the end of the block. */
export interface Yoke extends AsyncDisposable {
  /**
   * The first load: resolves once the config is applied and the instances it spawned settled;
   * rejects with the config's first YokeError when it does not compose (nothing runs then).
   * An instance that fails alone does not reject it: see the event's `failed`.
   */
  readonly ready: Promise<ReloadEvent>
  /** The tool runtime as host code sees it (a registration returns its disposer); after `ready`. */
  readonly runtime: RuntimeApi
  /** The composition underneath: its hooks (`reload`), `kernel`, `reconciler`. */
  readonly composition: Composition
  /** A service, typed by the `Services` declaration; undefined while no active instance provides it. */
  get<K extends ServiceName>(name: K): ServiceOf<K> | undefined
  /** The tools a scope sees (default: the global scope). */
  tools(scope?: string): RegisteredTool[]
  /** One call through the whole pipeline (policy, approval, hooks, limits); waits for `ready`. */
  call(name: string, args?: unknown, options?: CallOptions): Promise<ToolResult>
  /**
   * Reads every layer again and moves the running instances to it. Rejects with the first
   * YokeError of a config that does not compose; what runs then is kept. Options (Claude Code
   * SDK's `reloadPlugins`): `holdOnCacheImpact` resolves with `held: true` and applies when the
   * turns in flight end; `refuseIfBusy` rejects with RELOAD_BUSY while one is; `addPlugins`.
   */
  reload(options?: ReloadOptions): Promise<ReloadEvent>
  /** what `reload(options)` understands (`hold-on-cache-impact`, `refuse-if-busy`, …) */
  readonly reloadCapabilities: readonly string[]
  /** Disposes every instance (their tools, servers, processes, watchers); idempotent. */
  close(): Promise<void>
}

const DEFAULT_SETTLE_MS = 30_000

export function createYoke(options: YokeOptions = {}): Yoke {
  const composition = new Composition({
    cwd: options.cwd ?? process.cwd(),
    preset: options.preset,
    configFile: options.config,
    patches: options.patches,
    sets: setArgs(options.set),
    env: options.env,
    home: options.home,
    trust: options.trust,
    runMode: options.runMode,
    settleMs: options.settleMs,
    importTimeoutMs: options.importTimeoutMs,
  })
  const log = options.onLog ?? printWarnings
  composition.kernel.hooks.log.tap('yoke:embed', log)
  /** what waits is said once per change (nothing silent): through onLog, else on stderr */
  let said = ''
  const sayWaiting = () => {
    const lines = waitingLines(composition)
    if (lines.join('\n') === said) return
    said = lines.join('\n')
    for (const line of lines) log({ level: 'warn', message: `waiting: ${line}` })
  }
  // a reload the watcher made (or `yoke trust` elsewhere) may start what waited, or hold more
  composition.hooks.reload.tap('yoke:embed', (event) => {
    if (event.ok) void settledWithin(composition.kernel.settled(), settleMs).then(sayWaiting)
  })
  const settleMs = options.settleMs ?? DEFAULT_SETTLE_MS
  let view: RuntimeApi | undefined
  let closing: Promise<void> | undefined
  let unregisterApproval: (() => void) | undefined

  /** the event when the config applied; its first error when not */
  const settle = async (event: ReloadEvent): Promise<ReloadEvent> => {
    if (!event.ok) throw event.errors[0]
    // instances spawn others (an MCP server per entry of a .mcp.json): their tools come after
    await settledWithin(composition.kernel.settled(), settleMs)
    sayWaiting()
    return event
  }

  const ready = composition.start().then(async (event) => {
    const bridge = bridgeOf(options.approval)
    if (bridge) unregisterApproval = composition.runtime?.approvals.register(bridge)
    // also after a config that did not compose: its fix reloads
    if (options.watch && !closing) await composition.watch()
    return settle(event)
  })
  ready.catch(() => {}) // a rejection is the caller's to see through `ready` or `call`, not a crash

  /** `ready`, or a later reload that applied after a first config that did not compose */
  const applied = () =>
    ready.catch((err: unknown) => (composition.current ? undefined : Promise.reject(err)))

  const runtime = (): RuntimeApi => {
    if (closing) throw new Error('this yoke is closed')
    const rt = composition.runtime
    if (!rt) throw new Error('yoke is not ready yet: await yoke.ready first')
    return (view ??= runtimeView(rt, 'host', hostTrack))
  }

  const close = () =>
    (closing ??= (async () => {
      unregisterApproval?.()
      await composition.close()
    })())

  return {
    ready,
    composition,
    get runtime() {
      return runtime()
    },
    get: (name) => composition.get(name),
    tools: (scope) => composition.runtime?.list(scope) ?? [],
    async call(name, args, callOptions) {
      await applied()
      return runtime().call(name, args, callOptions)
    },
    reload: async (reloadOptions) => settle(await composition.reload([], reloadOptions)),
    reloadCapabilities: RELOAD_CAPABILITIES,
    close,
    [Symbol.asyncDispose]: close,
  }
}

/** `--set` arguments: the strings as given; an object's entries as `path=<JSON>` (JSON is YAML). */
function setArgs(set: YokeOptions['set']): string[] {
  if (!set) return []
  if (isStrings(set)) return [...set]
  return Object.entries(set).map(([path, value]) => `${path}=${JSON.stringify(value ?? null)}`)
}

function isStrings(set: NonNullable<YokeOptions['set']>): set is readonly string[] {
  return Array.isArray(set)
}

function bridgeOf(approval: YokeOptions['approval']): ApprovalBridge | undefined {
  if (typeof approval !== 'function') return approval
  return { name: 'createYoke approval', ask: async (request) => approval(request) }
}

function printWarnings(record: LogRecord) {
  if (record.level !== 'warn' && record.level !== 'error') return
  process.stderr.write(`yoke ${logLine(record)}`)
}
