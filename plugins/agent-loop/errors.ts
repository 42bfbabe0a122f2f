/** agent-loop's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('agent-loop', {
  AGENT_UNAVAILABLE: {
    message: 'no agent to run: {reason}',
    hint: 'Add an agent loop (agent-loop) and a model provider (openai, anthropic or replay) to the preset; `yoke inspect` shows why an instance is pending.',
  },
  RUN_NOT_FOUND: {
    message: 'no run {id} in {dir}',
    hint: '`yoke runs list` shows the recorded runs.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
