/**
 * @module cli/approval-prompt
 * The CLI's approval bridge: a call that asks is put to the person at the terminal (or to piped
 * stdin, one answer per line). No answer (end of input, or the call aborted) is a refusal. It also
 * answers questions (an MCP server's form to fill in, or a URL to open), one field per line. A
 * prompt given up while it waits says why: someone answered first elsewhere (the web console
 * races it), or the call ended.
 */
import { createInterface, type Interface } from 'node:readline'
import { messageOf } from '../errors.ts'
import type { ApprovalAnswer, ApprovalBridge, QuestionAnswer } from '../runtime/approval.ts'
import type { Outrun } from '../runtime/types.ts'
import { on } from './output.ts'

/**
 * Lines of one input handed to one reader at a time: `yoke chat` and its approval prompts take
 * turns on stdin. A read given up (its signal aborted) takes no line: the next reader gets it.
 */
export class LineReader {
  readonly #buffer: string[] = []
  readonly #waiting: Array<(line: string | undefined) => void> = []
  #ended = false

  constructor(readonly rl: Interface) {
    rl.on('line', (line) =>
      this.#waiting.length ? this.#waiting.shift()!(line) : this.#buffer.push(line),
    )
    rl.on('close', () => {
      this.#ended = true
      for (const resolve of this.#waiting.splice(0)) resolve(undefined)
    })
  }

  /** The next line; undefined at the end of input or when `signal` aborts first. */
  next(signal?: AbortSignal): Promise<string | undefined> {
    if (this.#buffer.length) return Promise.resolve(this.#buffer.shift())
    if (this.#ended || signal?.aborted) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      const take = (line: string | undefined) => {
        signal?.removeEventListener('abort', giveUp)
        resolve(line)
      }
      const giveUp = () => {
        const i = this.#waiting.indexOf(take)
        if (i >= 0) this.#waiting.splice(i, 1)
        resolve(undefined)
      }
      this.#waiting.push(take)
      signal?.addEventListener('abort', giveUp, { once: true })
    })
  }

  get ended(): boolean {
    return this.#ended && !this.#buffer.length
  }
}

/** `shared`: a reader someone else also reads (`yoke chat`), so both take turns on one input. */
export function promptBridge(
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
  shared?: LineReader,
): ApprovalBridge & { close(): void } {
  let lines = shared
  const c = on(output)
  return {
    name: 'terminal',
    async ask({ call, reason, signal }) {
      lines ??= new LineReader(createInterface({ input, terminal: false }))
      const { summary, texts } = shownWhole(call.args)
      const blocks = texts.map(
        ([name, text]) => `  ${c.bold(name)}:\n${numbered(text, (s) => c.dim(s))}\n`,
      )
      output.write(
        `${c.yellow('?')} ${c.bold(call.name)} ${c.dim(summary)}\n${blocks.join('')}  ${reason}\n  allow? [y] once  [s] for this session  [N] no: `,
      )
      const line = await lines.next(signal)
      if (line === undefined && signal.aborted) return (output.write(givenUp(signal, c)), 'deny')
      if (line === undefined) {
        output.write('\n')
        throw new Error('no answer: the input ended')
      }
      const answer = line?.trim().toLowerCase() ?? ''
      const decision: ApprovalAnswer =
        answer === 'y' || answer === 'yes'
          ? 'allow-once'
          : answer === 's' || answer === 'session'
            ? 'allow-session'
            : 'deny'
      output.write(
        `  ${decision === 'deny' ? c.red('denied') : c.green(decision === 'allow-once' ? 'allowed once' : 'allowed for this session')}\n`,
      )
      return decision
    },
    async answer({ from, mode, message, schema, url, signal }) {
      lines ??= new LineReader(createInterface({ input, terminal: false }))
      const read = async () => {
        const line = (await lines!.next(signal))?.trim()
        if (line === undefined && signal.aborted) output.write(givenUp(signal, c))
        return line
      }
      output.write(`${c.yellow('?')} ${c.bold(from)} asks: ${message}\n`)
      if (mode === 'url') output.write(`  open ${url}\n  done? [y] yes  [N] decline: `)
      else output.write('  answer? [y] fill in  [N] decline: ')
      const start = await read()
      if (start === undefined) return { action: 'cancel' }
      if (!/^y(es)?$/i.test(start)) return { action: 'decline' }
      if (mode === 'url') return { action: 'accept' }
      const content: NonNullable<QuestionAnswer['content']> = {}
      const required = new Set((schema?.required as string[] | undefined) ?? [])
      const fields = Object.entries((schema?.properties ?? {}) as Record<string, Field>)
      for (const [name, field] of fields) {
        for (let tries = 0; ; tries++) {
          output.write(
            `  ${field.title ?? name}${fieldHint(field)}${required.has(name) ? '' : ' [optional]'}: `,
          )
          const raw = await read()
          if (raw === undefined) return { action: 'cancel' }
          const value = raw === '' ? undefined : fieldValue(raw, field)
          if (value !== undefined) content[name] = value
          if (value !== undefined || (raw === '' && !required.has(name))) break
          if (tries === 2) return { action: 'cancel' }
          output.write(c.dim(`  that is not ${fieldHint(field).trim() || 'an answer'}\n`))
        }
      }
      return { action: 'accept', content }
    },
    close: () => {
      if (!shared) lines?.rl.close()
    },
  }
}

