// npm run bench: every benchmark, each against its baseline measured in the same run.
import { agentBench } from './agent.ts'
import { coldStartBench } from './cold-start.ts'
import { execBench } from './exec.ts'
import { gatewayBench } from './gateway.ts'
import { lifecycleBench } from './lifecycle.ts'
import { mcpBench } from './mcp.ts'
import { mcpSdkBench } from './mcp-sdk.ts'
import { pipelineBench } from './pipeline.ts'
import { reloadBench } from './reload.ts'
import { repositoryBench } from './repository.ts'
import { skillsBench } from './skills.ts'

// `npm run bench -- mcp gateway`: only the benchmarks whose names hold one of the words
const BENCHES: Record<string, () => Promise<void>> = {
  lifecycle: lifecycleBench,
  pipeline: pipelineBench,
  reload: reloadBench,
  skills: skillsBench,
  'mcp-sdk': mcpSdkBench,
  mcp: mcpBench,
  exec: execBench,
  gateway: gatewayBench,
  agent: agentBench,
  'cold-start': coldStartBench,
  repository: repositoryBench,
}
const words = process.argv.slice(2)
console.log(`node ${process.version}, ${new Date().toISOString()}`)
for (const [name, bench] of Object.entries(BENCHES))
  if (!words.length || words.some((w) => name.includes(w))) await bench()
process.exit(0)
