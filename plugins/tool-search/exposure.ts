/**
 * @module tool-search/exposure
 * Which tools a model gets with their schema every turn. Each tool has a declared level — pinned
 * (always direct), else the first rule its name or source matches, else the default — and `auto`
 * is decided for all at once: direct while the schemas of the scope's offered tools fit the token
 * budget, deferred beyond it. Tokens are counted with a real tokenizer (o200k, GPT-4o's), on the
 * JSON a provider sends for a tool.
 */
import { globToRegExp, type RegisteredTool } from 'yoke'
import type { Exposure } from './api.ts'

export type Level = Exposure | 'auto'

export interface ExposureRule {
  tool: string
  source?: string
  level: Level
}

export interface ExposureConfig {
  default: Level
  budgetTokens: number
  pinned: readonly string[]
  rules: readonly ExposureRule[]
}

type CountTokens = (text: string) => number
let tokenizer: Promise<CountTokens> | undefined
/** The tokenizer loads once, on first use (its tables take a while). */
export function countTokensLoaded(): Promise<CountTokens> {
  return (tokenizer ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => m.countTokens))
}

export class ExposurePlan {
  readonly #tokens = new WeakMap<RegisteredTool, number>()
  /** each tool's declared level (a tool is frozen: its name and source never change) */
  readonly #declared = new WeakMap<RegisteredTool, Level>()
  readonly #pinned: RegExp[]
  readonly #rules: Array<{ tool: RegExp; source?: RegExp; level: Level }>

  constructor(readonly config: ExposureConfig) {
    this.#pinned = config.pinned.map((g) => globToRegExp(g))
    this.#rules = config.rules.map((r) => ({
      tool: globToRegExp(r.tool),
      source: r.source === undefined ? undefined : globToRegExp(r.source),
      level: r.level,
    }))
  }

  declared(tool: RegisteredTool): Level {
    let level = this.#declared.get(tool)
    if (level === undefined) this.#declared.set(tool, (level = this.#declare(tool)))
    return level
  }

  #declare(tool: RegisteredTool): Level {
    if (this.#pinned.some((g) => g.test(tool.name))) return 'direct'
    const rule = this.#rules.find(
      (r) => r.tool.test(tool.name) && (!r.source || r.source.test(tool.source)),
    )
    return rule?.level ?? this.config.default
  }

  /** Every tool's exposure, `auto` decided against the budget. */
  async resolve(tools: readonly RegisteredTool[]): Promise<Map<string, Exposure>> {
    const declared = tools.map((tool) => [tool, this.declared(tool)] as const)
    const candidates = declared.filter(([, level]) => level === 'direct' || level === 'auto')
    const autos = candidates.some(([, level]) => level === 'auto')
    const fits =
      !autos || (await this.tokensOf(candidates.map(([t]) => t))) <= this.config.budgetTokens
    return new Map(
      declared.map(([tool, level]) => [
        tool.name,
        level === 'auto' ? (fits ? 'direct' : 'deferred') : level,
      ]),
    )
  }

  /** The tokens of these tools' schemas as a model request carries them. */
  async tokensOf(tools: readonly RegisteredTool[]): Promise<number> {
    const count = await countTokensLoaded()
    let total = 0
    for (const tool of tools) {
      let tokens = this.#tokens.get(tool)
      if (tokens === undefined) {
        tokens = count(schemaText(tool))
        this.#tokens.set(tool, tokens)
      }
      total += tokens
    }
    return total
  }
}

/** A tool as a provider's request declares it (Anthropic's shape; OpenAI's differs by a few keys). */
export function schemaText(tool: RegisteredTool): string {
  return JSON.stringify({
    name: tool.name,
    description: tool.description ?? '',
    input_schema: tool.inputSchema,
  })
}
