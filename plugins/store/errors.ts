/** store's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke'

export const errors = defineErrors('store', {
  STORE_UNAVAILABLE: {
    message: 'the store "{store}" ({target}) cannot answer: {reason}',
    hint: "Check that the Redis it names runs and is reachable from here (`redis-cli -u <url> ping`), or fix the store instance's `url`; the client reconnects by itself, and what needs the store works again once Redis answers (`yoke doctor` says its state). Nothing else fails meanwhile.",
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
