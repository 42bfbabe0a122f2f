/**
 * @module cli/approval-prompt
 * The CLI's approval bridge: a call that asks is put to the person at the terminal (or to piped
 * stdin, one answer per line). No answer (end of input, or the call aborted) is a refusal.
 */
import { createInterface, type Interface } from 'node:readline'
import type { ApprovalAnswer, ApprovalBridge } from '../runtime/approval.ts'
import { on } from './output.ts'

/** `shared`: lines already being read by someone else (`yoke chat`), so both take turns on one input. */
export function promptBridge(input: NodeJS.ReadableStream = process.stdin, output: NodeJS.WriteStream = process.stderr, shared?: AsyncIterator<string>): ApprovalBridge & { close(): void } {
  let rl: Interface | undefined
  let lines: AsyncIterator<string> | undefined = shared
  const c = on(output)
  return {
    name: 'terminal',
    async ask({ call, reason, signal }) {
      if (!lines) {
        rl = createInterface({ input, terminal: false })
        lines = rl[Symbol.asyncIterator]()
      }
      const args = JSON.stringify(call.args)
      output.write(`${c.yellow('?')} ${c.bold(call.name)} ${c.dim(args.length > 200 ? args.slice(0, 200) + '…' : args)}\n  ${reason}\n  allow? [y] once  [s] for this session  [N] no: `)
      const aborted = new Promise<undefined>((resolve) => signal.addEventListener('abort', () => resolve(undefined), { once: true }))
      const next = await Promise.race([lines.next(), aborted])
      if (next?.done) {
        output.write('\n')
        throw new Error('no answer: the input ended')
      }
      const answer = next ? next.value.trim().toLowerCase() : ''
      const decision: ApprovalAnswer = answer === 'y' || answer === 'yes' ? 'allow-once' : answer === 's' || answer === 'session' ? 'allow-session' : 'deny'
      output.write(`${next ? '' : '\n'}  ${decision === 'deny' ? c.red('denied') : c.green(decision === 'allow-once' ? 'allowed once' : 'allowed for this session')}\n`)
      return decision
    },
    close: () => rl?.close(),
  }
}
