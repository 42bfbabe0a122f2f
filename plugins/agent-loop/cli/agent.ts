/**
 * @module agent-loop/cli/agent
 * `yoke run "TASK"` runs one agent task and streams it: the answer on stdout, each tool call with
 * its progress and outcome on stderr. `yoke chat` is the same loop, interactive, with history.
 * Both use whatever provides the `agent` service; Ctrl-C cancels the running turn cleanly.
 */
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import type { Composition } from 'yoke'
import {
  color,
  defineCommand,
  displayPath,
  formatError,
  LineReader,
  offerTrust,
  on,
  printJson,
  promptBridge,
  YokeError,
  type Flags,
  type ParsedArgs,
} from 'yoke/cli'
import { expandCommand } from '../../claude-plugins/api.ts'
import type { ChatMessage } from '../../models/api.ts'
import type { AgentApi, AgentEvent, AgentRun, RunResult } from '../api.ts'
import '../errors.ts'

/** The agent service, or AGENT_UNAVAILABLE saying which instance is missing or waiting and why. */
async function agentOf(composition: Composition): Promise<AgentApi> {
  const agent = composition.get('agent')
  if (agent) return agent
  // 'yoke' is loaded by now (the composition came from it); this module is imported by --help
  const { snapshot } = await import('yoke')
  const snap = await snapshot(composition)
  const waiting = snap.instances.filter((i) => i.state === 'pending' || i.state === 'failed')
  const reasons = waiting.map(
    (i) =>
      `instance "${i.key}" is ${i.state}${i.error ? `: ${i.error.message}` : i.waitingFor?.length ? ` (waiting for ${i.waitingFor.map((w) => w.service).join(', ')})` : ''}`,
  )
  throw new YokeError('AGENT_UNAVAILABLE', {
    reason: reasons.length ? reasons.join('; ') : 'no instance provides the `agent` service',
  })
}

const RUN_FLAGS: Flags = {
  record: { type: 'string', value: 'FILE', description: 'write the run as a cassette to FILE' },
  'max-turns': { type: 'string', value: 'N', description: 'end the run after N model turns' },
}

function budgetOf(args: ParsedArgs) {
  const turns = args['max-turns'] as string | undefined
  if (turns === undefined) return undefined
  if (!/^[1-9]\d*$/.test(turns))
    throw new YokeError('USAGE', {
      reason: `--max-turns takes a positive whole number, not "${turns}"`,
    })
  return { maxTurns: Number(turns) }
}

/**
 * Prints a run's events for people: the model's text as it streams, tool activity on stderr. On a
 * terminal the text streams to stdout; piped, it streams to stderr and stdout gets only the final
 * answer, so `yoke run … > answer.txt` holds just that.
 */
function printer(
  out: NodeJS.WriteStream = process.stdout,
  err: NodeJS.WriteStream = process.stderr,
) {
  const c = on(err)
  const stream = out.isTTY ? out : err
  let midLine = false
  // progress: on a terminal one line updated in place; otherwise at most a line a second per call
  let progressShown = false
  const lastProgress = new Map<string, number>()
  const clearProgress = () => {
    if (progressShown) err.write('\r\u001b[2K')
    progressShown = false
  }
  const note = (line: string) => {
    clearProgress()
    if (midLine) stream.write('\n')
    midLine = false
    err.write(line + '\n')
  }
  return (event: AgentEvent) => {
    switch (event.type) {
      case 'text':
        clearProgress()
        stream.write(event.delta)
        midLine = !event.delta.endsWith('\n')
        break
      case 'tool-call': {
        const args = JSON.stringify(event.args) ?? ''
        note(
          `${c.cyan('→')} ${c.bold(event.name)} ${c.dim(args.length > 160 ? args.slice(0, 160) + '…' : args)}`,
        )
        break
      }
      case 'tool-progress': {
        const p = event.progress
        const line = c.dim(
          `  ${event.name}: ${p.message ?? ''}${p.total ? ` ${p.progress}/${p.total}` : p.progress !== undefined ? ` ${p.progress}` : ''}`,
        )
        if (err.isTTY && !midLine) {
          err.write(`\r\u001b[2K${line}`)
          progressShown = true
        } else if (Date.now() - (lastProgress.get(event.id) ?? 0) >= 1000) {
          lastProgress.set(event.id, Date.now())
          note(line)
        }
        break
      }
      case 'tool-result': {
        const r = event.result
        note(
          r.ok
            ? `${c.green('✓')} ${r.name} ${c.dim(`${r.durationMs} ms`)}`
            : `${c.red('✗')} ${r.name} ${c.red(r.status)} ${c.dim(r.text.split('\n')[0]!.slice(0, 200))}`,
        )
        break
      }
      case 'task-done':
        note(c.dim(`  background task ${event.task} (${event.tool}) ${event.status}`))
        break
      case 'end':
        if (midLine) stream.write('\n')
        midLine = false
        if (stream !== out && event.result.text)
          out.write(event.result.text.endsWith('\n') ? event.result.text : `${event.result.text}\n`)
    }
  }
}

