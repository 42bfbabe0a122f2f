/** capabilities' error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('capabilities', {
  CAPABILITY_WITHDRAWN: {
    message: '{name} is withdrawn ({rule}): {why}',
    hint: 'The project withdrew this version (`yoke audit` says who and when); use another tool, or remove the entry from the capabilities instance’s `withdrawn` list to restore it.',
  },
  CAPABILITY_NOT_ROLLED_OUT: {
    message: '{name} ({rule}) is rolled out to {scopes} only, not to {scope}',
    hint: 'This version is being tried in a smaller scope first; widen the rule’s `scopes` (or remove the rule) in the capabilities instance’s `rollout` list to offer it everywhere.',
  },
  CAPABILITY_PIN_MISMATCH: {
    message: '{name} is refused: {reason}',
    hint: 'Its content no longer matches the version it was pinned at. If the change is expected, review it and update the pin ({id} in the capabilities instance’s `pins`; `yoke stats --all` shows its version and hash now); otherwise restore the pinned content.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
