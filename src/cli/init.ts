/**
 * @module cli/init
 * `yoke init [DIR]`: a project to start from — a config on the base preset, a TypeScript plugin
 * with a tsconfig.json that type-checks it against this yoke, a skill, a plugin executable, an
 * MCP server entry to uncomment, and MCP-CLIENTS.md (how Claude Desktop, Claude Code, Codex, Cursor
 * and the Inspector start this project's tools). Files that exist are kept (and listed), never
 * overwritten.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, posix, relative, resolve } from 'node:path'
import { CODE_ROOT, FROM_SOURCE, YOKE_ROOT } from '../roots.ts'
import { defineCommand } from './command.ts'
import { color, printJson } from './output.ts'

const CONFIG = `# The project config (made by yoke init): the layers, presets and plugins are in yoke's README.
preset: base
plugins:
  hello:
    # a TypeScript plugin: edit plugins/hello.ts while yoke dev runs and it reloads
    use: ./plugins/hello.ts
    config:
      greeting: Hello
  packages:
    # plugin executables: a directory with manifest.json and a program (any language)
    use: exec-tools
    config:
      dirs: [./packages]
  # An MCP server: uncomment, or let \`yoke mcp add NAME -- COMMAND ARGS…\` write one.
  # A stdio server runs in this directory; give paths to files as absolute paths.
  # memory:
  #   use: mcp-client
  #   config:
  #     serverName: memory
  #     command: npx
  #     args: [-y, "@modelcontextprotocol/server-memory"]
`

const PLUGIN = `// A yoke plugin in TypeScript: it registers one tool. \`yoke tools call hello --args '{"name":"Ada"}'\`
import { definePlugin } from 'yoke'

interface HelloConfig {
  greeting?: string
}

export default definePlugin({
  name: 'hello',
  inject: ['runtime'],
  apply(ctx, config: HelloConfig) {
    const greeting = config.greeting ?? 'Hello'
    ctx.runtime.register({
      name: 'hello',
      description: 'Greets someone by name.',
      concurrency: 'safe',
      inputSchema: {
        type: 'object',
        properties: { name: { type: 'string', description: 'who to greet' } },
        required: ['name'],
      },
      execute: (args) => \`\${greeting}, \${(args as { name: string }).name}!\`,
    })
  },
})
`

const SKILL = `---
name: hello-world
description: Greets the user warmly. Use when the user says hello or asks for a greeting.
---

# Hello world

When the user greets you, greet them back by name if you know it, using the \`hello\` tool.
`

const MANIFEST = `{
  "name": "shout",
  "version": "1.0.0",
  "tools": [
    {
      "name": "shout",
      "description": "Upper-cases the text it is given.",
      "input_schema": {
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
      },
      "risk": "low"
    }
  ]
}
`

const EXECUTABLE = `#!/bin/sh
# A plugin executable: the JSON arguments arrive on stdin; stdout is the result (plain text here).
input=$(cat)
printf '%s' "$input" | sed -n 's/.*"text"[[:space:]]*:[[:space:]]*"\\([^"]*\\)".*/\\1/p' | tr '[:lower:]' '[:upper:]'
`

/**
 * Type-checks plugins/ against the running yoke's types (`npx tsc -p .`): its declaration files, or
 * its sources when it runs from them. Node's types come from yoke's own node_modules when it has
 * them (a clone), else from the project's.
 */
function tsconfig(dir: string): string {
  const yoke = relative(dir, YOKE_ROOT) || '.'
  const code = relative(dir, CODE_ROOT) || '.'
  const types = (entry: string) => join(code, 'src', FROM_SOURCE ? `${entry}.ts` : `${entry}.d.ts`)
  const nodeTypes = existsSync(join(YOKE_ROOT, 'node_modules', '@types', 'node'))
  return (
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          // ESM syntax whatever package.json says (yoke loads a .ts plugin as ESM either way)
          module: 'preserve',
          moduleResolution: 'bundler',
          lib: ['ES2023'],
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          verbatimModuleSyntax: true,
          skipLibCheck: true,
          resolveJsonModule: true,
          types: ['node'],
          typeRoots: nodeTypes ? [join(yoke, 'node_modules', '@types')] : undefined,
          paths: { yoke: [types('index')], 'yoke/cli': [types('cli/api')] },
        },
        include: ['plugins'],
      },
      null,
      2,
    ) + '\n'
  )
}

/**
 * How MCP clients start this project's tools (`yoke serve --stdio`), with absolute paths: a
 * desktop app starts servers without the shell's PATH or directory.
 */
function mcpClients(dir: string): string {
  const command = process.execPath
  const args = [join(YOKE_ROOT, 'bin', 'yoke.js'), 'serve', '--stdio', '--cwd', dir]
  const json = JSON.stringify({ mcpServers: { yoke: { command, args } } }, null, 2)
  const shell = [command, ...args].map((a) => (/^[\w/.:=-]+$/.test(a) ? a : `'${a}'`)).join(' ')
  return `# This project's tools in MCP clients (made by yoke init)

