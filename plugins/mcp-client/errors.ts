/** mcp-client's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('mcp-client', {
  MCP_CONNECT_FAILED: {
    message: 'MCP server "{server}" could not start: {reason}',
    hint: 'Check its command or url, then `yoke mcp list`; with failOnStartupError: false it is retried with backoff.',
  },
  MCP_SERVER_HELD: {
    message: 'MCP server "{name}" is held ({why}); it stays disconnected while held',
    hint: 'A plugin holds it (the capabilities plugin holds the servers of withdrawn or mis-pinned capabilities); `yoke mcp list` shows why. It connects again by itself once the last hold is released.',
  },
  MCP_TOOL_LEFT_OUT: {
    message: 'MCP server "{server}" lists the tool "{name}", but yoke left it out: {why}',
    hint: 'A tool its entry leaves out: change enabledTools/disabledTools in the entry. A tool skipped for its schema: the server has to fix it (`yoke mcp list` shows what was skipped and why).',
  },
  URL_REFUSED: {
    message: 'refused to connect to {url}: {reason}',
    hint: 'URLs from packages and imported files may not reach private, loopback, link-local or metadata addresses, nor redirect; put the server in your own config (ssrfGuard: false, or `yoke mcp import --trust-urls` for a file that is yours) to reach a local one.',
  },
  OAUTH_LOGIN_REQUIRED: {
    message: 'MCP server "{server}" needs a sign-in ({reason}): run `yoke mcp login {server}`',
    hint: '`yoke mcp login {server}` prints a URL to open (--headless on a machine without a browser); the server waits until then and connects once you have signed in.',
  },
  OAUTH_FAILED: {
    message: 'signing in to MCP server "{server}" failed: {reason}',
    hint: 'Check the server URL and its oauth settings (scopes, clientId, callbackPort), then run `yoke mcp login {server}` again.',
  },
  OAUTH_UNAVAILABLE: {
    message:
      'MCP server "{server}": its authorization server could not refresh the sign-in ({reason})',
    hint: 'The sign-in is kept; yoke retries with backoff (`yoke mcp list` shows the state). If it lasts, check that the authorization server is up.',
  },
  CREDENTIALS_LOCKED: {
    message: '{lock} is held by another yoke process (waited {ms} ms)',
    hint: 'Another yoke is refreshing or saving MCP credentials; try again. A lock left by a crashed process goes stale after 30 s.',
  },
  CREDENTIALS_EXPOSED: {
    message: '{file} may be read by others (mode {mode}); yoke will not use the credentials in it',
    hint: 'Run `chmod 600 {file}` (and check who could have read it), or delete it and sign in again with `yoke mcp login`.',
  },
  CREDENTIALS_UNREADABLE: {
    message: '{file} is not a credentials file yoke can read ({reason})',
    hint: 'Delete it (or the entry it names) and sign in again with `yoke mcp login`; a bad entry costs only its own server, and a login replaces it.',
  },
  CREDENTIALS_NOT_REMOVED: {
    message:
      'the credentials of MCP server "{server}" are still in {where} after the logout ({reason})',
    hint: 'Delete them by hand (remove its entry from the file, or the "yoke MCP credentials" item from the keyring), then run `yoke mcp auth status` to check.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
