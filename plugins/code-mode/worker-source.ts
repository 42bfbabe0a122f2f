/**
 * The sandbox worker's source (run with `new Worker(source, { eval: true })`, so it needs no file
 * of its own in the source tree or in dist/). It holds one QuickJS WebAssembly module and runs one
 * program at a time, each in a fresh QuickJS runtime and context: the prelude, then the program as
 * the body of an async function, with a promise pump between host replies. It reports how a run
 * ended as a kind (the host turns it into a catalogue code). The host's stop flag (a shared
 * Int32Array) is read by the interrupt handler, so the host can end a busy program at once.
 */
export const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads')
const stop = new Int32Array(workerData.stop)
let quickjs
const replies = new Map()
let wake
let halted = false
let nextId = 0

parentPort.on('message', (m) => {
  if (m.type === 'run') {
    halted = false
    run(m).then(
      (outcome) => parentPort.postMessage({ type: 'done', outcome }),
      (err) => parentPort.postMessage({ type: 'done', fatal: String((err && err.stack) || err) }),
    )
  } else if (m.type === 'reply') {
    const settle = replies.get(m.id)
    replies.delete(m.id)
    if (settle) settle(m.text)
    if (wake) wake()
  } else if (m.type === 'halt') {
    halted = true
    if (wake) wake()
  }
})

async function run({ code, limits }) {
  // the WebAssembly module the host compiled once: every worker shares its compiled code
  if (!quickjs)
    quickjs = import(workerData.quickjs).then((m) =>
      workerData.wasm
        ? m.newQuickJSWASMModuleFromVariant(m.newVariant(m.RELEASE_SYNC, { wasmModule: workerData.wasm }))
        : m.newQuickJSWASMModule(),
    )
  const Q = await quickjs
  const rt = Q.newRuntime()
  const deferred = []
  let vm
  let cpu = 0
  let slice = 0
  let timedOut = false
  let output = 0
  let overflow = false
  let inFlight = 0
  let done = false
  const logs = []
  const inside = (fn) => {
    slice = performance.now()
    try {
      return fn()
    } finally {
      cpu += performance.now() - slice
    }
  }
  try {
    rt.setMemoryLimit(limits.memoryBytes)
    rt.setMaxStackSize(limits.stackBytes)
    rt.setInterruptHandler(() => {
      if (done || halted || overflow || Atomics.load(stop, 0)) return true
      if (performance.now() - slice + cpu > limits.cpuMs) timedOut = true
      return timedOut
    })
    vm = rt.newContext()
    const ask = (kind, payload) => {
      const d = vm.newPromise()
      deferred.push(d)
      const id = ++nextId
      inFlight++
      replies.set(id, (text) => {
        inFlight--
        if (done) return
        const value = vm.newString(text)
        d.resolve(value)
        value.dispose()
      })
      parentPort.postMessage({ type: kind, id, ...payload })
      return d.handle
    }
    const call = vm.newFunction('call', (p, a) => ask('call', { path: vm.getString(p), args: vm.getString(a) }))
    const declarations = vm.newFunction('declarations', () => ask('declarations', {}))
    const log = vm.newFunction('log', (t) => {
      const text = vm.getString(t)
      output += Buffer.byteLength(text) + 1
      if (output > limits.outputBytes) overflow = true
      else logs.push(text)
    })
    const host = vm.newObject()
    vm.setProp(host, 'call', call)
    vm.setProp(host, 'log', log)
    vm.setProp(host, 'declarations', declarations)
    vm.setProp(vm.global, '__yoke_host', host)
    for (const h of [call, log, declarations, host]) h.dispose()
    const prelude = inside(() => vm.evalCode(workerData.prelude, 'prelude.js'))
    if (prelude.error) {
      const why = JSON.stringify(vm.dump(prelude.error))
      prelude.error.dispose()
      throw new Error('the prelude failed: ' + why)
    }
    prelude.value.dispose()
    const evaluated = inside(() => vm.evalCode('(async () => {' + code + '\n})()', 'program.js'))
    if (evaluated.error) {
      const error = vm.dump(evaluated.error)
      evaluated.error.dispose()
      return ended(error, true)
    }
    const promise = evaluated.value
    try {
      for (;;) {
        const jobs = inside(() => rt.executePendingJobs())
        if (jobs.error) jobs.error.dispose()
        if (halted) return { fail: { kind: 'halted' }, logs }
        if (overflow) return { fail: { kind: 'output' }, logs }
        if (timedOut) return { fail: { kind: 'timeout' }, logs }
        const state = vm.getPromiseState(promise)
        if (state.type === 'fulfilled') {
          const result = vm.dump(state.value)
          state.value.dispose()
          return { result, logs, cpuMs: cpu }
        }
        if (state.type === 'rejected') {
          const error = vm.dump(state.error)
          state.error.dispose()
          return ended(error, false)
        }
        if (!inFlight) return { fail: { kind: 'stalled' }, logs }
        parentPort.postMessage({ type: 'idle', cpuMs: cpu })
        await new Promise((resolve) => (wake = resolve))
        wake = undefined
      }
    } finally {
      promise.dispose()
    }
  } finally {
    done = true
    replies.clear()
    for (const d of deferred) d.dispose()
    if (vm) vm.dispose()
    rt.dispose()
  }

  function ended(error, atParse) {
    if (timedOut) return { fail: { kind: 'timeout' }, logs }
    if (overflow) return { fail: { kind: 'output' }, logs }
    if (halted) return { fail: { kind: 'halted' }, logs }
    const e = error && typeof error === 'object' ? error : {}
    const name = typeof e.name === 'string' ? e.name : 'Error'
    const message = typeof e.message === 'string' ? e.message : String(error)
    const line = /program\.js:(\d+)/.exec(typeof e.stack === 'string' ? e.stack : '')
    const reason = name + (e.code ? ' (' + e.code + ')' : '') + ': ' + message + (line ? ' (line ' + line[1] + ')' : '')
    let kind = 'error'
    if (name === 'InternalError' && /out of memory/.test(message)) kind = 'memory'
    else if (name === 'InternalError' && /stack overflow/.test(message)) kind = 'stack'
    else if (name === 'InternalError' && message === 'interrupted') kind = 'timeout'
    else if (atParse && name === 'SyntaxError') kind = 'syntax'
    return { fail: { kind, reason }, logs }
  }
}
`
