// What `yoke mcp import` reads of a Codex config.toml beyond [mcp_servers]: tool approvals become
// the server's risk (prompt asks, approve does not), a per-tool approval_mode is said to be left
// out with the policy rule that does it, and each top-level key it does not carry ([otel],
// approval_policy, sandbox_mode, …) is named once, with where yoke has it. The shapes are those of
// real configs (jonhill90/vibes .codex/config.toml, outfitter-dev/agents' codex-configuration
// skill, Codex's documented [otel] exporter).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { importText } from '../../../plugins/mcp-client/import.ts'
import { mcpClientConfig } from '../../../plugins/mcp-client/api.ts'

describe('mcp import: a Codex config.toml', () => {
  it('turns tool approvals into the server risk, and says what per-tool approvals it leaves out', () => {
    const result = importText(
      `[mcp_servers.asks]
command = "npx"
default_tools_approval_mode = "prompt"

[mcp_servers.trusted]
url = "https://mcp.example.com/mcp"
default_tools_approval_mode = "approve"

[mcp_servers.symphony]
url = "https://symphony.example.com/mcp"
default_tools_approval_mode = "writes"

[mcp_servers.picky]
command = "node"
[mcp_servers.picky.tools.delete_all]
approval_mode = "prompt"
`,
      'config.toml',
    )
    assert.deepEqual(
      result.servers.map((s) => [s.serverName, s.config.risk]),
      [
        ['asks', 'high'],
        ['trusted', 'low'],
        ['symphony', undefined],
        ['picky', undefined],
      ],
    )
    for (const server of result.servers) assert.ok(mcpClientConfig.safeParse(server.config).success)
    assert.deepEqual(result.warnings, [
      'server "asks": default_tools_approval_mode "prompt" is risk: high (the policy asks before each call)',
      'server "picky": tools.<tool>.approval_mode left out (delete_all): yoke\'s risk is per server; a policy rule asks per tool (ask: ["mcp__<server>__<tool>"])',
    ])
  })

  it('names each top-level key it does not import once, with where yoke has it', () => {
    const result = importText(
      `model = "gpt-5.2-codex"
model_reasoning_effort = "high"
approval_policy = "on-failure"
sandbox_mode = "workspace-write"
file_opener = "cursor"

[otel]
environment = "dev"
log_user_prompt = false
exporter = { otlp-http = { endpoint = "http://127.0.0.1:4318/v1/logs", protocol = "binary" } }

[mcp_servers.context7]
url = "https://mcp.context7.com/mcp"
`,
      'config.toml',
    )
    assert.deepEqual(
      result.servers.map((s) => s.serverName),
      ['context7'],
    )
    assert.deepEqual(result.warnings, [
      '"model" is not imported (only mcp_servers is): the model is a provider instance (openai, anthropic) of the preset',
      '"approval_policy" is not imported (only mcp_servers is): the policy plugin decides what asks first (askRisks, ask rules)',
      '"sandbox_mode" is not imported (only mcp_servers is): yoke has no OS sandbox of its own: its exec tools and servers run as you',
      '"otel" is not imported (only mcp_servers is): yoke\'s telemetry plugin exports OpenTelemetry: give it the exporter there (Codex exports to http://127.0.0.1:4318/v1/logs; telemetry\'s traces go to an OTLP endpoint, OTEL_EXPORTER_OTLP_ENDPOINT)',
      'not imported (not MCP servers): model_reasoning_effort, file_opener',
    ])
  })

  it('says when top-level keys were written inside a server table (as in jonhill90/vibes)', () => {
    const result = importText(
      `[mcp_servers.deepwiki]
url = "https://mcp.deepwiki.com/mcp"

# Execution policy: require approval for non-read operations
approval_policy = "on-request"
sandbox_mode = "workspace-write"
`,
      'config.toml',
    )
    assert.deepEqual(
      result.servers.map((s) => s.serverName),
      ['deepwiki'],
    )
    assert.match(
      result.warnings.join('\n'),
      /server "deepwiki": approval_policy, sandbox_mode: Codex's top-level keys, here inside this server's table .*move them above the first table/,
    )
  })
})
