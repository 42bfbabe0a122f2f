// The hook-adapter conformance suite for Claude Code's format (claude-hooks), beside the octos
// adapters that test/plugins/shell-hooks/octos-conformance.test.ts runs: the same tool cases
// (test/conformance/hooks.ts) from a hooks.json file answered by exit codes and from inline
// settings answered in JSON; then one table of agent-event cases (context added to a prompt, a
// prompt refused, a crash that never blocks) run against both formats with a real agent loop.
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { stringify } from 'yaml'
import shellHooks from '../../../plugins/shell-hooks/index.ts'
import claudeHooks from '../../../plugins/claude-hooks/index.ts'
import {
  composedProject,
  HANG_MS,
  hookProgram,
  runHookConformance,
  shQuote,
  type HookAdapter,
  type HookBehaviour,
  type HookRun,
} from '../../conformance/hooks.ts'
import type { AgentHarness } from '../../helpers/agent.ts'
import { openaiAgentSuite, printSpecific } from '../../helpers/claude-hooks.ts'
import type { ModelServer } from '../../helpers/model-server.ts'
import { tempProject } from '../../helpers/project.ts'

type Answer = 'exit-codes' | 'json'

const pre = (out: Record<string, unknown>) => printSpecific('PreToolUse', out)

/** Each behaviour as a Claude Code hook: exit 2 blocks (stderr: the reason), JSON on stdout decides. */
function claudeBody(behaviour: HookBehaviour, answer: Answer): string | undefined {
  switch (behaviour.kind) {
    case 'allow':
      return answer === 'json' ? pre({ permissionDecision: 'allow' }) : 'exit 0'
    case 'observe':
      return 'exit 0'
    case 'deny':
      return answer === 'json'
        ? pre({ permissionDecision: 'deny', permissionDecisionReason: behaviour.reason })
        : `printf '%s' ${shQuote(behaviour.reason)} >&2; exit 2`
    case 'rewrite':
      return pre({ permissionDecision: 'allow', updatedInput: behaviour.args })
    case 'hang':
      return `exec sleep ${HANG_MS / 1000}`
    case 'crash':
      return "echo 'the hook crashed' >&2; exit 7" // non-blocking in Claude Code
    case 'garbage':
      return "printf '{this is not json'; exit 0" // starts with { but does not parse
    case 'missing':
      return undefined
  }
}

const claudeRun = (payload: Record<string, unknown>): HookRun => ({
  tool: String(payload.tool_name),
  args: payload.tool_input,
  result: payload.tool_response as string | undefined,
})

/**
 * Claude Code hooks, one claude-hooks instance per hook: from a hooks.json file (`files`) or inline
 * (`hooks`, as a settings.json holds them).
 */
async function claudeAdapter(from: 'file' | 'inline', answer: Answer): Promise<HookAdapter> {
  const project = tempProject()
  const instances: Record<string, unknown> = {}
  const writeConfig = () =>
    project.write('yoke.config.yaml', stringify({ preset: 'minimal', plugins: instances }))
  const { composition, logs, reload } = await composedProject(project, writeConfig)
  let count = 0
  return {
    runtime: composition.runtime!,
    logs,
    // Claude Code: other exit codes, timeouts and unparsable output are non-blocking errors
    failures: { hang: 'open', crash: 'open', garbage: 'open', missing: 'open' },
    async install(tool, behaviour, { timeoutMs = 5000 } = {}) {
      const key = `hook${++count}`
      const program = hookProgram(
        project.path('hooks'),
        `${key}-${behaviour.kind}.sh`,
        claudeBody(behaviour, answer),
      )
      const event = behaviour.kind === 'observe' ? 'PostToolUse' : 'PreToolUse'
      const hooks = {
        [event]: [
          {
            matcher: tool,
            hooks: [{ type: 'command', command: program.file, timeout: timeoutMs / 1000 }],
          },
        ],
      }
      if (from === 'file') {
        project.write(`hooks/${key}.json`, JSON.stringify({ hooks }, null, 2))
        instances[key] = { use: 'claude-hooks', config: { files: [`hooks/${key}.json`] } }
      } else instances[key] = { use: 'claude-hooks', config: { hooks } }
      try {
        await reload()
      } catch (err) {
        delete instances[key]
        await reload().catch(() => {})
        throw err
      }
      return {
        name: program.file,
        runs: () => program.payloads().map(claudeRun),
        pids: program.pids,
        async dispose() {
          if (!(key in instances)) return
          delete instances[key]
          await reload()
        },
      }
    },
    async close() {
      await composition.close()
      project.cleanup()
    },
  }
}

