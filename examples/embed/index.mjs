// yoke embedded in an application: compose this directory's yoke.config.yaml, call tools through
// the full pipeline (validation, policy, approval, limits), read a service, and close.
// Plain Node ESM: `node index.mjs` (after `npm install`). Offline, no keys.
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createYoke, guardProcess, YokeError } from 'yoke'

// a plugin's stray error fails that plugin instead of this process (README: Reliability)
guardProcess()

const text = (result) => result.content.map((part) => part.text ?? '').join('')

const yoke = createYoke({
  cwd: dirname(fileURLToPath(import.meta.url)),
  // this config is the application's own, so its plugins may run (README: Project trust)
  trust: true,
  // the policy asks before a high-risk call; this application answers for its user
  approval: ({ call, reason }) => {
    console.log(`approval asked for ${call.name} (${reason}): allowed once`)
    return 'allow-once'
  },
})

try {
  await run()
} catch (err) {
  // a config that does not compose rejects `ready`: the error says where and what to do
  if (!(err instanceof YokeError)) throw err
  console.error(`${err.code} at ${err.location ?? '?'}: ${err.message}\n  ${err.hint}`)
  process.exitCode = 2
} finally {
  await yoke.close() // every instance is disposed (on Node 24+, `await using yoke = …` does it)
}

async function run() {
  const loaded = await yoke.ready
  console.log(`ready: ${loaded.added.length} instances (${loaded.added.join(', ')})`)

  const ours = yoke.tools().filter((tool) => tool.owner === 'todos')
  console.log(`tools: ${ours.map((tool) => `${tool.name} (${tool.risk})`).join(', ')}`)

  for (const todo of ['write the report', 'review the pull request'])
    console.log(text(await yoke.call('todo_add', { text: todo })))
  console.log(text(await yoke.call('todo_list')))

  // arguments are checked against the tool's schema before it runs
  const invalid = await yoke.call('todo_add', { text: '' })
  console.log(`todo_add with an empty text: ${invalid.status}`)

  console.log(`the todos service counts ${yoke.get('todos')?.count()}`)
  console.log(text(await yoke.call('todo_clear')))
  console.log(`the todos service counts ${yoke.get('todos')?.count()}`)
}
