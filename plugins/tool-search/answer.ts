/**
 * @module tool-search/answer
 * How tool_search words its answer: each candidate with its id, version, source, risk, score and
 * why, and whether words and meaning ranked it; or "no tool matches" with what to try instead.
 */
import { createHash } from 'node:crypto'
import type { RegisteredTool } from 'yoke'
import type { FoundTool } from './api.ts'
import type { FinderOutcome } from './finder.ts'

export function asCandidate({ item, score, why }: FinderOutcome['candidates'][number]): FoundTool {
  const description = (item.description ?? '').split('\n')[0]!.slice(0, 200)
  // an exact name outranks every score: it has none (JSON has no Infinity)
  const exact = !Number.isFinite(score)
  return {
    id: item.name,
    version: versionOf(item),
    name: item.name,
    source: item.source,
    risk: item.risk,
    description,
    score: exact ? null : Math.round(score * 1000) / 1000,
    exact,
    why,
  }
}

/**
 * The version its source declares (an exec package's manifest, an MCP server's serverInfo when
 * the client annotates it), else `sha256:` and 12 hex digits of the definition.
 */
const versions = new WeakMap<RegisteredTool, string>()
function versionOf(tool: RegisteredTool): string {
  const { version, mcpServerVersion } = (tool.annotations ?? {}) as Record<string, unknown>
  const declared = [version, mcpServerVersion].find((v) => typeof v === 'string')
  if (declared) return declared as string
  let hash = versions.get(tool)
  if (!hash) {
    const { name, description, inputSchema, outputSchema, risk, source } = tool
    const text = JSON.stringify({ name, description, inputSchema, outputSchema, risk, source })
    hash = `sha256:${createHash('sha256').update(text).digest('hex').slice(0, 12)}`
    versions.set(tool, hash)
  }
  return hash
}

/** `words and meaning`, or why meaning took no part. */
function armsSaid(outcome: FinderOutcome): string {
  if (outcome.arms === 'hybrid') return 'by words and meaning'
  const why: Record<FinderOutcome['semantic'], string> = {
    off: 'semantic search is off',
    idle: 'the embedding model has not started',
    loading: 'the embedding model is still loading',
    ready: 'the query names a tool, or the tools are not embedded yet',
    failed: 'the embedding model is not available',
  }
  return `by words only: ${why[outcome.semantic]}`
}

export function describe(query: string, outcome: FinderOutcome): string {
  if (outcome.noMatch) return noMatchSaid(query, outcome)
  const lines = outcome.candidates.map((c) => {
    const { name, source, risk, description, score, why } = asCandidate(c)
    const rank = score === null ? 'exact' : score.toFixed(2)
    return `- ${name} (${source}, ${risk} risk; ${rank}: ${why}): ${description}`
  })
  return [
    `Found ${lines.length} (${armsSaid(outcome)}; callable from your next step):`,
    ...lines,
  ].join('\n')
}

/**
 * "No tool matches", with the closest candidates named as what they are (not matches, not
 * loaded) and their one-line summaries, so that the model can rephrase the need once in the
 * tools' own terms, or see that nothing here serves it.
 */
function noMatchSaid(query: string, outcome: FinderOutcome): string {
  const closest = outcome.candidates.slice(0, 3).map((c) => {
    const { name, source, description } = asCandidate(c)
    return `- ${name} (${source}): ${description || 'no description'}`
  })
  return [
    `No tool matches "${query}". Nothing here scores well enough to be a match, so nothing was loaded.`,
    ...(closest.length
      ? [
          'The closest, which are NOT matches (shown so that you can judge, not to call):',
          ...closest,
          'If one of these is what the user meant, search again in its terms (what it acts on and what it does, or its name). If none is, there is no tool here for that: say so, or ask the user; do not guess a tool name.',
        ]
      : [
          'There is no tool here for that: say so, or ask the user; do not guess a tool name. To search again, name what the tool acts on (a file, an issue, a message) or where it is.',
        ]),
    'Rephrase at most once: if the rephrased search finds nothing either, nothing here serves it.',
  ].join('\n')
}
