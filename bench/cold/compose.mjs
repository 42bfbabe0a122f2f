// The hand-written baseline for `yoke tools list`: the same config composed with the library's
// API (the build, plain Node) in run mode once, as the command does; the tools printed; closed.
import { createYoke } from 'yoke'

const yoke = createYoke({ config: process.argv[2], runMode: 'once' })
await yoke.ready
for (const tool of yoke.tools()) console.log(`${tool.name}\t${tool.source}\t${tool.risk}`)
await yoke.close()
process.exit(0)
