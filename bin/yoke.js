#!/usr/bin/env node
// yoke runs from its TypeScript source: tsx compiles on the fly (and lets presets load .ts plugins).
import { register } from 'tsx/esm/api'
import { register as registerCjs } from 'tsx/cjs/api'

register()
registerCjs() // a .ts plugin outside a "type": "module" package is loaded as CommonJS
const { main } = await import('../src/cli/main.ts')
// exit explicitly: a plugin that leaves a handle open must not keep a finished command alive
process.exit(await main(process.argv.slice(2)))
