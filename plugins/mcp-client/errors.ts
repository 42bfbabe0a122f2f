/** mcp-client's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('mcp-client', {
  MCP_CONNECT_FAILED: {
    message: 'MCP server "{server}" could not start: {reason}',
    hint: 'Check its command or url, then `yoke mcp list`; with failOnStartupError: false it is retried with backoff.',
  },
  URL_REFUSED: {
    message: 'refused to connect to {url}: {reason}',
    hint: 'URLs from packages and imported files may not reach private, loopback, link-local or metadata addresses, nor redirect; put the server in your own config (ssrfGuard: false, or `yoke mcp import --trust-urls` for a file that is yours) to reach a local one.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
