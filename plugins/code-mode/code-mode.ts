/**
 * CodeMode: one per instance. It registers `run_code`, keeps what each scope last listed (its
 * `visible` tap comes after every filter, so a scope's declarations never name a tool that scope
 * does not see), and rewrites the agent loop's requests per its `offer` (direct tools, code mode,
 * or both).
 */
import { GLOBAL, type RegisteredTool, type RuntimeApi, type ToolDefinition } from 'yoke'
import type { ModelRequest, ModelTool } from '../models/api.ts'
import { RUN_CODE, type CodeModeApi, type Executor } from './api.ts'
import { declarations, type Declarable } from './declarations.ts'
import { runProgram, type ProgramLimits } from './program.ts'
import { QuickJsExecutor } from './quickjs.ts'

export type Offer = 'direct' | 'code' | 'both'

export interface CodeModeConfig {
  offer: Offer
  limits: {
    memoryMb: number
    stackKb: number
    cpuMs: number
    outputBytes: number
    maxCalls: number
  }
  timeoutMs?: number
}

/** how many scopes' listings are kept (sessions come and go) */
const MAX_SCOPES = 256

/**
 * The default sandbox, shared by the instances of this module (a reloaded code-mode instance
 * finds its worker warm); its workers end when the last instance closes.
 */
const shared = { executor: undefined as QuickJsExecutor | undefined, users: 0 }

export class CodeMode implements CodeModeApi {
  /** what each scope listed last, after every filter: the declarations a program there gets */
  readonly #listed = new Map<string, readonly RegisteredTool[]>()
  /** run_code's description as each scope was last served it, and the tools it declares */
  readonly #described = new Map<string, { from: readonly RegisteredTool[]; description: string }>()
  readonly #quickjs: QuickJsExecutor
  #closed = false
  readonly limits: ProgramLimits

  constructor(
    private readonly runtime: RuntimeApi,
    private readonly config: CodeModeConfig,
    private readonly executorService: () => Executor | undefined = () => undefined,
  ) {
    this.#quickjs = shared.executor ??= new QuickJsExecutor()
    shared.users++
    const l = config.limits
    this.limits = {
      memoryBytes: l.memoryMb * 2 ** 20,
      stackBytes: l.stackKb * 1024,
      cpuMs: l.cpuMs,
      outputBytes: l.outputBytes,
      maxCalls: l.maxCalls,
    }
  }

  get executor(): Executor {
    return this.executorService() ?? this.#quickjs
  }

  /** Starts the default sandbox's worker ahead of the first program. */
  warm(): Promise<void> {
    return this.#quickjs.warm()
  }

