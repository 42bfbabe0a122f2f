/**
 * The JavaScript a sandbox runs before the program: it takes the host's three functions from the
 * global object and hides them, then defines what a program sees. `tools` is a proxy: any path
 * `tools.a.b` is a function that asks the host, which names the tool and runs the call through
 * the pipeline in the caller's scope (a name the scope may not call answers as a direct call
 * would: UNKNOWN_TOOL). Values cross as JSON text, so nothing of the host leaks in.
 */
export const PRELUDE = `(() => {
  const host = globalThis.__yoke_host
  delete globalThis.__yoke_host
  const { call, log, declarations } = host
  class ToolError extends Error {
    constructor(e) {
      super(e.message)
      this.name = 'ToolError'
      this.code = e.code
      this.hint = e.hint
      this.tool = e.tool
    }
  }
  const invoke = async (path, args) => {
    const text = JSON.stringify(args === undefined ? {} : args)
    const reply = JSON.parse(await call(JSON.stringify(path), text === undefined ? '{}' : text))
    if (reply.error) throw new ToolError(reply.error)
    return reply.value
  }
  const node = (path) =>
    new Proxy(function () {}, {
      get: (_, key) =>
        typeof key === 'string' && key !== 'then' && path.length < 2 ? node([...path, key]) : undefined,
      apply: (_, __, argv) => invoke(path, argv[0]),
      has: () => false,
      set: () => false,
    })
  const show = (v) => {
    if (typeof v === 'string') return v
    try {
      const s = JSON.stringify(v)
      return s === undefined ? String(v) : s
    } catch {
      return String(v)
    }
  }
  const write = (level) => (...items) => log((level ? level + ': ' : '') + items.map(show).join(' '))
  const define = (name, value) =>
    Object.defineProperty(globalThis, name, { value, writable: false, configurable: false, enumerable: false })
  define('tools', node([]))
  define('callTool', (name, args) => invoke([String(name)], args))
  define('api', async () => JSON.parse(await declarations()))
  define('ToolError', ToolError)
  define('console', Object.freeze({ log: write(''), info: write(''), debug: write(''), warn: write('warn'), error: write('error') }))
})()`
