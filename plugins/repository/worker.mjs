// The worker side of a dynamic plugin (see worker-host.ts), a child process of yoke's: imports the
// module from memory, runs its apply with a context that reaches yoke only through IPC messages
// (ctx.runtime.register, ctx.logger, ctx.signal), and runs its tools' bodies when the host asks.
// Plain JavaScript, so that it starts without a TypeScript loader. This is a fault boundary (a
// loop, a crash or a blocking syscall ends this process, not yoke), not a security boundary: the
// module has Node's whole API here, with the user's rights.
const tools = new Map()
const calls = new Map()
const lifetime = new AbortController()
let cleanup
let maxTools = Infinity

const post = (message) => {
  if (process.connected) process.send(message)
}
const text = (err) => (err instanceof Error ? err.message : String(err))

const logger = Object.fromEntries(
  ['debug', 'info', 'warn', 'error'].map((level) => [
    level,
    (message, error) =>
      post({ type: 'log', level, message: error ? `${message}: ${text(error)}` : String(message) }),
  ]),
)

class TooManyTools extends Error {
  code = 'REPOSITORY_TOO_MANY_TOOLS'
}

function register(def) {
  if (!def || typeof def.name !== 'string' || typeof def.execute !== 'function')
    throw new TypeError('a tool needs a name and an execute function')
  if (tools.has(def.name)) throw new Error(`this plugin registered the tool ${def.name} already`)
  if (tools.size >= maxTools)
    throw new TooManyTools(
      `a dynamic plugin may have at most ${maxTools} tools (maxToolsPerPlugin); ${def.name} is one more`,
    )
  tools.set(def.name, def)
  const { execute: _execute, ...shape } = def
  post({ type: 'register', tool: JSON.parse(JSON.stringify(shape)) })
  let done = false
  return () => {
    if (done) return
    done = true
    tools.delete(def.name)
    post({ type: 'unregister', name: def.name })
  }
}

async function init({ code, key, config, inject, maxTools: max }) {
  maxTools = max
  const module = await import(`data:text/javascript;base64,${Buffer.from(code).toString('base64')}`)
  const value = module.default
  const apply = typeof value === 'function' ? value : value?.apply
  if (typeof apply !== 'function') throw new TypeError('the default export has no apply function')
  const ctx = { key, signal: lifetime.signal, logger }
  if (inject.includes('runtime')) ctx.runtime = { register }
  const out = await apply.call(value, ctx, config)
  if (typeof out === 'function') cleanup = out
}

async function call({ id, tool, args }) {
  const def = tools.get(tool)
  const controller = new AbortController()
  calls.set(id, controller)
  try {
    if (!def) throw new Error(`the plugin has no tool ${tool} (any more)`)
    const value = await def.execute(args, {
      signal: controller.signal,
      progress: (event) => post({ type: 'progress', id, event }),
    })
    post({ type: 'result', id, value })
  } catch (err) {
    post({ type: 'error', id, message: text(err) })
  } finally {
    calls.delete(id)
  }
}

process.on('message', (message) => {
  switch (message.type) {
    case 'init':
      return void init(message).then(
        () => post({ type: 'ready' }),
        (err) => post({ type: 'init-failed', message: text(err), code: err?.code }),
      )
    case 'call':
      return void call(message)
    case 'cancel':
      return calls.get(message.id)?.abort(new Error('the call ended early'))
    case 'ping':
      return post({ type: 'pong', id: message.id })
    case 'dispose':
      lifetime.abort(new Error('the plugin was stopped'))
      return void Promise.resolve()
        .then(() => cleanup?.())
        .catch((err) => logger.warn('its cleanup failed', err))
        .finally(() => post({ type: 'disposed' }))
  }
})
// what throws outside a call ends this process, and the host is told why
const fatal = (err) => {
  if (!process.connected) process.exit(1)
  process.send({ type: 'fatal', message: text(err) }, () => process.exit(1))
}
process.on('uncaughtException', fatal)
process.on('unhandledRejection', fatal)
// yoke went away: so does this process (one blocked in a syscall is killed with its group)
process.on('disconnect', () => process.exit(0))
