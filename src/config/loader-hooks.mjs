// Module resolve hook (runs on Node's loader thread). A plugin module imported as
// `file.ts?yoke-gen=N` passes the same query on to the local files it imports, so a reload
// re-evaluates the plugin's whole local import graph. node_modules and yoke's own source keep
// one shared copy. Each import edge is reported back, so the caller knows (and watches) exactly
// the files each plugin depends on. `yoke` and `yoke/…` always resolve to the running yoke, so a
// plugin anywhere (no yoke installed beside it) gets the host's API — one copy, one YokeError class.
// The entry points are answered outright: a later hook (tsx, applying a project tsconfig's `paths`
// that point at yoke's .d.ts files for the type-checker) must not send them elsewhere.
import { pathToFileURL } from 'node:url'

let port
let shared = []
let host
let entries = {}
// a local .ts plugin is ESM (the plugin contract) even outside a "type": "module" package; as CommonJS a reload would get the cached copy
const esm = (r) =>
  r.url.includes('yoke-gen=') && /\.ts$/.test(r.url.split('?')[0]) ? { ...r, format: 'module' } : r

export function initialize(data) {
  port = data.port
  shared = data.shared
  host = data.host
  entries = data.entries ?? {}
  // a ping is answered after every edge reported before it: the port keeps order
  port.on('message', (message) => message === 'ping' && port.postMessage('pong'))
  port.unref()
}

export async function resolve(specifier, context, next) {
  // yoke-from:["dir","pkg"] resolves an npm package as if imported from a file in dir
  if (specifier.startsWith('yoke-from:')) {
    const [dir, pkg] = JSON.parse(decodeURIComponent(specifier.slice('yoke-from:'.length)))
    return next(pkg, { ...context, parentURL: pathToFileURL(`${dir}/package.json`).href })
  }
  // the file URL itself goes on down the chain: a TypeScript loader still loads the source (a
  // shortCircuit here leaves yoke's own .ts entry to Node, which cannot), and paths cannot remap it
  if (Object.hasOwn(entries, specifier)) return next(entries[specifier], context)
  if (host && (specifier === 'yoke' || specifier.startsWith('yoke/')))
    return next(specifier, { ...context, parentURL: host })
  const result = esm(await next(specifier, context))
  const gen = context.parentURL && /[?&]yoke-gen=(\d+)/.exec(context.parentURL)?.[1]
  const url = result.url
  if (!gen || !url.startsWith('file:') || url.includes('/node_modules/')) return result
  if (shared.some((prefix) => url.startsWith(prefix))) return result
  // tsx may already carry the parent's query over to a child (outside a "type": "module" package)
  const versioned = url.includes('yoke-gen=')
    ? url
    : `${url}${url.includes('?') ? '&' : '?'}yoke-gen=${gen}`
  port.postMessage({ parent: context.parentURL, url: versioned })
  return esm({ ...result, url: versioned })
}
