// npm run bench: every benchmark, each against its baseline measured in the same run.
// `npm run bench -- mcp gateway`: only the benchmarks whose names hold one of the words.
// `npm run bench -- check [words]`: the same, then every recorded figure against its goal; exits 1
// where one falls short (not part of npm test: timings belong to a bench, not a test).
import { loadavg } from 'node:os'
import { agentBench } from './agent.ts'
import { capabilitiesStoreBench } from './capabilities-store.ts'
import { coldStartBench } from './cold-start.ts'
import { consoleBench } from './console.ts'
import { evalCode } from './eval-code/run.ts'
import { evalTools } from './eval-tools/run.ts'
import { execBench } from './exec.ts'
import { gatewayBench } from './gateway.ts'
import { lifecycleBench } from './lifecycle.ts'
import { mcpBench } from './mcp.ts'
import { mcpSdkBench } from './mcp-sdk.ts'
import { mcpTranscriptBench } from './mcp-transcript.ts'
import { memoryBench } from './memory.ts'
import { pipelineBench } from './pipeline.ts'
import { registerBench } from './register.ts'
import { reloadBench } from './reload.ts'
import { repositoryBench } from './repository.ts'
import { skillsBench } from './skills.ts'
import { toolSearchBench } from './tool-search.ts'
import { figures, meets, row } from './stats.ts'

const BENCHES: Record<string, () => Promise<void>> = {
  lifecycle: lifecycleBench,
  pipeline: pipelineBench,
  console: consoleBench,
  reload: reloadBench,
  register: () => registerBench(),
  'tool-search': toolSearchBench,
  skills: skillsBench,
  'mcp-sdk': mcpSdkBench,
  mcp: mcpBench,
  // mcp-client's protocol transcript on vs off vs raw v2 (no figure; a word apart from mcp)
  transcript: mcpTranscriptBench,
  exec: execBench,
  gateway: gatewayBench,
  agent: agentBench,
  'cold-start': coldStartBench,
  repository: repositoryBench,
  memory: memoryBench,
  'capabilities-store': capabilitiesStoreBench,
  // issue 34: code mode against direct calls on recorded cassettes (turns, tokens, sandbox cost)
  'eval-code': () => evalCode(),
  // issue 32: tool search recall and no-match on the dev and test sets (lexical, offline)
  'eval-tools': () => evalTools(),
}

const args = process.argv.slice(2)
const check = args[0] === 'check'
const words = check ? args.slice(1) : args
const unknown = words.filter((w) => !Object.keys(BENCHES).some((name) => name.includes(w)))
if (unknown.length) {
  console.error(
    `bench: no benchmark matches ${unknown.map((w) => `"${w}"`).join(', ')}; the benchmarks: ${Object.keys(BENCHES).join(', ')}`,
  )
  process.exit(2)
}
const load = () => loadavg()[0]!.toFixed(2)
console.log(`node ${process.version}, ${new Date().toISOString()}, load average ${load()}`)
for (const [name, bench] of Object.entries(BENCHES))
  if (!words.length || words.some((w) => name.includes(w))) {
    console.error(`bench: ${name}…`)
    await bench()
  }

if (check) {
  console.log(`\nfigures against their goals (load average ${load()} at the end)`)
  console.log(row(['figure', 'value', 'goal', 'spread', 'verdict']))
  for (const f of figures)
    console.log(
      row([
        f.name,
        `${f.value.toFixed(f.value < 10 ? 2 : 1)}${f.unit ?? ''}`,
        `${f.better === 'lower' ? '≤' : '≥'} ${f.goal}${f.unit ?? ''}`,
        f.spread ?? '',
        meets(f) ? 'met' : 'SHORT',
      ]),
    )
  const short = figures.filter((f) => !meets(f))
  if (!figures.length) console.log('no benchmark in this run records a figure with a goal')
  if (short.length) {
    console.error(
      `bench check: ${short.length} of ${figures.length} figures fall short of their goals`,
    )
    process.exit(1)
  }
}
process.exit(0)
