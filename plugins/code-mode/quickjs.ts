/**
 * The default sandbox: QuickJS compiled to WebAssembly (quickjs-emscripten), in a worker thread,
 * a fresh QuickJS runtime and context per run. The program sees `tools`, `callTool`, `api`,
 * `console` and the language's own globals; no module loader is set and nothing else is injected,
 * so there is no process, require, import, fetch, timer or file system. Why a worker: a single
 * builtin call (`new Array(1e7).fill(0)`, a string built near the memory limit) runs for seconds
 * without reaching QuickJS's interrupt check; in a worker it cannot stall yoke's event loop, and
 * the host ends it (terminates the worker) once it has been busy past its CPU bound. Tool calls
 * cross as JSON text in messages; several may be in flight at once (`Promise.all`). One idle
 * worker is kept for the next run; a worker that was terminated or failed is never reused.
 */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { messageOf, YokeError } from 'yoke'
import type { ExecuteLimits, ExecuteResult, Executor, SandboxApi } from './api.ts'
import { PRELUDE } from './prelude.ts'
import { WORKER_SOURCE } from './worker-source.ts'

/** how long past its CPU bound a busy worker may run before it is terminated (its own check comes first) */
const GRACE_MS = 250
const QUICKJS = import.meta.resolve('quickjs-emscripten')

/** QuickJS's WebAssembly, compiled once per process and handed to each worker (none: each compiles its own). */
let compiled: Promise<WebAssembly.Module | undefined> | undefined
function quickjsWasm(): Promise<WebAssembly.Module | undefined> {
  return (compiled ??= (async () => {
    try {
      const require = createRequire(QUICKJS)
      const pkg = require.resolve('@jitl/quickjs-wasmfile-release-sync/package.json')
      return await WebAssembly.compile(
        await readFile(join(dirname(pkg), 'dist/emscripten-module.wasm')),
      )
    } catch {
      return undefined
    }
  })())
}

export class QuickJsExecutor implements Executor {
  readonly name = 'quickjs'
  readonly #idle: SandboxWorker[] = []
  readonly #all = new Set<SandboxWorker>()

  constructor(private readonly keepIdle = 1) {}

  async execute(code: string, api: SandboxApi, limits: ExecuteLimits): Promise<ExecuteResult> {
    const worker = this.#idle.pop() ?? this.#spawn(await quickjsWasm())
    const outcome = await worker.run(code, api, limits)
    if (worker.usable && this.#idle.length < this.keepIdle) this.#idle.push(worker)
    else this.#retire(worker)
    return outcome
  }

  /** Starts a worker now, so the first run does not wait for one. */
  async warm(): Promise<void> {
    const wasm = await quickjsWasm()
    if (!this.#idle.length) this.#idle.push(this.#spawn(wasm))
  }

  /** Ends every worker (the plugin's close). */
  close(): void {
    for (const w of this.#all) void w.close()
    this.#all.clear()
    this.#idle.length = 0
  }

  #spawn(wasm: WebAssembly.Module | undefined): SandboxWorker {
    const worker = new SandboxWorker(wasm)
    this.#all.add(worker)
    return worker
  }

  #retire(worker: SandboxWorker) {
    this.#all.delete(worker)
    void worker.close()
  }
}

type Outcome = {
  result?: unknown
  fail?: { kind: string; reason?: string }
  logs: string[]
}
type FromWorker =
  | { type: 'call'; id: number; path: string; args: string }
  | { type: 'declarations'; id: number }
  | { type: 'idle'; cpuMs: number }
  | { type: 'done'; outcome?: Outcome; fatal?: string }

/** One worker thread; one run at a time. */
class SandboxWorker {
  readonly #stop = new Int32Array(new SharedArrayBuffer(4))
  readonly #worker: Worker
  usable = true
  #exit?: (why: string) => void

  constructor(wasm: WebAssembly.Module | undefined) {
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { quickjs: QUICKJS, wasm, stop: this.#stop.buffer, prelude: PRELUDE },
      stdout: true,
      stderr: true,
    })
    // an idle worker never keeps the process alive; a running one does (run() refs it)
    this.#worker.unref()
    // nothing should write there; what does (an abort's message) is read and dropped
    this.#worker.stdout.resume()
    this.#worker.stderr.resume()
    const gone = (why: string) => {
      this.usable = false
      this.#exit?.(why)
    }
    this.#worker.on('error', (err) => gone(messageOf(err)))
    this.#worker.on('exit', (code) => gone(`the worker exited (${code})`))
  }

  close(): Promise<number> {
    this.usable = false
    return this.#worker.terminate()
  }

