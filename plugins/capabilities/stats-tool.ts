/**
 * `capability_stats`: the metrics rows as a read-only tool, so an MCP client of the gateway (or
 * the model itself) can read them through whatever view lists it. It reports only the tools the
 * calling scope can see itself: a view's masked tools and other sessions' tools stay out.
 */
import type { ToolDefinition } from 'yoke'
import type { MetricsRow } from './api.ts'
import { globToRegExp } from 'yoke'

export function statsTool(
  rowsFor: (scope: string) => MetricsRow[],
  /** with a store: brings the merged rows up to date first (undefined: nothing to wait for) */
  fresh: () => Promise<void> | undefined = () => undefined,
): ToolDefinition {
  return {
    name: 'capability_stats',
    description:
      'Usage metrics per capability id and version: times offered, found by tool_search, called, ok, each error code, p50 and p95 latency (ms). Read-only.',
    inputSchema: {
      type: 'object',
      properties: {
        id: { type: 'string', maxLength: 200, description: 'a tool name or glob (default all)' },
      },
      additionalProperties: false,
    },
    source: 'capabilities',
    risk: 'low',
    concurrency: 'safe',
    annotations: { readOnlyHint: true },
    execute(args, context) {
      const wait = fresh()
      return wait ? wait.then(() => answer(args, context)) : answer(args, context)
    },
  }

  function answer({ id }: Record<string, unknown>, { call }: { call: { scope: string } }) {
    const match = typeof id === 'string' && id ? globToRegExp(id) : undefined
    const rows = rowsFor(call.scope).filter((r) => !match || match.test(r.id))
    const lines = rows.map(
      (r) =>
        `${r.id}@${r.version ?? r.hash}: offered ${r.offered}, found ${r.found}, called ${r.called}, ok ${r.ok}` +
        `${
          Object.keys(r.errors).length
            ? `, ${Object.entries(r.errors)
                .map(([c, n]) => `${c} ${n}`)
                .join(', ')}`
            : ''
        }` +
        `${r.p50 !== undefined ? `, p50 ${r.p50} ms, p95 ${r.p95} ms` : ''}`,
    )
    return {
      content: [{ type: 'text', text: lines.join('\n') || 'no capability has been used yet' }],
      structured: { rows },
    }
  }
}
