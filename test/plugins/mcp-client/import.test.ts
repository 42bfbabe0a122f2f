import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'
import {
  importFile,
  importText,
  toYaml,
  type ImportResult,
} from '../../../plugins/mcp-client/import.ts'
import { mcpClientConfig } from '../../../plugins/mcp-client/config.ts'
import { YokeError } from '../../../src/index.ts'

const fixtures = fileURLToPath(new URL('../../fixtures/mcp-import/', import.meta.url))
const fixture = (name: string) => join(fixtures, name)

/** Runs fn, asserts it threw a YokeError with this code, and returns the error for more checks. */
function yokeError(fn: () => unknown, code: string): YokeError {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof YokeError, `expected a YokeError, got ${err}`)
    assert.equal(err.code, code, err.message)
    return err
  }
  assert.fail('expected an error')
}

describe('mcp import: Claude Code .mcp.json', () => {
  it('converts stdio, http and sse entries, skips ws, keeps ${VAR} verbatim', () => {
    const result = importFile(fixture('project.mcp.json'))
    assert.equal(result.format, 'mcp.json')
    assert.deepEqual(result.servers, [
      {
        key: 'mcp-filesystem',
        serverName: 'filesystem',
        enabled: true,
        config: {
          serverName: 'filesystem',
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-filesystem', '${HOME}/projects'],
          env: { LOG_LEVEL: '${LOG_LEVEL:-info}' },
        },
      },
      {
        key: 'mcp-github',
        serverName: 'github',
        enabled: true,
        config: {
          serverName: 'github',
          url: 'https://api.githubcopilot.com/mcp/',
          headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' },
          callMs: 30000,
          ssrfGuard: true, // a URL from an imported file: the rules of untrusted sources
        },
      },
      {
        key: 'mcp-linear',
        serverName: 'linear',
        enabled: true,
        config: {
          serverName: 'linear',
          url: 'https://mcp.linear.app/sse',
          transport: 'sse',
          ssrfGuard: true,
          oauth: { clientId: 'abc' },
        },
      },
      {
        key: 'mcp-dynamic-auth',
        serverName: 'dynamic-auth',
        enabled: true,
        config: { serverName: 'dynamic-auth', url: 'https://mcp.example.com/mcp', ssrfGuard: true },
      },
    ])
    // oauth becomes the entry's oauth; alwaysLoad is dropped quietly; ws and headersHelper are not
    assert.deepEqual(result.warnings, [
      'server "sockets" skipped: uses the ws transport, which mcp-client does not support',
      'server "dynamic-auth": headersHelper is not supported; add the headers it produces under config.headers',
    ])
  })

  it('reads the bare form, inferring stdio from command and http from url', () => {
    const result = importFile(fixture('bare.mcp.json'))
    assert.equal(result.format, 'mcp.json')
    assert.deepEqual(
      result.servers.map((s) => s.config),
      [
        {
          serverName: 'memory',
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-memory'],
        },
        { serverName: 'docs', url: 'https://docs.example.com/mcp', ssrfGuard: true },
      ],
    )
    assert.deepEqual(result.warnings, [])
  })
})

describe('mcp import: claude_desktop_config.json', () => {
  it('imports every server and ignores the app settings around them', () => {
    const result = importFile(fixture('claude_desktop_config.json'))
    assert.equal(result.format, 'claude-desktop')
    assert.deepEqual(
      result.servers.map((s) => s.key),
      ['mcp-filesystem', 'mcp-brave-search', 'mcp-sqlite'],
    )
    assert.deepEqual(result.servers[1].config, {
      serverName: 'brave-search',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-brave-search'],
      env: { BRAVE_API_KEY: 'BSA-not-a-real-key' },
    })
    assert.deepEqual(result.warnings, [])
  })
})

