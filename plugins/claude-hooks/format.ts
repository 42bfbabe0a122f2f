/**
 * Claude Code's hook configuration: the object under `"hooks"` in a hooks.json or settings.json,
 * `{ Event: [{ matcher?, hooks: [handler…] }] }`. Reading it gives the handlers yoke runs and the
 * problems it found, each with the file, line and what to do; one bad entry never drops the others.
 */
import { LineCounter, parseDocument } from 'yaml'
import { RE2JS } from 're2js'
import { messageOf, nestsDeeper } from 'yoke'
import { z } from 'zod'

import { FIRED_EVENTS, takesType, TOOL_EVENTS, WAITING_EVENTS, type FiredEvent } from './events.ts'
import { compileRule, type Rule } from './rules.ts'

export { FIRED_EVENTS, type FiredEvent } from './events.ts'

const seconds = z.number().positive()
const common = {
  timeout: seconds.optional(),
  if: z.string().optional(),
  statusMessage: z.string().optional(),
  once: z.boolean().optional(),
}
const commandHandler = z
  .object({
    type: z.literal('command'),
    command: z.string().min(1),
    /** exec form: `command` is the program, these its arguments (no shell) */
    args: z.array(z.string()).optional(),
    async: z.boolean().optional(),
    asyncRewake: z.boolean().optional(),
    shell: z.string().optional(),
    ...common,
  })
  .passthrough()
const httpHandler = z
  .object({
    type: z.literal('http'),
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).optional(),
    allowedEnvVars: z.array(z.string()).optional(),
    ...common,
  })
  .passthrough()
const modelHandler = (type: 'prompt' | 'agent') =>
  z
    .object({
      type: z.literal(type),
      /** what the model is asked; `$ARGUMENTS` stands for the hook input (else it is appended) */
      prompt: z.string().min(1),
      model: z.string().optional(),
      /** prompt only: an ok: false that would end the turn is fed back to the model instead */
      continueOnBlock: z.boolean().optional(),
      ...common,
    })
    .passthrough()
const promptHandler = modelHandler('prompt')
const agentHandler = modelHandler('agent')
const mcpToolHandler = z
  .object({
    type: z.literal('mcp_tool'),
    /** a server name (`github`), or a plugin's scoped one (`plugin:<plugin>:<server>`) */
    server: z.string().min(1),
    tool: z.string().min(1),
    /** the tool's arguments; strings may hold `${path}` from the hook input (`${tool_input.file_path}`) */
    input: z.record(z.string(), z.unknown()).optional(),
    ...common,
  })
  .passthrough()
const otherHandler = z.object({ type: z.string().min(1) }).passthrough()
const SCHEMAS = {
  command: commandHandler,
  http: httpHandler,
  prompt: promptHandler,
  agent: agentHandler,
  mcp_tool: mcpToolHandler,
} as const
const group = z
  .object({
    matcher: z.string().optional(),
    hooks: z.array(z.unknown()),
  })
  .passthrough()

export type CommandHandler = z.output<typeof commandHandler>
export type HttpHandler = z.output<typeof httpHandler>
export type PromptHandler = z.output<typeof promptHandler>
export type AgentHandler = z.output<typeof agentHandler>
export type McpToolHandler = z.output<typeof mcpToolHandler>
export type Handler = CommandHandler | HttpHandler | PromptHandler | AgentHandler | McpToolHandler

/**
 * How deep a handler, or a handler's JSON answer, may nest (an object or array is a level): far
 * past Claude Code's own shapes, far below what overflows a stack. Deeper is refused before
 * anything walks it.
 */
export const MAX_DEPTH = 64

/**
 * How deep a hooks file's text may nest for yaml's parser to give line numbers: Claude Code's
 * shape nests 7 levels and a handler at most MAX_DEPTH more. Past it yaml is not run on the text
 * (its parse of a text 200,000 levels deep takes seconds and can exhaust the heap).
 */
