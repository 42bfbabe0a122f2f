// The hand-written baseline for `yoke tools list`: the same config composed with the library's
// API (the build, plain Node), the tools printed, the composition closed.
import { Composition } from 'yoke'

const composition = new Composition({ config: process.argv[2], runMode: 'once' })
const event = await composition.start()
if (!event.ok) throw event.errors[0]
for (const tool of composition.runtime.list()) console.log(`${tool.name}\t${tool.source}`)
await composition.close()
process.exit(0)
