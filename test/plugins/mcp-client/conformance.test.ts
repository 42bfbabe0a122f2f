// The pipeline conformance suite for MCP tools: each behaviour is a tool of its own fixture server
// (a real process on the SDK), reached through its own mcp-client instance.
import { runPipelineConformance, runStageConformance } from '../../conformance/pipeline.ts'
import { everything, fixture, mcpHarness, text } from '../../helpers/mcp.ts'
import assert from 'node:assert/strict'
import { toDisposer } from '../../../src/index.ts'

runPipelineConformance('mcp', async () => {
  const h = await mcpHarness()
  return {
    runtime: h.rt,
    publicName: (name) => `mcp__c_${name}__${name}`,
    async register(name, behaviour, options = {}) {
      const key = `c_${name}`
      const env = {
        TOOL: name,
        BEHAVIOUR: behaviour,
        ...(options.inputSchema && { SCHEMA: JSON.stringify(options.inputSchema) }),
      }
      const timeouts = options.timeoutMs
        ? { callMs: options.timeoutMs, maxCallMs: options.timeoutMs }
        : {}
      await h.add(
        key,
        fixture(key, 'conformance', {
          env,
          risk: options.risk,
          concurrency: options.concurrency,
          ...timeouts,
        }),
      )
      return toDisposer(() => h.remove(key))
    },
    close: () => h.close(),
  }
})

runStageConformance('mcp__everything__get-sum', async () => {
  const h = await mcpHarness()
  await h.add('everything', everything())
  return {
    runtime: h.rt,
    tool: 'mcp__everything__get-sum',
    validArgs: { a: 1, b: 2 },
    invalidArgs: { a: 'one' },
    check: (result) => assert.equal(text(result), 'The sum of 1 and 2 is 3.'),
    close: () => h.close(),
  }
})