const TEXT_DEPTH = 100

/**
 * The offset where `text` (JSON) first nests deeper than `limit` levels, brackets inside strings
 * not counted, or undefined: one pass, no parse.
 */
export function nestingPast(text: string, limit: number): number | undefined {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return i
    } else if (c === 0x7d || c === 0x5d) depth--
  }
  return undefined
}

/** One handler as yoke runs it: where it came from, and what it applies to. */
export interface HookEntry {
  event: FiredEvent
  matches(subjects: readonly string[]): boolean
  handler: Handler
  /** the handler's `if` (tool events only): a permission rule the call must match for it to run */
  rule?: Rule
  /** its group's matcher as written (FileChanged watches the file names it lists) */
  matcher?: string
  /** identical handlers run once per event (Claude Code dedupes them): the command and its args, or the url */
  key: string
  /** for logs and errors: `file:line PreToolUse[0].hooks[1] "command"` */
  label: string
}

export interface Problem {
  /** `file:line:col: what is wrong; what to do` */
  message: string
  level: 'warn' | 'error'
}

export interface ReadResult {
  entries: HookEntry[]
  problems: Problem[]
  /** the text did not parse: nothing in it was read */
  unreadable?: boolean
}

/**
 * A matcher as Claude Code reads it: `*`, empty or absent match everything; only letters, digits,
 * spaces and `_ - , |` is a list of exact names; anything else is an unanchored regex (here on
 * re2js, in linear time: a user's pattern cannot stall a call). A pattern RE2 does not take
 * (lookaround, backreferences) returns the reason instead.
 */
export function compileMatcher(matcher: string | undefined): ((s: string) => boolean) | string {
  if (matcher === undefined || matcher === '' || matcher === '*') return () => true
  if (/^[A-Za-z0-9_\-,| ]+$/.test(matcher)) {
    const names = new Set(
      matcher
        .split(/[|,]/)
        .map((n) => n.trim())
        .filter(Boolean),
    )
    return (s) => names.has(s)
  }
  try {
    const re = RE2JS.compile(matcher)
    return (s) => re.matcher(s).find()
  } catch (err) {
    return `the matcher ${JSON.stringify(matcher)} is not a regular expression yoke runs (${messageOf(err)}); write it without lookaround or backreferences`
  }
}

/**
 * Reads a hooks object. `text` is the file's text when it came from one (for line numbers);
 * `where` names it in messages (`.claude/settings.json`, or `config` for inline hooks).
 */
