/** models's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('models', {
  MODEL_FAILED: {
    message: '{provider} model {model} failed: {reason}',
    hint: 'Check the key, baseUrl and model name; 429 and 5xx answers were already retried with backoff.',
  },
  MODEL_TIMEOUT: {
    message: '{provider} model {model} did not answer within {ms} ms',
    hint: "Raise the provider instance's timeoutMs, or check that the server at baseUrl is up.",
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
