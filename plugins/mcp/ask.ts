/**
 * Upstream questions (MCP elicitation) and who answers them. Answerers register like approval
 * bridges: the newest that handles a question is asked, else the newest for any question. A
 * question nobody can answer, an answerer that throws, or a call that ends first is `cancel`,
 * with why: the server gets an answer and the call a clear result, never a hang.
 */
import { messageOf } from 'yoke'
import type { McpAnswer, McpAnswerer, McpQuestion } from './api.ts'

export type Answered = McpAnswer & { by?: string; why?: string }

/**
 * `fallback` answers what no MCP answerer takes (the approval service's bridges: the terminal);
 * it too never throws.
 */
export function answererList(
  warn: (message: string, err?: unknown) => void,
  fallback?: (question: McpQuestion) => Promise<Answered>,
) {
  const answerers: McpAnswerer[] = []
  return {
    add(answerer: McpAnswerer): () => void {
      answerers.push(answerer)
      return () => {
        const i = answerers.indexOf(answerer)
        if (i >= 0) answerers.splice(i, 1)
      }
    },
    async ask(question: McpQuestion): Promise<Answered> {
      const answerer =
        answerers.findLast((a) => safely(() => a.handles?.(question), warn, a)) ??
        answerers.findLast((a) => !a.handles)
      if (!answerer && fallback) return fallback(question)
      if (!answerer)
        return { action: 'cancel', why: 'nothing in yoke answers MCP servers\u2019 questions here' }
      if (question.signal.aborted) return { action: 'cancel', why: 'the call ended first' }
      let onAbort!: () => void
      const ended = new Promise<Answered>((resolve) => {
        onAbort = () =>
          resolve({ action: 'cancel', by: answerer.name, why: 'the call ended first' })
        question.signal.addEventListener('abort', onAbort, { once: true })
      })
      try {
        const answer = await Promise.race([answerer.ask(question), ended])
        return { ...answer, by: answerer.name }
      } catch (err) {
        warn(`the MCP answerer "${answerer.name}" failed: ${messageOf(err)}`, err)
        return {
          action: 'cancel',
          by: answerer.name,
          why: `the answerer "${answerer.name}" failed: ${messageOf(err)}`,
        }
      } finally {
        question.signal.removeEventListener('abort', onAbort)
      }
    },
  }
}

function safely(
  check: () => boolean | undefined,
  warn: (message: string, err?: unknown) => void,
  answerer: McpAnswerer,
): boolean {
  try {
    return check() === true
  } catch (err) {
    warn(`the MCP answerer "${answerer.name}" threw in handles(): ${messageOf(err)}`, err)
    return false
  }
}
