// search_text: a substring (or regular expression) search over the text files under a directory.
// It runs in a worker thread with a deadline: a search that runs long stops by itself and returns
// what it found; one stuck inside a regular expression (catastrophic backtracking, e.g. (a+)+$) is
// terminated and reported, and the server goes on serving. At most MAX_RUNNING searches run at once.
import { Worker } from 'node:worker_threads'
import { stat } from 'node:fs/promises'
import {
  compile,
  formatBytes,
  isBinary,
  LIMITS,
  newStats,
  readCapped,
  WorkspaceError,
} from './workspace.mjs'

const MAX_RUNNING = 4
let running = 0

/** The search's time budget: WORKSPACE_SEARCH_MS, default 10 s. */
export const searchMs = () => Number(process.env.WORKSPACE_SEARCH_MS) || 10_000

/** Runs searchFiles in a worker; rejects with a WorkspaceError when it overruns or the caller aborts. */
export function searchInWorker(root, args, signal) {
  if (running >= MAX_RUNNING)
    return Promise.reject(
      new WorkspaceError(`${MAX_RUNNING} searches are running already; try again when one ends`),
    )
  const budget = searchMs()
  running++
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./search-worker.mjs', import.meta.url), {
      workerData: { root, args, deadline: Date.now() + budget },
      resourceLimits: { maxOldGenerationSizeMb: 512 },
      stdout: true,
      stderr: true,
    })
    let settled = false
    const finish = (fn, value) => {
      if (settled) return
      settled = true
      running--
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      void worker.terminate()
      fn(value)
    }
    // the worker checks the deadline between lines; past it by a second, it is stuck in one match
    const timer = setTimeout(() => {
      const why = args.regex
        ? `the regular expression ran for over ${budget / 1000} s and was stopped: it probably backtracks catastrophically (nested quantifiers such as (a+)+ or (\\w+\\s*)*); simplify it, or search for a plain substring`
        : `the search ran for over ${budget / 1000} s and was stopped; narrow path or glob`
      finish(reject, new WorkspaceError(why))
    }, budget + 1000)
    const onAbort = () => finish(reject, new WorkspaceError('the search was cancelled'))
    signal?.addEventListener('abort', onAbort, { once: true })
    worker.once('message', (m) =>
      m.ok ? finish(resolve, m.result) : finish(reject, new WorkspaceError(m.message)),
    )
    worker.once('error', (err) =>
      finish(reject, new WorkspaceError(`the search failed: ${err.message}`)),
    )
    worker.once('exit', (code) =>
      finish(reject, new WorkspaceError(`the search ended without an answer (exit ${code})`)),
    )
  })
}

/**
 * The search itself (in the worker). `args`: query, regex, caseSensitive, path, glob, maxResults.
 * Returns { text, structured } with one `path:line: text` line per match.
 */
export async function searchFiles(ws, args, deadline = Infinity) {
  const { query, regex = false, caseSensitive = false, path = '.', glob, maxResults = 100 } = args
  const test = matcher(query, regex, caseSensitive)
  const start = await ws.resolve(path)
  const info = await stat(start.abs)
  const match = glob ? compile(glob) : undefined
  const stats = newStats()
  const counts = { files: 0, binary: 0, large: 0, bytes: 0 }
  const matches = []
  let stopped
  // a file named as path is searched alone
  const files = info.isDirectory()
    ? ws.walk(start, { stats })
    : [{ rel: start.rel, abs: start.abs, type: 'file' }]
  outer: for await (const entry of files) {
    if (entry.type !== 'file') continue
    const relToStart =
      start.rel === '.' || !info.isDirectory() ? entry.rel : entry.rel.slice(start.rel.length + 1)
    if (match && !match(relToStart)) continue
    if (Date.now() > deadline) {
      stopped = `stopped: the time budget (${searchMs() / 1000} s) ran out; narrow path or glob`
      break
    }
    const size = (await stat(entry.abs).catch(() => undefined))?.size ?? 0
    if (size > LIMITS.fileBytes) {
      counts.large++
      continue
    }
    if (counts.bytes + size > LIMITS.searchBytes) {
      stopped = `stopped after reading ${formatBytes(counts.bytes)}; narrow path or glob`
      break
    }
    const buffer = await readCapped(entry.abs, LIMITS.fileBytes).catch(() => undefined)
    if (!buffer) continue
    counts.bytes += buffer.length
    if (isBinary(buffer)) {
      counts.binary++
      continue
    }
    counts.files++
    const lines = buffer.toString('utf8').split(/\r?\n/)
    for (let n = 0; n < lines.length; n++) {
      if (n % 1000 === 999 && Date.now() > deadline) {
        stopped = `stopped: the time budget (${searchMs() / 1000} s) ran out; narrow path or glob`
        break outer
      }
      const at = test(lines[n])
      if (at < 0) continue
      if (matches.length === maxResults) {
        stopped = `${maxResults} matches shown; there are more: narrow the query, path or glob, or raise maxResults (at most 1000)`
        break outer
      }
      matches.push({ path: entry.rel, line: n + 1, text: window(lines[n], at) })
    }
  }
  const lines = []
  let chars = 0
  let shown = 0
  for (const m of matches) {
    const line = `${m.path}:${m.line}: ${m.text}`
    if (chars + line.length > LIMITS.outputChars) {
      stopped = `${shown} matches shown: the answer is full; narrow the query, path or glob`
      break
    }
    lines.push(line)
    chars += line.length + 1
    shown++
  }
  const notes = [
    `${shown} ${shown === 1 ? 'match' : 'matches'} in ${counts.files} text files searched`,
    stopped,
    counts.binary && `${counts.binary} binary files skipped`,
    counts.large && `${counts.large} files over ${formatBytes(LIMITS.fileBytes)} skipped`,
    stats.skipped.size &&
      `skipped ${[...stats.skipped].join(', ')} (name one as path to search it)`,
    stats.stopped,
  ].filter(Boolean)
  return {
    text: [...lines, ...notes.map((n) => `[${n}]`)].join('\n'),
    structured: {
      query,
      path: start.rel,
      matches: matches.slice(0, shown),
      filesSearched: counts.files,
      truncated: Boolean(stopped || stats.stopped),
    },
  }
}

/** line → index of the first match, or -1. */
function matcher(query, regex, caseSensitive) {
  if (!regex) {
    const needle = caseSensitive ? query : query.toLowerCase()
    return caseSensitive
      ? (line) => line.indexOf(needle)
      : (line) => line.toLowerCase().indexOf(needle)
  }
  let re
  try {
    re = new RegExp(query, caseSensitive ? '' : 'i')
  } catch (err) {
    throw new WorkspaceError(
      `invalid regular expression: ${err.message.replace(/^Invalid regular expression: /, '')}`,
    )
  }
  return (line) => {
    const m = re.exec(line)
    return m ? m.index : -1
  }
}

/** A long line as a window of LIMITS.matchChars around the match. */
function window(line, at) {
  if (line.length <= LIMITS.matchChars) return line
  const from = Math.max(0, Math.min(at - 40, line.length - LIMITS.matchChars))
  return `${from > 0 ? '…' : ''}${line.slice(from, from + LIMITS.matchChars)}${from + LIMITS.matchChars < line.length ? '…' : ''}`
}
