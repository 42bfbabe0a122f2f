/** capabilities' error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('capabilities', {
  CAPABILITY_WITHDRAWN: {
    message: '{name} is withdrawn ({rule}): {why}',
    hint: 'The project withdrew this version (`yoke audit` says who and when); while the rule stands, its server, package or plugin stays unloaded. Use another tool, or remove the entry for {rule} from the `withdrawn` list of the capabilities instance (the project config) to restore it.',
  },
  CAPABILITY_NOT_ROLLED_OUT: {
    message: '{name} ({rule}) is rolled out to {scopes} only, not to {scope}',
    hint: 'This version is being tried in a smaller scope first; widen the rule’s `scopes` (or remove the rule) in the capabilities instance’s `rollout` list to offer it everywhere.',
  },
  CAPABILITY_PIN_MISMATCH: {
    message: '{name} is refused: {id} is pinned at {pinned}, and it is {found} now',
    hint: 'It is not what was pinned. If the change is expected, review it and accept it with `yoke pin {id}` (records the version and hash it has now; a running yoke dev reloads); otherwise restore the pinned one.',
  },
  CAPABILITY_UNKNOWN: {
    message: '{id} is not a capability of this project now',
    hint: '`yoke stats --all` lists every capability id and version (a running yoke dev’s, dynamic plugins included); give one of those ids.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
