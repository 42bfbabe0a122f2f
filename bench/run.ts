// npm run bench: every benchmark, each against its baseline measured in the same run.
import { agentBench } from './agent.ts'
import { execBench } from './exec.ts'
import { gatewayBench } from './gateway.ts'
import { lifecycleBench } from './lifecycle.ts'
import { mcpBench } from './mcp.ts'
import { mcpSdkBench } from './mcp-sdk.ts'
import { pipelineBench } from './pipeline.ts'
import { reloadBench } from './reload.ts'
import { skillsBench } from './skills.ts'

console.log(`node ${process.version}, ${new Date().toISOString()}`)
await lifecycleBench()
await pipelineBench()
await reloadBench()
await skillsBench()
await mcpSdkBench()
await mcpBench()
await execBench()
await gatewayBench()
await agentBench()
process.exit(0)
