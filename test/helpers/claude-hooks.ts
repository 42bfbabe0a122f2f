/**
 * The claude-hooks tests' bench. `openaiAgentSuite`: before a suite, a model server speaking
 * OpenAI's wire format and an agent harness whose model is the openai provider pointed at it;
 * closed after the suite. `claudeHooksSuite` adds what the hooks tests do with it: hooks.json files
 * installed as claude-hooks instances (each removed after its test), the hook programs they run,
 * and the tools they hook. Call both inside a `describe`; `server` and `h` are set once its
 * `before` has run.
 *
 *   const suite = claudeHooksSuite({ keyEnv: 'TEST_X_KEY', prefix: 'x', tools: (rt) => … })
 *   let h: AgentHarness
 *   before(() => ({ h } = suite))
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, afterEach, before } from 'node:test'
import claudeHooks from '../../plugins/claude-hooks/index.ts'
import openai from '../../plugins/openai/index.ts'
import type { Context, Fiber, RuntimeApi } from '../../src/index.ts'
import { hookProgram, shQuote } from '../conformance/hooks.ts'
import { agentHarness, type AgentHarness } from './agent.ts'
import { modelServer, type ModelServer } from './model-server.ts'

/** A hook program's body that prints `value` as JSON on stdout (how a command hook answers). */
export const printJson = (value: unknown) => `printf '%s' ${shQuote(JSON.stringify(value))}`

/** A body that answers `{ hookSpecificOutput: { hookEventName: event, ...fields } }`. */
export const printSpecific = (event: string, fields: Record<string, unknown>) =>
  printJson({ hookSpecificOutput: { hookEventName: event, ...fields } })

/** A command handler running `file`, with more of its fields (`if`, `asyncRewake`, …). */
export const command = (file: string, more = {}) => ({ type: 'command', command: file, ...more })

/** A matcher group (no `matcher` when it is undefined) of `hooks`. */
export const group = (matcher: string | undefined, ...hooks: unknown[]) => ({
  ...(matcher !== undefined && { matcher }),
  hooks,
})

export interface OpenaiAgent {
  readonly server: ModelServer
  readonly h: AgentHarness
}

/** The model server and the agent harness on it, for the suite this is called in. */
export function openaiAgentSuite(options: {
  /** the variable the openai instance reads its key from (set here to a test key) */
  keyEnv: string
  extra?: Array<[unknown, unknown, string]>
}): OpenaiAgent {
  process.env[options.keyEnv] = 'sk-test'
  const suite = {} as { server: ModelServer; h: AgentHarness }
  before(async () => {
    suite.server = await modelServer()
    suite.h = await agentHarness({
      model: [
        openai,
        {
          model: 'gpt-test',
          apiKeyEnv: options.keyEnv,
          baseUrl: suite.server.openaiBaseUrl,
          maxRetries: 0,
        },
      ],
      extra: options.extra,
    })
  })
  after(async () => {
    await suite.h?.close()
    await suite.server?.close()
  })
  return suite
}

/** A tool call as a test tool recorded it. */
export type Ran = Array<{ tool: string; args: unknown }>

/**
 * `names` as tools taking a string `command` (nothing else) whose bodies record each call in `ran`
 * and answer `answer(name, command)`.
 */
export function commandTools(
  runtime: RuntimeApi,
  ran: Ran,
  names: string[],
  answer: (name: string, command: string) => string,
): void {
  const inputSchema = {
    type: 'object',
    properties: { command: { type: 'string' } },
    additionalProperties: false,
  }
  for (const name of names)
    runtime.register({
      name,
      inputSchema,
      execute: (args) => (ran.push({ tool: name, args }), answer(name, String(args.command))),
    })
}

export interface HooksSuite extends OpenaiAgent {
  /**
   * A claude-hooks instance for `hooks`, written as `<prefix>-<n>.json` in the project, with more
   * config (`toolNames`, `pluginRoot`, …); it is active, and goes after the test.
   */
  install(
    hooks: Record<string, unknown>,
    extra?: Record<string, unknown>,
  ): Promise<{ fiber: Fiber; file: string }>
  /** A claude-hooks instance with `config` as it is, going after the test. */
  add(config: Record<string, unknown>): Promise<Fiber>
  /** A hook program `<prefix>-<n>.sh` in the project, recording the payloads it is given. */
  program(body: string): ReturnType<typeof hookProgram>
}

/**
 * `openaiAgentSuite` with the tools `tools` registers (a plugin spawned before the model), and
 * claude-hooks instances installed by the tests, each removed after its test.
 */
export function claudeHooksSuite(options: {
  keyEnv: string
  /** how files, instances and programs are named: `<prefix>-<n>` */
  prefix: string
  /** registers the tools the hooks are tried on */
  tools(runtime: RuntimeApi): void
}): HooksSuite {
  const tools = {
    name: 'test-tools',
    inject: ['runtime'],
    apply: (ctx: Context & { runtime: RuntimeApi }) => options.tools(ctx.runtime),
  }
  const agent = openaiAgentSuite({ keyEnv: options.keyEnv, extra: [[tools, {}, 'tools']] })
  const added: Fiber[] = []
  let n = 0
  afterEach(async () => {
    for (const f of added.splice(0)) await agent.h.kernel.remove(f)
  })
  const spawn = async (config: Record<string, unknown>, key: string) => {
    const fiber = await agent.h.add(claudeHooks, config, key)
    added.push(fiber)
    return fiber
  }
  return Object.assign(agent, {
    add: (config: Record<string, unknown>) => spawn(config, `${options.prefix}-${++n}`),
    async install(hooks: Record<string, unknown>, extra: Record<string, unknown> = {}) {
      const key = `${options.prefix}-${++n}`
      const file = join(agent.h.root, `${key}.json`)
      writeFileSync(file, JSON.stringify({ hooks }, null, 2))
      const fiber = await spawn({ files: [`${key}.json`], ...extra }, key)
      await agent.h.kernel.settled()
      assert.equal(fiber.state, 'active', fiber.error?.message)
      return { fiber, file }
    },
    program: (body: string) => hookProgram(agent.h.root, `${options.prefix}-${++n}.sh`, body),
  })
}