Each client spawns \`yoke serve --stdio\` for this directory. The paths are absolute (this Node,
this yoke); make the file again with \`yoke init\` after moving either.

Claude Desktop (\`claude_desktop_config.json\`), Cursor (\`.cursor/mcp.json\`) and other clients
that read an \`mcpServers\` object:

\`\`\`json
${json}
\`\`\`

Claude Code:

\`\`\`sh
claude mcp add yoke -- ${shell}
\`\`\`

Codex (\`~/.codex/config.toml\`):

\`\`\`toml
[mcp_servers.yoke]
command = ${JSON.stringify(command)}
args = [${args.map((a) => JSON.stringify(a)).join(', ')}]
\`\`\`

The MCP Inspector's CLI (\`--\` ends the Inspector's own flags):

\`\`\`sh
npx @modelcontextprotocol/inspector --cli --method tools/list -- ${shell}
\`\`\`
`
}

export const init = defineCommand({
  name: 'init',
  summary:
    'start a project: config, a TypeScript plugin, a skill, a plugin executable, MCP client snippets',
  usage: 'yoke init [DIR] [--json]',
  positionals: 1,
  examples: ['yoke init', 'yoke init my-agent && cd my-agent && yoke dev'],
  async run(args, [target]) {
    const dir = resolve(args.cwd ?? process.cwd(), target ?? '.')
    const files: Array<[string, string, number?]> = [
      ['yoke.config.yaml', CONFIG],
      ['plugins/hello.ts', PLUGIN],
      ['tsconfig.json', tsconfig(dir)],
      // the project's own skills folder (the config's dirs), written as a path, not a plugin's name
      ['./skills/hello-world/SKILL.md', SKILL],
      ['packages/shout/manifest.json', MANIFEST],
      ['packages/shout/shout', EXECUTABLE, 0o755],
      ['MCP-CLIENTS.md', mcpClients(dir)],
      ['.gitignore', '.yoke/\nnode_modules/\n'],
    ]
    const made: string[] = []
    const kept: string[] = []
    for (const [path, text, mode] of files) {
      const rel = posix.normalize(path)
      const file = join(dir, rel)
      if (existsSync(file)) {
        kept.push(rel)
        continue
      }
      mkdirSync(dirname(file), { recursive: true })
      writeFileSync(file, text)
      if (mode) chmodSync(file, mode)
      made.push(rel)
    }
    const trusted = await trustWhatWeWrote(dir, made)
    if (args.json) printJson({ ok: true, dir, made, kept, trusted })
    else {
      for (const rel of made) process.stdout.write(`${color.green('made')} ${rel}\n`)
      for (const rel of kept) process.stdout.write(`${color.dim(`kept ${rel} (it exists)`)}\n`)
      if (trusted)
        process.stdout.write(
          `${color.green('trusted')} this project's config as yoke wrote it, so its plugin and package run (an edit asks again; \`yoke trust --revoke\` undoes it)\n`,
        )
      const cd = target ? `cd ${target} && ` : ''
      process.stdout.write(
        `\nNext: ${cd}yoke dev   (then, in another terminal: yoke tools call hello --args '{"name":"Ada"}')\n`,
      )
    }
    return 0
  },
})

/**
 * A project whose config files yoke has just written, every one of them (nothing that was there
 * before counts), is trusted as written: its code is yoke's templates, and `yoke init && yoke tools
 * list` should not wait for trust. Any edit of a config file changes its hash and asks again; a
 * config that was kept (it existed) or a state file or preset that was there is never trusted here.
 */
async function trustWhatWeWrote(dir: string, made: string[]): Promise<boolean> {
  if (!made.includes('yoke.config.yaml')) return false
  const [{ loadLayers }, { projectFiles, recordTrust }] = await Promise.all([
    import('../config/layers.ts'),
    import('../config/trust.ts'),
  ])
  const stack = await loadLayers({ cwd: dir })
  if (stack.errors.length || !stack.projectFile) return false
  const files = projectFiles(stack, {})
  if (!files.every((file) => made.includes(relative(dir, file)))) return false
  await recordTrust({ dir: stack.projectDir, files }, true, {})
  return true
}
