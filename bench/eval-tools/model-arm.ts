/**
 * The eval's model arm: what a real model picks when it searches with `tool_search` — the query
 * is the user's need; the model gets `tool_search` (yoke's finder over the corpus, answered as
 * the plugin answers, "no tool matches" with the closest named as not matches included) and
 * `choose_tool` (a name, or none), and may search again (the rephrase loop) up to `MAX_SEARCHES`
 * times. Scored: the served needs whose pick is a gold tool, and "none" as a no-match answer
 * (precision, recall, F1). Runs only with a key (ANTHROPIC_API_KEY or OPENAI_API_KEY;
 * YOKE_EVAL_MODEL names the model, OPENAI_BASE_URL / ANTHROPIC_BASE_URL another endpoint); the
 * eval says it skipped it otherwise.
 */
import type { RegisteredTool } from 'yoke'
import { createAnthropicModel } from '../../plugins/anthropic/client.ts'
import type { ChatMessage, ModelClient, ModelTool } from '../../plugins/models/model.ts'
import { createOpenAIModel } from '../../plugins/openai/client.ts'
import { describe } from '../../plugins/tool-search/answer.ts'
import type { ToolFinder } from '../../plugins/tool-search/finder.ts'
import type { Query } from './queries.ts'
import { f1, LIMIT } from './score.ts'

const MAX_SEARCHES = 3
const MAX_TURNS = 6

/** The model the arm asks, from the environment; undefined without a key (the reason says which to set). */
export function modelFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): { client: ModelClient } | { skipped: string } {
  const model = env.YOKE_EVAL_MODEL
  if (env.ANTHROPIC_API_KEY)
    return {
      client: createAnthropicModel({
        model: model ?? 'claude-haiku-4-5',
        apiKey: env.ANTHROPIC_API_KEY,
        baseUrl: env.ANTHROPIC_BASE_URL,
        stream: false,
      }),
    }
  if (env.OPENAI_API_KEY)
    return {
      client: createOpenAIModel({
        model: model ?? 'gpt-4o-mini',
        apiKey: env.OPENAI_API_KEY,
        baseUrl: env.OPENAI_BASE_URL,
        stream: false,
      }),
    }
  return {
    skipped:
      'skipped: no key (set ANTHROPIC_API_KEY or OPENAI_API_KEY; YOKE_EVAL_MODEL picks the model)',
  }
}

const TOOLS: ModelTool[] = [
  {
    name: 'tool_search',
    description:
      'Find a tool: describe the task (what it acts on and what it does), or name the tool. When nothing fits it says "no tool matches".',
    inputSchema: {
      type: 'object',
      properties: { query: { type: 'string' } },
      required: ['query'],
    },
  },
  {
    name: 'choose_tool',
    description:
      'Your answer: the one tool (its exact name as tool_search gave it) that serves the need, or none when no tool here does.',
    inputSchema: {
      type: 'object',
      properties: { name: { type: 'string', description: 'the tool, or "none"' } },
      required: ['name'],
    },
  },
]

const SYSTEM =
  'You pick the tool for a user need. Search with tool_search (more than once if the first search finds nothing that fits), then answer with choose_tool: a tool name tool_search gave you, or "none" if no tool here serves the need. Do not guess names.'

/** One need through the model: its pick (a tool name, "none", or undefined: it never chose) and how many searches. */
export async function pick(
  client: ModelClient,
  finder: ToolFinder,
  tools: readonly RegisteredTool[],
  need: string,
): Promise<{ picked?: string; searches: number }> {
  const messages: ChatMessage[] = [{ role: 'user', content: need }]
  let searches = 0
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const response = await client.complete({ system: SYSTEM, messages, tools: TOOLS })
    messages.push({ role: 'assistant', content: response.text, toolCalls: response.toolCalls })
    if (!response.toolCalls.length) return { searches }
    for (const call of response.toolCalls) {
      const args = (typeof call.args === 'string' ? JSON.parse(call.args) : call.args) as {
        query?: string
        name?: string
      }
      if (call.name === 'choose_tool') return { picked: String(args.name ?? 'none'), searches }
      const query = String(args.query ?? '')
      const content =
        ++searches > MAX_SEARCHES
          ? 'No more searches: choose now.'
          : describe(query, await finder.search(query, tools, LIMIT))
      messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content })
    }
  }
  return { searches }
}

export interface ModelArmScores {
  /** served needs whose pick is a gold tool */
  accuracy: number
  nmP: number
  nmR: number
  nmF1: number
  /** mean searches per need (above 1: the model rephrased) */
  searches: number
}

/** The arm over a set of needs; `golds[i]` the tools that serve `queries[i]` (empty: none does). */
export async function modelArm(
  client: ModelClient,
  finder: ToolFinder,
  tools: readonly RegisteredTool[],
  queries: readonly Query[],
  golds: readonly Set<string>[],
): Promise<ModelArmScores> {
  let served = 0
  let right = 0
  let said = 0
  let rightNone = 0
  let none = 0
  let searches = 0
  for (const [i, q] of queries.entries()) {
    const { picked, searches: n } = await pick(client, finder, tools, q.q)
    searches += n
    const saidNone = !picked || picked.toLowerCase() === 'none'
    if (saidNone) said++
    if (!golds[i]!.size) {
      none++
      if (saidNone) rightNone++
    } else {
      served++
      if (picked && golds[i]!.has(picked)) right++
    }
  }
  const nmP = said ? rightNone / said : 0
  const nmR = none ? rightNone / none : 0
  return {
    accuracy: served ? right / served : 0,
    nmP,
    nmR,
    nmF1: f1(nmP, nmR),
    searches: queries.length ? searches / queries.length : 0,
  }
}
