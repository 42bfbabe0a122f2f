/** turn-guard's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('turn-guard', {
  RELOAD_BUSY: {
    message: 'the reload was refused (refuseIfBusy): {what} in flight',
    hint: 'Reload when it ends, or without refuseIfBusy (holdOnCacheImpact holds what would alter the cached prompt until it ends).',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
