/** prompt's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('prompt', {
  PROMPT_DUPLICATE: {
    message: 'prompt section "{name}" is already registered by {owner}',
    hint: 'Section names are unique: rename one of them.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