/** What a prompt given up says: who answered first (an Outrun), else why the call no longer asks. */
function givenUp(signal: AbortSignal, c: ReturnType<typeof on>): string {
  const outrun = signal.reason as Partial<Outrun> | undefined
  const why = outrun?.by
    ? `answered first through ${outrun.by} (${outrun.answer}): nothing to answer here`
    : `no longer asked: ${messageOf(signal.reason ?? 'the call ended')}`
  return `\n  ${c.dim(why)}\n`
}

/** A string argument this long, or of more than one line, is shown on its own lines. */
const INLINE_CHARS = 120

/**
 * What a call carries, all of it: nothing is cut, since a person approves what they see (a
 * dynamic plugin's source, a file to write). Long or multi-line strings at the top level are
 * printed whole below the call, numbered; the rest stays inline JSON.
 */
export function shownWhole(args: Readonly<Record<string, unknown>>): {
  summary: string
  texts: Array<[string, string]>
} {
  const inline: Record<string, unknown> = {}
  const texts: Array<[string, string]> = []
  for (const [name, value] of Object.entries(args)) {
    if (typeof value === 'string' && (value.length > INLINE_CHARS || value.includes('\n'))) {
      texts.push([name, value])
      inline[name] = `(${value.split('\n').length} lines, below)`
    } else inline[name] = value
  }
  return { summary: JSON.stringify(inline), texts }
}

/** `text` with its line numbers, right-aligned. */
function numbered(text: string, dim: (s: string) => string): string {
  const lines = text.split('\n')
  const width = String(lines.length).length
  return lines.map((line, i) => `  ${dim(String(i + 1).padStart(width) + ' |')} ${line}`).join('\n')
}

/** One field of a question's form: MCP elicitation's primitive schemas. */
interface Field {
  type?: string
  title?: string
  enum?: string[]
  items?: { enum?: string[] }
}

function fieldHint(field: Field): string {
  const choices = field.enum ?? field.items?.enum
  if (choices) return ` (${choices.join('|')}${field.type === 'array' ? ', comma-separated' : ''})`
  if (field.type === 'boolean') return ' (y/n)'
  return field.type ? ` (${field.type})` : ''
}

/** A typed line as the field's value; undefined when it is not one. */
function fieldValue(raw: string, field: Field): string | number | boolean | string[] | undefined {
  if (field.type === 'boolean')
    return /^(y|yes|true)$/i.test(raw) ? true : /^(n|no|false)$/i.test(raw) ? false : undefined
  if (field.type === 'number' || field.type === 'integer') {
    const n = Number(raw)
    return Number.isFinite(n) && (field.type === 'number' || Number.isInteger(n)) ? n : undefined
  }
  if (field.type === 'array') {
    const picked = raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
    return picked.every((p) => !field.items?.enum || field.items.enum.includes(p))
      ? picked
      : undefined
  }
  return field.enum && !field.enum.includes(raw) ? undefined : raw
}
