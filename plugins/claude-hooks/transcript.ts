/**
 * @module claude-hooks/transcript
 * The transcript a hook reads at `transcript_path`, in Claude Code's JSONL shape: plugins read it
 * (ralph-wiggum takes the last assistant text with `jq '.message.content | map(select(.type ==
 * "text"))'`; double-shot-latte hands the last lines to a judge), and yoke's own transcript has
 * another shape. One file per run beside yoke's (`<runId>.claude.jsonl`), written by one
 * claude-hooks instance (the first to see the run start), each line appended in order.
 */
import { appendFile } from 'node:fs/promises'
import type { ModelResponse } from '../models/api.ts'

/** One run's Claude Code transcript: its file and the appends in flight (in order). */
export class ClaudeTranscript {
  #chain: Promise<void> = Promise.resolve()
  #failed = false

  constructor(
    readonly file: string,
    private readonly runId: string,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Appends one line of `type` (`user`, `assistant`) with its message. */
  append(type: 'user' | 'assistant', message: Record<string, unknown>): void {
    const line = `${JSON.stringify({
      type,
      sessionId: this.runId,
      timestamp: new Date().toISOString(),
      message,
    })}\n`
    this.#chain = this.#chain.then(() =>
      this.#failed
        ? undefined
        : appendFile(this.file, line).catch((err: unknown) => {
            this.#failed = true
            this.onError(err)
          }),
    )
  }

  user(content: string | unknown[]): void {
    this.append('user', { role: 'user', content })
  }

  /** The model's answer: its text and tool calls as Claude Code's content blocks. */
  assistant(response: ModelResponse): void {
    const content = [
      ...(response.text ? [{ type: 'text', text: response.text }] : []),
      ...response.toolCalls.map((c) => ({
        type: 'tool_use',
        id: c.id,
        name: c.name,
        input: c.args,
      })),
    ]
    this.append('assistant', { role: 'assistant', model: response.model, content })
  }

  /** Resolves once every line so far is written (a hook about to read it waits for this). */
  flushed(): Promise<void> {
    return this.#chain
  }
}

/** Which instance writes each run's transcript (the first to see it start), by run id. */
const writers = new Map<string, { owner: object; transcript: ClaudeTranscript }>()

/** The run's transcript if `owner` writes it: made at the run's start by the first instance asking. */
export function transcriptFor(
  runId: string,
  owner: object,
  yokeTranscript: string | undefined,
  onError: (err: unknown) => void,
): ClaudeTranscript | undefined {
  const known = writers.get(runId)
  if (known) return known.owner === owner ? known.transcript : undefined
  if (!yokeTranscript) return undefined
  const file = yokeTranscript.replace(/(\.jsonl)?$/, '.claude.jsonl')
  const transcript = new ClaudeTranscript(file, runId, onError)
  writers.set(runId, { owner, transcript })
  return transcript
}

/** The run's Claude Code transcript file, whoever writes it. */
export function claudeTranscriptOf(runId: string): ClaudeTranscript | undefined {
  return writers.get(runId)?.transcript
}

/** The run ended: its writer goes (the file stays, beside yoke's). */
export function endTranscript(runId: string, owner: object): void {
  if (writers.get(runId)?.owner === owner) writers.delete(runId)
}
