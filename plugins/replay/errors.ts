/** replay's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('replay', {
  REPLAY_MISMATCH: {
    message: 'replay of {cassette} differs at turn {turn} (lane {lane}): {difference}',
    hint: 'The request no longer matches the recording (a prompt, tool or result changed): record the cassette again with `yoke run --record FILE`.',
  },
  CASSETTE_INVALID: {
    message: 'cassette {where}: {reason}',
    hint: 'A cassette is JSON lines written by `--record`; record it again rather than editing it by hand.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
