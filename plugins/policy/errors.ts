/** policy's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('policy', {
  CLAUDE_SETTINGS_INVALID: {
    message: '{file}: {reason}',
    hint: 'Fix the Claude Code settings file at the position shown (it is JSON); until then the policy keeps the rules it last read from it, and the other files and rules apply.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
