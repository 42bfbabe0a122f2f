#!/usr/bin/env node
// yoke runs from its build (dist/, made by `npm run build`; `npm install` in a clone builds it).
// tsx loads only when a project's TypeScript plugin is imported (src/config/typescript.ts).
import { existsSync } from 'node:fs'

const main = new URL('../dist/src/cli/main.js', import.meta.url)
if (!existsSync(main)) {
  process.stderr.write('yoke: no build found (dist/); run `npm run build` in the yoke checkout\n')
  process.exit(1)
}
const { main: run, drained } = await import(main.href)
const code = await run(process.argv.slice(2))
// what is written to a pipe goes out first (process.exit drops what the pipe has not taken yet)
await drained()
// then exit explicitly: a plugin that leaves a handle open must not keep a finished command alive
process.exit(code)
