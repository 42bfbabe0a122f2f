// Runs one search_text off the server's event loop, so a runaway regular expression cannot stall
// it: the server terminates this worker when the search overruns (search.mjs).
import { parentPort, workerData } from 'node:worker_threads'
import { searchFiles } from './search.mjs'
import { Workspace } from './workspace.mjs'

try {
  parentPort.postMessage({
    ok: true,
    result: await searchFiles(new Workspace(workerData.root), workerData.args, workerData.deadline),
  })
} catch (err) {
  parentPort.postMessage({ ok: false, message: err?.message ?? String(err) })
}
