#!/usr/bin/env node
// yoke runs from its TypeScript source: tsx compiles on the fly (and lets presets load .ts plugins).
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../src/cli/main.ts')
// exit explicitly: a plugin that leaves a handle open must not keep a finished command alive
process.exit(await main(process.argv.slice(2)))