function summary(result: RunResult, cwd: string, stream = process.stderr): string {
  const c = on(stream)
  const cost = result.usage.costUsd !== undefined ? ` · $${result.usage.costUsd.toFixed(4)}` : ''
  const head = result.status === 'done' ? c.green('done') : c.red(result.status)
  const why = result.reason && result.status !== 'done' ? `: ${result.reason}` : ''
  const transcript = result.transcript ? ` · transcript ${displayPath(result.transcript, cwd)}` : ''
  return `${head}${why}\n${c.dim(`${result.turns} turn(s) · ${result.usage.inputTokens} in / ${result.usage.outputTokens} out tokens${cost} · ${result.durationMs} ms${transcript}`)}`
}

/** Runs one task to its end; the first Ctrl-C cancels it (the run ends `cancelled`, its transcript closed), a second exits. */
/** The run's result; `interrupted`: Ctrl-C cancelled it. */
async function runTask(run: AgentRun): Promise<{ result: RunResult; interrupted: boolean }> {
  let presses = 0
  const onSigint = () => {
    if (++presses > 1) process.exit(130)
    process.stderr.write(
      color.dim('\ncancelling… (Ctrl-C again to quit at once)\n', process.stderr),
    )
    run.cancel('cancelled with Ctrl-C')
  }
  process.on('SIGINT', onSigint)
  try {
    return { result: await run.result, interrupted: presses > 0 }
  } finally {
    process.off('SIGINT', onSigint)
  }
}

export const agentRun = defineCommand({
  name: 'run',
  summary: 'one agent task: streams the answer and each tool call; exit 0 when it is done',
  usage: 'yoke run "TASK" [--record FILE] [--max-turns N] [--json] [common flags]',
  examples: [
    'yoke run "summarise the README" --config config/yoke.yaml',
    'yoke run --record run.jsonl --max-turns 8 "fix the failing test"',
  ],
  flags: RUN_FLAGS,
  positionals: 1,
  async run(args, positionals, cli) {
    const [task] = positionals
    if (!task?.trim())
      throw new YokeError('USAGE', {
        reason: 'yoke run needs the task, e.g. yoke run "summarise README.md"',
      })
    const budget = budgetOf(args)
    const cwd = resolve(args.cwd ?? process.cwd())
    return cli.compose(
      async (composition) => {
        const agent = await agentOf(composition)
        // the terminal answers for the run's calls (approvals, a server's questions): it travels
        // with them, and stands as the bridge for what no call carries (a question a server asks
        // while several calls run)
        const bridge = promptBridge()
        const off = composition.runtime!.approvals.register(bridge)
        try {
          const run = agent.run(task, {
            budget,
            record: args.record ? resolve(cwd, args.record as string) : undefined,
            caller: 'cli',
            asker: bridge,
            onEvent: args.json ? undefined : printer(),
          })
          const { result, interrupted } = await runTask(run)
          if (args.json) printJson({ ok: result.status === 'done', ...result })
          else process.stderr.write(summary(result, cwd) + '\n')
          // cancelled with Ctrl-C: 130, as a Unix tool stopped by SIGINT
          return interrupted ? 130 : result.status === 'done' ? 0 : 1
        } finally {
          off()
          bridge.close()
        }
      },
      { quiet: true },
    )
  },
})

const CHAT_HELP =
  "/tools  the tools the agent sees\n/skills  the skills\n/commands  the plugins' commands (/NAME ARGS runs one)\n/reload  recompose the config (picks up edits)\n/new  forget the conversation\n/exit  leave (or Ctrl-D)"

