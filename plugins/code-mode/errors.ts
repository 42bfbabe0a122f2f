/** code-mode's error codes: how a `run_code` program ended when it did not return. */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('code-mode', {
  CODE_SYNTAX: {
    message: 'the program does not parse: {reason}',
    hint: 'Fix the program at the line shown; it is the body of an async function (top-level await and return are allowed).',
  },
  CODE_ERROR: {
    message: 'the program threw: {reason}',
    hint: 'Read the error (a failed tool call throws a ToolError with .code and .hint); catch it in the program or fix the cause.',
  },
  CODE_TIMEOUT: {
    message: 'the program ran past its CPU time ({ms} ms){reason}',
    hint: 'An endless loop, or too much work in the sandbox: do less per run, or raise code-mode `limits.cpuMs`.',
  },
  CODE_MEMORY: {
    message: 'the program ran out of memory ({mb} MB){reason}',
    hint: 'It built something too large: keep less in memory, or raise code-mode `limits.memoryMb`.',
  },
  CODE_STACK: {
    message: 'the program recursed too deeply (stack over {kb} KB){reason}',
    hint: 'Make the recursion a loop, or raise code-mode `limits.stackKb`.',
  },
  CODE_OUTPUT: {
    message: 'the program wrote more than {bytes} bytes of console output{reason}',
    hint: 'Log less (return what matters instead), or raise code-mode `limits.outputBytes`.',
  },
  CODE_CALLS: {
    message: 'the program made more than {max} tool calls{reason}',
    hint: 'Do fewer calls per run (a tool that takes many items at once, or several runs), or raise code-mode `limits.maxCalls`.',
  },
  CODE_DENIED: {
    message: 'the program was ended at {tool}, which was refused (DENIED): {reason}{trail}',
    hint: 'A refused call ends the program: allow the tool in the policy, approve it when asked, or do without it.',
  },
  CODE_SANDBOX_FAILED: {
    message: 'the sandbox ({executor}) failed: {reason}',
    hint: 'An error in the executor, not in the program: report it; the next run starts a fresh sandbox.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
