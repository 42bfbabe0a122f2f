// Quiet event streams get `: keep-alive` comments (http.keepAliveMs), so a balancer's idle timeout
// does not cut them: a 2025-era session's GET stream and a long call answered as a stream carry
// them while nothing else happens, the v1 SDK client reads its result through them, and an answer
// that is JSON (a 2026-07-28 request) has none. The period is the test's: 100 ms.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import mcpServer, { type McpServerApi } from '../../../plugins/mcp-server/index.ts'
import { KEEP_ALIVE } from '../../../plugins/mcp-server/keepalive.ts'
import { toPlugin, type Plugin } from '../../../src/index.ts'
import { spawnActive } from '../../helpers/kernel.ts'
import { mcpHarness, type McpHarness } from '../../helpers/mcp.ts'
import { modernPost } from '../../helpers/modern.ts'
import { until } from '../../helpers/until.ts'

const TOKEN = 'keepalive-token-0123456789abcdef'

describe('keep-alive comments on quiet event streams', () => {
  let h: McpHarness
  let url: string
  const held: Array<() => void> = []
  before(async () => {
    h = await mcpHarness()
    h.kernel.spawn(
      toPlugin({
        name: 'holder',
        inject: ['runtime'],
        apply: (ctx: any) =>
          void ctx.runtime.register({
            name: 'hold',
            concurrency: 'safe',
            risk: 'low',
            inputSchema: { type: 'object' },
            execute: () => new Promise<string>((resolve) => held.push(() => resolve('released'))),
          }),
      }) as Plugin,
      {},
      { key: 'holder' },
    )
    await spawnActive(h.kernel, mcpServer, { token: TOKEN, http: { keepAliveMs: 100 } }, 'gateway')
    url = (h.kernel.services.get('mcpServer')!.value as McpServerApi).url!
  })
  after(() => h.close())

  it('a quiet stream carries them, and the SDK client reads its result through them', async () => {
    /** what every event stream the client opened carried, in full */
    const streams: string[] = []
    const tee = async (input: string | URL | Request, init?: RequestInit) => {
      const res = await fetch(input, init)
      if (!res.headers.get('content-type')?.startsWith('text/event-stream') || !res.body) return res
      const [mine, theirs] = res.body.tee() as unknown as [
        AsyncIterable<Uint8Array>,
        ReadableStream,
      ]
      const i = streams.push('') - 1
      void (async () => {
        const decoder = new TextDecoder()
        try {
          for await (const chunk of mine) streams[i] += decoder.decode(chunk, { stream: true })
        } catch {
          // the client closed it
        }
      })()
      return new Response(theirs, { status: res.status, headers: res.headers })
    }
    const client = new V1Client({ name: 'keepalive', version: '1' })
    await client.connect(
      new V1Transport(new URL(url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
        fetch: tee,
      }),
    )
    try {
      const call = client.callTool({ name: 'hold', arguments: {} })
      await until('the call to reach the tool', () => held.length === 1)
      const count = (text: string) => text.split(KEEP_ALIVE).length - 1
      await until(
        `the GET stream and the call's stream to carry two keep-alive comments each (${JSON.stringify(streams)})`,
        // the first is initialize's answer, ended at once
        () => streams.length === 3 && streams.slice(1).every((text) => count(text) >= 2),
        { ms: 20_000 },
      )
      held.shift()!()
      const result = await call
      assert.deepEqual(result.content, [{ type: 'text', text: 'released' }])
    } finally {
      await client.close()
    }
  })

  it('a JSON answer carries none', async () => {
    const { res } = await modernPost(url, 'tools/list', {}, { token: TOKEN, client: 'keepalive' })
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
    const body = await res.text()
    assert.doesNotMatch(body, /keep-alive/)
    assert.ok(JSON.parse(body).result.tools.some((t: { name: string }) => t.name === 'hold'))
  })
})