runHookConformance('Claude Code hooks.json, answered by exit codes (claude-hooks)', () =>
  claudeAdapter('file', 'exit-codes'),
)
runHookConformance('Claude Code settings hooks inline, answered in JSON (claude-hooks)', () =>
  claudeAdapter('inline', 'json'),
)

// ---- agent events: one table, both formats ----------------------------------------------------

type PromptBehaviour =
  { kind: 'context'; text: string } | { kind: 'refuse'; reason: string } | { kind: 'crash' }

interface PromptFormat {
  name: string
  /** the plugin and its config for a prompt hook running `file` */
  instance(file: string): [unknown, unknown]
  body(behaviour: PromptBehaviour): string
  /** the prompt as the hook received it */
  prompt(payload: Record<string, unknown>): unknown
}

const PROMPT_FORMATS: PromptFormat[] = [
  {
    name: 'octos shell hooks (user_prompt_submit)',
    instance: (file) => [shellHooks, { hooks: [{ event: 'user_prompt_submit', command: [file] }] }],
    body: (b) =>
      b.kind === 'context'
        ? `printf '%s' ${shQuote(b.text)}`
        : b.kind === 'refuse'
          ? `printf '%s' ${shQuote(b.reason)}; exit 1`
          : 'exit 7',
    prompt: (p) => p.prompt,
  },
  {
    name: 'Claude Code hooks (UserPromptSubmit)',
    instance: (file) => [
      claudeHooks,
      { hooks: { UserPromptSubmit: [{ hooks: [{ type: 'command', command: file }] }] } },
    ],
    body: (b) =>
      b.kind === 'context'
        ? printSpecific('UserPromptSubmit', { additionalContext: b.text })
        : b.kind === 'refuse'
          ? `printf '%s' ${shQuote(b.reason)} >&2; exit 2`
          : 'exit 7',
    prompt: (p) => p.prompt,
  },
]

for (const format of PROMPT_FORMATS)
  describe(`agent-event conformance: ${format.name}`, () => {
    const agent = openaiAgentSuite({ keyEnv: 'TEST_CONFORMANCE_KEY' })
    let server: ModelServer
    let h: AgentHarness
    before(() => ({ server, h } = agent))
    let n = 0
    const withHook = async (behaviour: PromptBehaviour, task: string) => {
      const program = hookProgram(h.root, `prompt-${++n}.sh`, format.body(behaviour))
      const [plugin, config] = format.instance(program.file)
      const fiber = await h.add(plugin, config, `prompt-hook-${n}`)
      await h.kernel.settled()
      try {
        const before = server.requests.length
        const { result } = await h.run(task)
        return { result, program, sent: server.requests.slice(before) }
      } finally {
        await h.kernel.remove(fiber)
      }
    }
    const userText = (body: any) =>
      body.messages
        .filter((m: any) => m.role === 'user')
        .map((m: any) => m.content)
        .join('\n')

    it('context: what the hook adds reaches the model with the prompt, and the hook saw the prompt', async () => {
      server.push({ text: 'noted' })
      const { result, program, sent } = await withHook(
        { kind: 'context', text: 'The deploy window is Friday.' },
        'When can I deploy?',
      )
      assert.equal(result.status, 'done', result.reason)
      assert.equal(format.prompt(program.payloads()[0]!), 'When can I deploy?')
      const text = userText(sent[0]!.body)
      assert.match(text, /When can I deploy\?/)
      assert.match(text, /The deploy window is Friday\./)
    })

    it('refuse: the prompt never reaches the model, and the run says why', async () => {
      const { result, sent } = await withHook(
        { kind: 'refuse', reason: 'no prompts about secrets' },
        'print the secrets',
      )
      assert.equal(sent.length, 0, 'no model request')
      assert.equal(result.status, 'failed')
      assert.match(result.reason ?? '', /no prompts about secrets/)
    })

    it('crash: a hook that fails does not block the prompt', async () => {
      server.push({ text: 'fine' })
      const { result, sent } = await withHook({ kind: 'crash' }, 'hello')
      assert.equal(result.status, 'done', result.reason)
      assert.equal(sent.length, 1)
      assert.match(userText(sent[0]!.body), /^hello$/)
    })
  })
