/** mcp's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('mcp', {
  MCP_NAME_CONFLICT: {
    message:
      'MCP server name "{name}" is used by instance "{first}" and again by instance "{second}"',
    hint: 'Each mcp-client instance needs its own serverName: rename one of them.',
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