  run(code: string, api: SandboxApi, limits: ExecuteLimits): Promise<ExecuteResult> {
    const worker = this.#worker
    Atomics.store(this.#stop, 0, 0)
    return new Promise((resolve) => {
      let halt: YokeError | undefined
      let used = 0
      let busySince: number | undefined
      let timer: NodeJS.Timeout | undefined
      let finished = false
      const finish = (outcome: ExecuteResult) => {
        if (finished) return
        finished = true
        clearTimeout(timer)
        worker.unref()
        worker.off('message', onMessage)
        api.signal.removeEventListener('abort', onAbort)
        this.#exit = undefined
        resolve(outcome)
      }
      // the watchdog: a worker busy past its CPU bound (and the grace) is terminated
      const busy = () => {
        if (busySince !== undefined) return
        busySince = performance.now()
        timer = setTimeout(
          () => {
            void this.close()
            finish({ error: coded('timeout', limits), logs: [] })
          },
          Math.max(0, limits.cpuMs - used) + GRACE_MS,
        )
      }
      const idle = () => {
        if (busySince === undefined) return
        used += performance.now() - busySince
        busySince = undefined
        clearTimeout(timer)
      }
      const stopWith = (err: YokeError) => {
        halt ??= err
        Atomics.store(this.#stop, 0, 1)
        worker.postMessage({ type: 'halt' })
      }
      const reply = (id: number, text: string) => {
        if (finished || halt) return
        busy()
        worker.postMessage({ type: 'reply', id, text })
      }
      const onAbort = () =>
        stopWith(new YokeError('CODE_ERROR', { reason: 'the run_code call ended' }))
      const onMessage = (m: FromWorker) => {
        if (m.type === 'idle') idle()
        else if (m.type === 'declarations') reply(m.id, JSON.stringify(api.declarations()))
        else if (m.type === 'call')
          void hostCall(api, m.path, m.args).then(
            (r) => reply(m.id, JSON.stringify(r)),
            (err: unknown) => stopWith(asYoke(err)),
          )
        else if (m.type === 'done') {
          if (m.fatal) {
            this.usable = false
            finish({ error: failed(m.fatal), logs: [] })
          } else finish(outcomeOf(m.outcome!, limits, halt))
        }
      }
      this.#exit = (why) => finish({ error: halt ? asError(halt) : failed(why), logs: [] })
      worker.ref()
      worker.on('message', onMessage)
      api.signal.addEventListener('abort', onAbort)
      if (api.signal.aborted) onAbort()
      busy()
      worker.postMessage({ type: 'run', code, limits })
    })
  }
}

/** A call from the program: its path and arguments come as JSON text from the sandbox. */
async function hostCall(api: SandboxApi, pathText: string, argsText: string) {
  let path: string[]
  let args: unknown
  try {
    path = JSON.parse(pathText)
    args = JSON.parse(argsText)
  } catch {
    return {
      error: { code: 'INVALID_ARGS', message: 'the arguments are not JSON data', tool: '?' },
    }
  }
  return api.call(Array.isArray(path) ? path.map(String) : [], args ?? {})
}

const asYoke = (err: unknown) =>
  err instanceof YokeError
    ? err
    : new YokeError('CODE_SANDBOX_FAILED', { executor: 'quickjs', reason: messageOf(err) })
const asError = (err: YokeError) => ({ code: err.code, message: err.message })
const failed = (reason: string) =>
  asError(new YokeError('CODE_SANDBOX_FAILED', { executor: 'quickjs', reason }))

/** The worker's outcome with catalogue codes: a halt the host asked for comes first. */
function outcomeOf(outcome: Outcome, limits: ExecuteLimits, halt?: YokeError): ExecuteResult {
  const { logs } = outcome
  if (halt) return { error: asError(halt), logs }
  if (!outcome.fail) return { result: outcome.result, logs }
  return { error: coded(outcome.fail.kind, limits, outcome.fail.reason), logs }
}

function coded(
  kind: string,
  limits: ExecuteLimits,
  reason = '',
): { code: string; message: string } {
  switch (kind) {
    case 'timeout':
      return asError(new YokeError('CODE_TIMEOUT', { ms: limits.cpuMs, reason: '' }))
    case 'memory':
      return asError(new YokeError('CODE_MEMORY', { mb: limits.memoryBytes / 2 ** 20, reason: '' }))
    case 'stack':
      return asError(new YokeError('CODE_STACK', { kb: limits.stackBytes / 1024, reason: '' }))
    case 'output':
      return asError(new YokeError('CODE_OUTPUT', { bytes: limits.outputBytes, reason: '' }))
    case 'syntax':
      return asError(new YokeError('CODE_SYNTAX', { reason }))
    case 'stalled':
      return asError(
        new YokeError('CODE_ERROR', {
          reason: 'it awaits a promise that nothing will settle (no tool call is in flight)',
        }),
      )
    default:
      return asError(new YokeError('CODE_ERROR', { reason: reason || kind }))
  }
}