export const agentChat = defineCommand({
  name: 'chat',
  summary: 'an interactive agent session with history; /tools, /skills, /reload, /new, /exit',
  usage: 'yoke chat [--record FILE] [--max-turns N] [common flags]',
  examples: [
    'yoke chat --config config/yoke.yaml',
    'yoke chat --set plugins.model.config.model=gpt-4.1',
  ],
  flags: RUN_FLAGS,
  async run(args, _, cli) {
    const budget = budgetOf(args)
    const cwd = resolve(args.cwd ?? process.cwd())
    return cli.compose(
      async (composition) => {
        // on a terminal, a project whose own code waits for trust is asked about once, as yoke
        // dev asks (`yoke serve` never asks: its stdin may be the MCP channel)
        if (!args.json && process.stdin.isTTY && process.stderr.isTTY) await offerTrust(composition)
        await agentOf(composition) // fail early, before the first prompt
        const rl = createInterface({
          input: process.stdin,
          output: process.stderr,
          terminal: Boolean(process.stdin.isTTY),
        })
        const lines = new LineReader(rl)
        const c = on(process.stderr)
        rl.setPrompt(c.bold('you> '))
        // on a terminal, readline takes Ctrl-C: it cancels the running turn, drops a half-typed
        // line (as a shell does), and at an empty prompt leaves as an interrupted tool does (130)
        let current: AgentRun | undefined
        let interrupted = false
        rl.on('SIGINT', () => {
          if (current) return current.cancel('cancelled with Ctrl-C')
          if (!rl.line) return ((interrupted = true), rl.close())
          process.stderr.write('^C\n')
          rl.write(null, { ctrl: true, name: 'e' })
          rl.write(null, { ctrl: true, name: 'u' })
          // a dumb terminal (TERM=dumb) has no line editing: readline keeps the text, so drop it here
          if (rl.line) (rl as { line: string }).line = ''
        })
        // approvals read their answer from the same input as the chat
        const bridge = promptBridge(process.stdin, process.stderr, lines)
        const off = composition.runtime!.approvals.register(bridge) // for what no call carries
        let history: readonly ChatMessage[] = []
        let turns = 0
        process.stderr.write(
          c.dim(`yoke chat: type a task, or /help. ${CHAT_HELP.split('\n').length} commands.\n`),
        )
        try {
          for (;;) {
            rl.prompt()
            const next = await lines.next()
            if (next === undefined) break
            const line = next.trim()
            if (!line) continue
            if (line === '/exit' || line === '/quit') break
            if (line === '/new') {
              history = []
              process.stderr.write(c.dim('a new conversation\n'))
            } else if (!(await chatCommand(composition, line))) {
              const agent = await agentOf(composition).catch(
                (err) => (process.stderr.write(formatError(err) + '\n'), undefined),
              )
              if (!agent) continue
              const record = turnCassette(args.record as string | undefined, cwd, turns)
              const task = slashCommand(composition, line) ?? line
              current = agent.run(task, {
                history,
                budget,
                record,
                caller: 'cli',
                asker: bridge,
                onEvent: printer(),
              })
              const { result } = await runTask(current).finally(() => (current = undefined))
              turns++
              history = result.messages
              process.stderr.write(summary(result, cwd) + '\n')
            }
          }
        } finally {
          off()
          bridge.close()
          rl.close()
        }
        return interrupted ? 130 : 0
      },
      { quiet: true },
    )
  },
})

/** `--record FILE` in a chat: each turn after the first records to FILE.<n>. */
const turnCassette = (record: string | undefined, cwd: string, turns: number) =>
  record ? resolve(cwd, `${record}${turns ? `.${turns}` : ''}`) : undefined

/** A chat line that is one of chat's own commands (or an unknown one), done; false: a task. */
async function chatCommand(composition: Composition, line: string): Promise<boolean> {
  if (line === '/help') process.stderr.write(CHAT_HELP + '\n')
  else if (line === '/tools') await listTools(composition)
  else if (line === '/skills') listSkills(composition)
  else if (line === '/commands') listCommands(composition)
  else if (line === '/reload') {
    const event = await composition.reload(['/reload'])
    const changed = [...event.added, ...event.restarted, ...event.removed]
    process.stderr.write(
      event.ok
        ? on(process.stderr).dim(
            `reloaded in ${event.durationMs} ms${changed.length ? `: ${changed.join(', ')} changed` : ', nothing changed'}\n`,
          )
        : event.errors.map((e) => formatError(e)).join('\n') + '\n',
    )
  } else if (line.startsWith('/') && !slashCommand(composition, line))
    process.stderr.write(`unknown command ${line.split(/\s/)[0]}\n${CHAT_HELP}\n`)
  else return false
  return true
}

async function listTools(composition: Composition) {
  const { hostTrack, runtimeView } = await import('yoke')
  const view = runtimeView(composition.runtime!, 'cli', hostTrack)
  for (const t of view.list())
    process.stderr.write(`${t.name.padEnd(32)}${color.dim(t.source, process.stderr)}\n`)
}

/** `/name args` (or `/plugin:name args`) as the plugin command's prompt, or undefined when no command has that name. */
function slashCommand(composition: Composition, line: string): string | undefined {
  const match = /^\/(\S+)\s*([\s\S]*)$/.exec(line)
  const command = match && composition.get('claudePlugins')?.command(match[1]!)
  return command ? expandCommand(command, match[2]!) : undefined
}

function listCommands(composition: Composition) {
  const commands = composition.get('claudePlugins')?.commands() ?? []
  if (!commands.length) return void process.stderr.write('no plugin commands in this preset\n')
  for (const c of commands)
    process.stderr.write(
      `/${`${c.name}${c.argumentHint ? ` ${c.argumentHint}` : ''}`.padEnd(40)}${color.dim(c.description.slice(0, 90), process.stderr)}\n`,
    )
}

function listSkills(composition: Composition) {
  const skills = composition.get('skills')
  if (!skills) return void process.stderr.write('no skills service in this preset\n')
  for (const s of skills.list())
    process.stderr.write(
      `${s.name.padEnd(32)}${color.dim(s.description.split('\n')[0]!.slice(0, 100), process.stderr)}\n`,
    )
}