describe('mcp import: Codex config.toml', () => {
  it('maps stdio and http tables, env forwarding, auth headers, timeouts and tool filters', () => {
    const result = importFile(fixture('config.toml'))
    assert.equal(result.format, 'codex-toml')
    assert.deepEqual(result.servers, [
      {
        key: 'mcp-docs',
        serverName: 'docs',
        enabled: true,
        config: {
          serverName: 'docs',
          command: 'docs-server',
          args: ['--port', '4000'],
          env: { HOME: '${HOME}', API_KEY: 'literal-value' }, // a literal env value wins over forwarding
          cwd: '/srv/docs',
          enabledTools: ['search', 'fetch'],
          startupMs: 20000,
          callMs: 45500,
          failOnStartupError: true,
        },
      },
      {
        key: 'mcp-figma',
        serverName: 'figma',
        enabled: false,
        config: {
          serverName: 'figma',
          url: 'https://mcp.figma.com/mcp',
          risk: 'high',
          headers: {
            'X-Figma-Region': 'us-east-1',
            'X-Team': '${FIGMA_TEAM}',
            Authorization: 'Bearer ${FIGMA_OAUTH_TOKEN}',
          },
          oauth: { scopes: ['read'] },
          disabledTools: ['delete_file'],
          startupMs: 5000, // the legacy startup_timeout_ms
          ssrfGuard: true,
        },
      },
    ])
    // each top-level key left out is named with where yoke has it; a server's approval modes become its risk
    assert.deepEqual(result.warnings, [
      '"model" is not imported (only mcp_servers is): the model is a provider instance (openai, anthropic) of the preset',
      '"approval_policy" is not imported (only mcp_servers is): the policy plugin decides what asks first (askRisks, ask rules)',
      'not imported (not MCP servers): profiles',
      'server "figma": tools.<tool>.approval_mode left out (search): yoke\'s risk is per server; a policy rule asks per tool (ask: ["mcp__<server>__<tool>"])',
      'server "figma": default_tools_approval_mode "prompt" is risk: high (the policy asks before each call)',
    ])
  })

  it('keeps only OAuth scope tokens from Claude and Codex scopes, naming the rest', () => {
    const claude = importText(
      JSON.stringify({
        mcpServers: {
          a: {
            type: 'http',
            url: 'https://a.example/mcp',
            oauth: { scopes: ['read', 'bad"scope', 7] },
          },
        },
      }),
      '.mcp.json',
    )
    assert.deepEqual(claude.servers[0]!.config.oauth, { scopes: ['read'] })
    assert.match(claude.warnings.join('\n'), /oauth scopes dropped .*"bad\\"scope", 7/)
    const codex = importText(
      '[mcp_servers.b]\nurl = "https://b.example/mcp"\nscopes = ["write", "a\\\\b"]\n',
      'config.toml',
    )
    assert.deepEqual(codex.servers[0]!.config.oauth, { scopes: ['write'] })
    assert.match(codex.warnings.join('\n'), /oauth scopes dropped/)
  })

  it('is detected by content when the name says nothing', () => {
    const result = importText('[mcp_servers.x]\ncommand = "x"\n', 'codex-config')
    assert.equal(result.format, 'codex-toml')
    assert.deepEqual(result.servers[0].config, { serverName: 'x', command: 'x' })
    assert.equal(importText('{"x": {"command": "x"}}', 'servers.txt').format, 'mcp.json')
  })

  it('skips an entry that mixes command and url, and fields of the wrong transport are unknown', () => {
    const toml = [
      '[mcp_servers.both]',
      'command = "x"',
      'url = "https://x"',
      '[mcp_servers.local]',
      'command = "x"',
      'bearer_token_env_var = "TOKEN"',
    ].join('\n')
    const result = importText(toml, 'config.toml')
    assert.deepEqual(
      result.servers.map((s) => s.serverName),
      ['local'],
    )
    assert.deepEqual(result.warnings, [
      'server "both" skipped: has both command and url; an entry is either a stdio server or an HTTP server',
      'server "local": ignored unknown keys: bearer_token_env_var',
    ])
  })
})

describe('mcp import: server names', () => {
  it('sanitises invalid names, cuts them to 32 and suffixes collisions; valid names keep theirs', () => {
    const long = 'x'.repeat(40)
    const entries = {
      'a.b': { command: 'one' },
      a_b: { command: 'two' },
      'a b': { command: 'three' },
      [long]: { command: 'four' },
      '': { command: 'five' },
    }
    const result = importText(JSON.stringify({ mcpServers: entries }), '.mcp.json')
    assert.deepEqual(
      result.servers.map((s) => [s.serverName, s.key, s.config.serverName, s.config.command]),
      [
        ['a_b-2', 'mcp-a_b-2', 'a_b-2', 'one'],
        ['a_b', 'mcp-a_b', 'a_b', 'two'],
        ['a_b-3', 'mcp-a_b-3', 'a_b-3', 'three'],
        ['x'.repeat(32), `mcp-${'x'.repeat(32)}`, 'x'.repeat(32), 'four'],
        ['server', 'mcp-server', 'server', 'five'],
      ],
    )
    assert.deepEqual(result.warnings, [
      'server "a.b" renamed to "a_b-2"',
      'server "a b" renamed to "a_b-3"',
      `server "${long}" renamed to "${'x'.repeat(32)}"`,
      'server "" renamed to "server"',
    ])
  })

  it("passes yoke's protocol through when an entry carries it; a value it does not know skips the entry", () => {
    const result = importText(
      JSON.stringify({
        mcpServers: {
          pinned: { command: 'a', protocol: '2026-07-28' },
          old: { url: 'https://example.com/mcp', protocol: 'legacy' },
          plain: { command: 'b' },
          odd: { command: 'c', protocol: '2024-01-01' },
        },
      }),
      '.mcp.json',
    )
    assert.deepEqual(
      result.servers.map((s) => [s.serverName, s.config.protocol]),
      [
        ['pinned', '2026-07-28'],
        ['old', 'legacy'],
        ['plain', undefined],
      ],
    )
    assert.match(result.warnings.join('\n'), /odd.*protocol must be auto, legacy or 2026-07-28/)
    for (const server of result.servers) assert.ok(mcpClientConfig.safeParse(server.config).success)
  })

  it('keeps suffixed names within 32 characters', () => {
    const base = 'y'.repeat(32)
    const result = importText(
      JSON.stringify({ [base]: { command: 'a' }, [`${base}!`]: { command: 'b' } }),
      '.mcp.json',
    )
    assert.deepEqual(
      result.servers.map((s) => s.serverName),
      [base, `${'y'.repeat(30)}-2`],
    )
  })
})

describe('mcp import: malformed entries', () => {
  it('skips each with a warning naming the server and the field, and keeps the rest', () => {
    const servers = {
      good: { command: 'ok', extra: 1 },
      badArgs: { command: 'x', args: 'not-an-array' },
      badEnv: { command: 'x', env: { PORT: 8080 } },
      badType: { type: 'carrier-pigeon', url: 'https://x' },
      noTarget: { type: 'http' },
      notObject: 'npx server',
      badTimeout: { url: 'https://x', timeout: -1 },
      mixed: { command: 'x', url: 'https://x' },
      badEnvName: { command: 'x', env: { 'my-var': '1' } },
      badUrl: { type: 'http', url: 'wss://x' },
    }
    const result = importText(JSON.stringify({ mcpServers: servers }), '.mcp.json')
    assert.deepEqual(
      result.servers.map((s) => s.serverName),
      ['good'],
    )
    assert.deepEqual(result.warnings, [
      'server "good": ignored unknown keys: extra',
      'server "badArgs" skipped: args must be an array of strings',
      'server "badEnv" skipped: env must be a table of strings keyed by variable names',
      'server "badType" skipped: type must be stdio, http, sse or ws, not "carrier-pigeon"',
      'server "noTarget" skipped: an http server needs a url',
      'server "notObject" skipped: the entry is not an object',
      'server "badTimeout" skipped: timeout must be a positive number',
      'server "mixed" skipped: has both command and url; an entry is either a stdio server or an HTTP server',
      'server "badEnvName" skipped: env must be a table of strings keyed by variable names',
      'server "badUrl" skipped: url must be an http:// or https:// URL',
    ])
  })

  it('drops the variables mcp-client refuses, keeping the server', () => {
    const result = importText(
      '{"py": {"command": "python", "env": {"PYTHONPATH": "/opt/lib", "TOKEN": "t"}}}',
      'claude_desktop_config.json',
    )
    assert.deepEqual(result.servers[0].config.env, { TOKEN: 't' })
    assert.deepEqual(result.warnings, [
      'server "py": env PYTHONPATH dropped: mcp-client never passes variables that make a process load foreign code',
    ])
  })

  it('rounds fractional milliseconds up to whole ones', () => {
    const result = importText(
      '[mcp_servers.x]\ncommand = "x"\nstartup_timeout_sec = 0.0001\ntool_timeout_sec = 1.2345\n',
      'config.toml',
    )
    assert.deepEqual(result.servers[0].config, {
      serverName: 'x',
      command: 'x',
      startupMs: 1,
      callMs: 1235,
    })
  })

  it('checks Codex field types, env variable names included', () => {
    const toml = [
      '[mcp_servers.ok]',
      'url = "https://x"',
      '[mcp_servers.vars]',
      'command = "x"',
      'env_vars = ["GOOD", "not-a-name"]',
      '[mcp_servers.timeout]',
      'command = "x"',
      'startup_timeout_sec = "10"',
      '[mcp_servers.flag]',
      'command = "x"',
      'enabled = "no"',
      '[mcp_servers.tools]',
      'url = "https://x"',
      'enabled_tools = "search"',
      '[mcp_servers.neither]',
      'args = ["x"]',
      '[mcp_servers.blank]',
      'command = ""',
    ].join('\n')
    const result = importText(toml, 'config.toml')
    assert.deepEqual(
      result.servers.map((s) => s.serverName),
      ['ok'],
    )
    assert.deepEqual(result.warnings, [
      'server "vars" skipped: env_vars must be an array of environment variable names',
      'server "timeout" skipped: startup_timeout_sec must be a positive number',
      'server "flag" skipped: enabled must be true or false',
      'server "tools" skipped: enabled_tools must be an array of strings',
      'server "neither" skipped: needs a command or a url',
      'server "blank" skipped: command must be a non-empty string',
    ])
  })

  it('returns no servers, only warnings, when every entry is skipped', () => {
    const result = importText(
      '{"mcpServers": {"a": {"type": "ws", "url": "wss://x"}}}',
      '.mcp.json',
    )
    assert.deepEqual(result.servers, [])
    assert.equal(result.warnings.length, 1)
  })
})

describe('mcp import: malformed files', () => {
  it('broken JSON names the file, line and column', () => {
    const file = fixture('broken.json')
    const err = yokeError(() => importFile(file), 'CONFIG_SHAPE')
    assert.match(err.message, /^not valid JSON: /)
    assert.equal(err.site.file, file)
    assert.equal(err.site.line, 4)
    assert.equal(err.location, `${file}:4:5`)
  })

  it('JSON cut short points at its end', () => {
    const err = yokeError(() => importText('{\n  "mcpServers": {', 'x.json'), 'CONFIG_SHAPE')
    assert.equal(err.location, 'x.json:2:18')
  })

  it('broken TOML names file:line', () => {
    const file = fixture('broken.toml')
    const err = yokeError(() => importFile(file), 'CONFIG_SHAPE')
    assert.match(err.message, /^not valid TOML: /)
    assert.doesNotMatch(err.message, /\n/) // smol-toml's code frame is left out of the message
    assert.equal(err.site.line, 4)
    assert.ok(err.location?.startsWith(`${file}:4:`), err.location)
  })

  it('text that is neither JSON nor TOML says so', () => {
    const err = yokeError(() => importText('servers:\n  - a\n', 'servers.yaml'), 'CONFIG_SHAPE')
    assert.match(err.message, /^not valid JSON or TOML: /)
    assert.equal(err.site.file, 'servers.yaml')
  })

  it('files without servers are errors', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['{ "mcpServers": {} }', '.mcp.json', /no MCP servers found: mcpServers is empty/],
      ['{}', '.mcp.json', /no MCP servers found/],
      ['{"theme": {"dark": true}}', '.mcp.json', /no MCP servers found/],
      ['{"mcpServers": []}', '.mcp.json', /mcpServers must be an object/],
      ['[{"command": "x"}]', '.mcp.json', /expected a JSON object/],
      [
        'model = "gpt-5"\n',
        'config.toml',
        /no MCP servers found: expected \[mcp_servers.<name>\] tables/,
      ],
      ['', 'config.toml', /no MCP servers found/],
    ]
    for (const [text, file, message] of cases) {
      const err = yokeError(() => importText(text, file), 'CONFIG_SHAPE')
      assert.match(err.message, message, text)
      assert.equal(err.site.file, file)
    }
    assert.match(
      yokeError(() => importFile(fixture('empty.mcp.json')), 'CONFIG_SHAPE').message,
      /no MCP servers found/,
    )
  })

  it('refuses a directory, a missing file and a file over 1 MiB', () => {
    assert.match(
      yokeError(() => importFile(fixtures), 'CONFIG_READ_FAILED').message,
      /not a regular file/,
    )
    yokeError(() => importFile(fixture('missing.json')), 'CONFIG_NOT_FOUND')
    const dir = mkdtempSync(join(tmpdir(), 'yoke-mcp-import-'))
    try {
      const big = join(dir, 'big.mcp.json')
      writeFileSync(
        big,
        JSON.stringify({ mcpServers: { a: { command: 'x', args: ['y'.repeat(1024 * 1024)] } } }),
      )
      const err = yokeError(() => importFile(big), 'CONFIG_TOO_LARGE')
      assert.equal(err.site.file, big)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('mcp import: output', () => {
  it('every imported config is a valid mcp-client config', () => {
    for (const name of [
      'project.mcp.json',
      'bare.mcp.json',
      'claude_desktop_config.json',
      'config.toml',
    ]) {
      for (const server of importFile(fixture(name)).servers) {
        const checked = mcpClientConfig.safeParse(server.config)
        assert.ok(checked.success, `${name} ${server.key}: ${checked.error?.message}`)
      }
    }
  })
})

describe('mcp import: toYaml', () => {
  const roundTrip = (result: ImportResult) => {
    const text = toYaml(result)
    const parsed = parse(text) as {
      plugins: Record<string, { use: string; enabled?: boolean; config: unknown }>
    }
    return { text, parsed }
  }

  for (const name of [
    'project.mcp.json',
    'bare.mcp.json',
    'claude_desktop_config.json',
    'config.toml',
  ]) {
    it(`parses back to the same instances (${name})`, () => {
      const result = importFile(fixture(name))
      const { parsed } = roundTrip(result)
      assert.deepEqual(Object.keys(parsed), ['plugins'])
      assert.deepEqual(
        parsed.plugins,
        Object.fromEntries(
          result.servers.map((s) => [
            s.key,
            { use: 'mcp-client', ...(s.enabled ? {} : { enabled: false }), config: s.config },
          ]),
        ),
      )
    })
  }

  it('puts the format and the warnings first, as comments', () => {
    const result = importFile(fixture('config.toml'))
    const lines = roundTrip(result).text.split('\n')
    assert.deepEqual(lines.slice(0, 2), [
      '# imported from codex-toml',
      '# warning: "model" is not imported (only mcp_servers is): the model is a provider instance (openai, anthropic) of the preset',
    ])
    assert.ok(lines.includes('plugins:'))
  })

  it('quotes strings that YAML would read as other types', () => {
    const result = importText(
      '{"s": {"command": "run", "args": ["true", "123", "null", "#x", "a: b"]}}',
      '.mcp.json',
    )
    assert.deepEqual(roundTrip(result).parsed.plugins['mcp-s'].config, {
      serverName: 's',
      command: 'run',
      args: ['true', '123', 'null', '#x', 'a: b'],
    })
  })
})