  /** Lets go of the default sandbox: the last instance to close ends its workers. */
  close(): void {
    if (this.#closed) return
    this.#closed = true
    if (--shared.users > 0) return
    this.#quickjs.close()
    shared.executor = undefined
  }

  /** The `visible` tap: remembers a scope's listing (and passes it on untouched). */
  readonly listed = (tools: RegisteredTool[], scope: string): RegisteredTool[] => {
    keepRecent(this.#listed, scope, tools)
    return tools
  }

  /**
   * run_code's description where a scope is served `tools` (the gateway's tools/list): it declares
   * them. The last one is kept per scope and made again only when the tools are not the same ones.
   */
  describedFor(scope: string, tools: readonly RegisteredTool[]): string {
    const last = this.#described.get(scope)
    if (last?.from.length === tools.length && last.from.every((t, i) => t === tools[i]))
      return last.description
    const callable = tools.filter((t) => t.name !== RUN_CODE && t.name !== 'tool_search')
    const description = describe(this.limits, declarations(callable))
    keepRecent(this.#described, scope, { from: [...tools], description })
    return description
  }

  /** A tool changed: every listing may be stale, so the next `api()` lists again (or says it cannot). */
  changed(): void {
    this.#listed.clear()
  }

  declarations(scope = GLOBAL): string {
    const tools = this.#toolsOf(scope)
    if (!tools)
      return `// the tools of scope ${scope} have not been listed here yet: call the tools your tool list shows (tools.<server>.<tool> for mcp__<server>__<tool>, else tools.<name>)`
    return declarations(tools.filter((t) => t.name !== RUN_CODE))
  }

  /** What a scope may call: its last listing (a global one is made now when there is none). */
  #toolsOf(scope: string): readonly RegisteredTool[] | undefined {
    return this.#listingOf(scope) ?? (scope === GLOBAL ? this.runtime.list() : undefined)
  }

  /** A scope's last listing, else its nearest listed parent's (`view/session` → `view`). */
  #listingOf(scope: string): readonly RegisteredTool[] | undefined {
    for (let s = scope; ; s = s.slice(0, s.lastIndexOf('/'))) {
      const tools = this.#listed.get(s)
      if (tools) return tools
      if (!s.includes('/')) return undefined
    }
  }

  /** The `run_code` tool. */
  tool(): ToolDefinition {
    return {
      name: RUN_CODE,
      description: describe(this.limits, ''),
      describe: (scope, tools) => this.describedFor(scope, tools),
      inputSchema: {
        type: 'object',
        properties: {
          code: {
            type: 'string',
            minLength: 1,
            maxLength: 100_000,
            description:
              'the body of an async function: top-level await and return; what it returns is the answer',
          },
          language: {
            type: 'string',
            enum: ['javascript', 'typescript'],
            description: 'typescript: types are stripped before it runs (default javascript)',
          },
        },
        required: ['code'],
        additionalProperties: false,
      },
      concurrency: 'exclusive',
      risk: 'low',
      source: 'native',
      ...(this.config.timeoutMs && { timeoutMs: this.config.timeoutMs }),
      annotations: { title: 'Run a program that calls tools', openWorldHint: true },
      execute: (args, ctx) =>
        runProgram(
          {
            runtime: this.runtime,
            executor: this.executor,
            limits: this.limits,
            declarations: (scope) => this.declarations(scope),
            concurrencyOf: (name, scope) =>
              this.#toolsOf(scope)?.find((t) => t.name === name)?.concurrency,
          },
          String(args.code),
          args.language === 'typescript' ? 'typescript' : 'javascript',
          ctx,
        ),
    }
  }

  /**
   * The agent loop's request as the offer says: `direct` leaves run_code out, `code` offers it
   * (its description declaring every other tool of the turn) with tool_search beside it, `both`
   * offers it beside the direct tools. A request without run_code (the scope cannot see it, or
   * tool search deferred it) is left as it is.
   */
  offered(request: ModelRequest): ModelRequest {
    const run = request.tools.find((t) => t.name === RUN_CODE)
    if (!run) return request
    const others = request.tools.filter((t) => t !== run)
    if (this.config.offer === 'direct') return { ...request, tools: others }
    const callable = others.filter((t) => t.name !== 'tool_search')
    const described: ModelTool = {
      ...run,
      description: describe(this.limits, declarations(callable as Declarable[])),
    }
    const kept =
      this.config.offer === 'code' ? others.filter((t) => t.name === 'tool_search') : others
    return { ...request, tools: [...kept, described].sort((a, b) => (a.name < b.name ? -1 : 1)) }
  }
}

/** Sets `key` as the newest entry of `map`, dropping the oldest past MAX_SCOPES (sessions come and go). */
function keepRecent<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key)
  map.set(key, value)
  if (map.size > MAX_SCOPES) map.delete(map.keys().next().value!)
}

/** run_code's description: how to write a program, the limits, and the API (when known). */
export function describe(limits: ProgramLimits, api: string): string {
  const lines = [
    'Run a short JavaScript (or TypeScript) program that calls tools, and get back only what it returns: chain, loop over, filter and combine tool calls in one step instead of one call per turn.',
    '- The code is the body of an async function: use `await` and `return` at the top level.',
    "- A tool is `await tools.<server>.<tool>(args)` for an MCP server's tool (mcp__<server>__<tool>), `await tools.<name>(args)` for the others; `callTool(fullName, args)` calls any tool by its name.",
    "- A call resolves to the tool's structured result when it has one, else its text (JSON.parse it when it holds JSON). A failed call throws a ToolError (.code, .message, .hint) you may catch; a refused call (DENIED) ends the program.",
    `- console.log output comes back with the result. There is no process, require, import, fetch, timers or file system. Limits per run: ${limits.cpuMs} ms of CPU, ${Math.round(limits.memoryBytes / 2 ** 20)} MB of memory, ${limits.maxCalls} tool calls.`,
  ]
  lines.push(
    api
      ? `The tools you may call:\n${api}`
      : '- `return api()` returns the TypeScript declarations of the tools you may call here.',
  )
  return lines.join('\n')
}