export function readHooks(hooks: unknown, where: string, text?: string): ReadResult {
  const problems: Problem[] = []
  const entries: HookEntry[] = []
  const deep = text === undefined ? undefined : nestingPast(text, TEXT_DEPTH)
  if (deep !== undefined) {
    const { line, col } = lineCol(text!, deep)
    problems.push({
      level: 'warn',
      message: `${where}:${line}:${col}: nests deeper than ${TEXT_DEPTH} levels from here; the other messages about this file give no line`,
    })
  }
  const locate = deep === undefined ? locator(text) : () => undefined
  const at = (path: Array<string | number>) => {
    const pos = locate(['hooks', ...path])
    return pos ? `${where}:${pos.line}:${pos.col}` : where
  }
  const problem = (path: Array<string | number>, what: string, level: Problem['level'] = 'warn') =>
    problems.push({ message: `${at(path)}: ${what}`, level })
  if (hooks === undefined) return { entries, problems }
  if (!hooks || typeof hooks !== 'object' || Array.isArray(hooks)) {
    problem([], '"hooks" is not an object of events; write { "PreToolUse": [ … ], … }', 'error')
    return { entries, problems }
  }
  for (const [event, groups] of Object.entries(hooks)) {
    if (!(FIRED_EVENTS as readonly string[]).includes(event)) {
      const { message, level } = notFired(event)
      problem([event], message, level)
      continue
    }
    if (!Array.isArray(groups)) {
      problem([event], `${event} is not a list of { "matcher", "hooks" } groups`, 'error')
      continue
    }
    groups.forEach((raw, g) => {
      const parsed = group.safeParse(raw)
      if (!parsed.success) {
        problem([event, g], `${event}[${g}] is not a { "matcher", "hooks": [ … ] } group`, 'error')
        return
      }
      const matches = compileMatcher(parsed.data.matcher)
      if (typeof matches === 'string') {
        problem([event, g, 'matcher'], `${event}[${g}]: ${matches}`, 'error')
        return
      }
      parsed.data.hooks.forEach((h, i) => {
        const path = [event, g, 'hooks', i]
        const name = `${event}[${g}].hooks[${i}]`
        if (nestsDeeper(h, MAX_DEPTH))
          return problem(
            path,
            `${name}: nested deeper than ${MAX_DEPTH} levels; this handler is refused (a handler is a flat object: { "type", "command", … }) and the others load`,
            'error',
          )
        const read = loadHandler(event, h)
        if ('problem' in read)
          return problem(read.atIf ? [...path, 'if'] : path, `${name}: ${read.problem}`, read.level)
        const { handler, rule } = read
        const entry = entryOf(event as FiredEvent, handler, `${at(path)} ${name}`, matches, rule)
        entries.push({ ...entry, ...(parsed.data.matcher && { matcher: parsed.data.matcher }) })
      })
    })
  }
  return { entries, problems }
}

/** One handler of `event`, with its compiled `if`, or why it does not run (and where: its `if`). */
function loadHandler(
  event: string,
  raw: unknown,
):
  { handler: Handler; rule?: Rule } | { problem: string; level: Problem['level']; atIf?: boolean } {
  const handler = parseHandler(raw)
  if (typeof handler === 'string') return { problem: handler, level: 'error' }
  if (!handler)
    return {
      level: 'warn',
      problem: `handlers of type "${String((raw as { type?: unknown }).type)}" are not Claude Code's (command, http, mcp_tool, prompt, agent); it does not run`,
    }
  const takes = takesType(event, handler.type)
  if (takes !== true)
    return {
      level: 'warn',
      problem: `${takes}, as in Claude Code; this ${handler.type} handler does not run`,
    }
  if (handler.if === undefined) return { handler }
  if (!TOOL_EVENTS.has(event))
    return {
      level: 'warn',
      atIf: true,
      problem: `"if" is evaluated on tool events only; on ${event} a handler with "if" never runs (as in Claude Code): remove "if" to run it`,
    }
  const rule = compileRule(handler.if)
  if (typeof rule === 'string')
    return { level: 'error', atIf: true, problem: `${rule}; it does not run` }
  return { handler, rule }
}

/** Why an event's handlers do not load: it has no counterpart in yoke (a warning), or no such event. */
function notFired(event: string): { message: string; level: Problem['level'] } {
  if (event in WAITING_EVENTS)
    return {
      level: 'warn',
      message: `${event} has no counterpart in yoke (${WAITING_EVENTS[event]}); its handlers are accepted and do not run`,
    }
  return {
    level: 'error',
    message: `"${event}" is not a Claude Code hook event; check its spelling (events yoke fires: ${FIRED_EVENTS.join(', ')})`,
  }
}

/** What a handler runs, for its label and its dedupe key. */
function what(handler: Handler): { shown: string; key: unknown[] } {
  switch (handler.type) {
    case 'command':
      return {
        shown: handler.command,
        key: [handler.command, handler.args ?? null, handler.shell ?? null],
      }
    case 'http':
      return { shown: handler.url, key: [handler.url, handler.headers ?? null] }
    case 'mcp_tool':
      return {
        shown: `${handler.server}/${handler.tool}`,
        key: [handler.server, handler.tool, handler.input ?? null],
      }
    default:
      return {
        shown: handler.prompt.length > 60 ? `${handler.prompt.slice(0, 60)}…` : handler.prompt,
        key: [handler.prompt, handler.model ?? null],
      }
  }
}

