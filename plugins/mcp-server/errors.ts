/** mcp-server's error codes; they join the one catalogue (README's error table lists them). */
import { defineErrors } from 'yoke/cli'

export const errors = defineErrors('mcp-server', {
  MCP_VIEW_UNKNOWN: {
    message: 'no MCP view named "{view}" (views: {views})',
    hint: "Views are configured in the mcp-server instance's `views`; the default view is `default`.",
  },
  MCP_ENDPOINT_FAILED: {
    message: 'the MCP endpoint cannot listen on {address}: {reason}',
    hint: 'Another process (often another yoke dev) holds the port: stop it, set YOKE_MCP_PORT, or give the instance http.port (0 takes any free port).',
  },
  MCP_TOKEN_INVALID: {
    message: '{reason}',
    hint: "The MCP endpoint's bearer token could not be used: do what the message says (delete a bad token file to have one generated), or set token or tokenEnv in the mcp-server instance.",
  },
  MCP_OAUTH_ISSUER: {
    message: 'cannot check OAuth access tokens from {issuer}: {reason}',
    hint: "The gateway reads the issuer's metadata (/.well-known/oauth-authorization-server, else openid-configuration) for its jwks_uri, with redirects refused: make oauth.issuer exactly the iss of its tokens and reachable from here, or give oauth.jwksUri.",
  },
})

type Codes = typeof errors
declare module 'yoke' {
  interface ErrorCodes extends Codes {}
}