/** One handler as fired: its dedupe key (what it runs), its label (where it was read) and its matcher. */
function entryOf(
  event: FiredEvent,
  handler: Handler,
  where: string,
  matches: (subject: string) => boolean,
  rule?: Rule,
): HookEntry {
  const { shown, key } = what(handler)
  return {
    event,
    handler,
    ...(rule && { rule }),
    // identical handlers run once; one with an `if` only with the same `if`
    key: JSON.stringify([handler.type, ...key, handler.if ?? null]),
    label: `${where} ${JSON.stringify(shown)}`,
    // an event with no subject (UserPromptSubmit, Stop) ignores the matcher, as Claude Code does
    matches: (subjects) => !subjects.length || subjects.some(matches),
  }
}

/** A handler of one of Claude Code's five types, undefined for another type, or what is wrong with it. */
function parseHandler(raw: unknown): Handler | string | undefined {
  const base = otherHandler.safeParse(raw)
  if (!base.success)
    return 'a handler is an object with a "type" (command, http, mcp_tool, prompt or agent)'
  const schema = SCHEMAS[base.data.type as keyof typeof SCHEMAS]
  if (!schema) return undefined
  const parsed = schema.safeParse(raw)
  if (parsed.success) return parsed.data as Handler
  const issue = parsed.error.issues[0]!
  return `${issue.path.join('.') || 'the handler'}: ${issue.message}`
}

/**
 * Reads a hooks.json or settings.json: its `"hooks"`. A file that is not JSON is one problem at
 * the line and column where it breaks.
 */
export function readHooksFile(text: string, where: string): ReadResult {
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    const message = messageOf(err).replace(/\s+/g, ' ')
    const { line, col } = brokenAt(text, message)
    return {
      entries: [],
      unreadable: true,
      problems: [
        {
          level: 'error',
          message: `${where}:${line}:${col}: not JSON (${message}); fix it there (until it parses, the hooks read from it before, if any, stay in force)`,
        },
      ],
    }
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    return {
      entries: [],
      problems: [{ level: 'error', message: `${where}:1:1: not a JSON object with "hooks"` }],
    }
  return readHooks((doc as { hooks?: unknown }).hooks, where, text)
}

/**
 * Where JSON.parse gave up: its message's position when it names one (Node 20 does not always),
 * else where yaml's parser (JSON is YAML) finds the first error, else the file's start.
 */
function brokenAt(text: string, message: string) {
  const position = /position (\d+)/.exec(message)
  if (position) return lineCol(text, Number(position[1]))
  if (nestingPast(text, TEXT_DEPTH) !== undefined)
    return /end of JSON/i.test(message) ? lineCol(text, text.length) : { line: 1, col: 1 }
  const counter = new LineCounter()
  const error = parseDocument(text, { lineCounter: counter }).errors[0]
  return error ? counter.linePos(error.pos[0]) : { line: 1, col: 1 }
}

function lineCol(text: string, offset: number) {
  const before = text.slice(0, offset).split('\n')
  return { line: before.length, col: before.at(-1)!.length + 1 }
}

/** Where a path is in the JSON text (JSON is YAML: yaml's positions serve for both), or undefined. */
function locator(text: string | undefined) {
  if (text === undefined) return () => undefined
  let doc: ReturnType<typeof parseDocument> | undefined
  const counter = new LineCounter()
  return (path: Array<string | number>) => {
    try {
      doc ??= parseDocument(text, { lineCounter: counter, uniqueKeys: false })
      const node = doc.getIn(path, true) as { range?: [number, number, number] } | undefined
      const pair = node?.range ? node : undefined
      if (!pair?.range) return undefined
      return counter.linePos(pair.range[0])
    } catch {
      return undefined // a text too deep for the parser: the message names the file without a line
    }
  }
}
