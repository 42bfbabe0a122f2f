/** The browser tests' project files: a plugin with tools, a noisy MCP stdio server, the config. */
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

const require = createRequire(import.meta.url)
const sdk = (path: string) =>
  pathToFileURL(require.resolve(`@modelcontextprotocol/sdk/${path}`)).href

/** Tools for the form (every kind of field) and a high-risk one the policy asks about. */
export const TOOLS_PLUGIN = `export default {
  name: 'desk',
  inject: ['runtime'],
  apply(ctx, config) {
    ctx.runtime.register({
      name: 'echo',
      description: 'repeats a text',
      inputSchema: {
        type: 'object',
        required: ['text'],
        properties: {
          text: { type: 'string', description: 'what to repeat' },
          times: { type: 'integer', default: 1 },
          loud: { type: 'boolean' },
          mode: { enum: ['plain', 'fancy'] },
          tags: { type: 'array', items: { type: 'string' } },
          opts: { type: 'object', properties: { prefix: { type: 'string' } } },
        },
      },
      execute: (args) => {
        let text = (args.opts?.prefix ?? config.prefix ?? '') + Array(args.times ?? 1).fill(args.text).join(' ')
        if (args.loud) text = text.toUpperCase()
        if (args.mode === 'fancy') text = '*' + text + '*'
        return text + (args.tags?.length ? ' #' + args.tags.join(' #') : '')
      },
    })
    ctx.runtime.register({ name: 'wipe', description: 'wipes the desk', risk: 'high', execute: () => 'wiped' })
  },
}
`

/** A real MCP stdio server (the SDK) that talks on stderr as it starts. */
export const NOISY_SERVER = `import { McpServer } from ${JSON.stringify(sdk('server/mcp.js'))}
import { StdioServerTransport } from ${JSON.stringify(sdk('server/stdio.js'))}
process.stderr.write('noisy: warming up the flux capacitor\\n')
const server = new McpServer({ name: 'noisy', version: '1.0.0' })
server.tool('ping', 'answers pong', async () => ({ content: [{ type: 'text', text: 'pong' }] }))
await server.connect(new StdioServerTransport())
process.stderr.write('noisy: ready on stdio\\n')
`

/** The project's config: base, the console and telemetry, the desk and the noisy server. */
export const CONFIG = (prefix = '') => `preset: base
plugins:
  console:
    use: console
  telemetry:
    use: telemetry
  desk:
    use: ./plugins/desk.mjs
    config: { prefix: '${prefix}' }
  noisy:
    use: mcp-client
    config:
      serverName: noisy
      command: ${JSON.stringify(process.execPath)}
      args: [./noisy.mjs]
`

/** A project whose own plugin waits for \`yoke trust\`. */
export const UNTRUSTED_CONFIG = `preset: base
plugins:
  console:
    use: console
  hello:
    use: ./plugins/hello.mjs
`

export const HELLO_PLUGIN = `export default {
  name: 'hello',
  inject: ['runtime'],
  apply(ctx) {
    ctx.runtime.register({ name: 'hello_hi', description: 'says hi', execute: () => 'hi' })
  },
}
`

/**
 * A model that needs no key and answers from the conversation, so a fork with the current
 * plugins can take another path: a task `echo WORD` calls `echo` with WORD, a task `wait` calls
 * `wait` (which holds until cancelled), and after a tool's result it says what the desk said.
 */
export const SCRIPTED_MODEL = `export default {
  name: 'scripted',
  provides: ['model'],
  apply(ctx) {
    ctx.provide('model', {
      provider: 'scripted',
      model: 'scripted-1',
      async complete(request, options = {}) {
        const last = request.messages.at(-1)
        const usage = { inputTokens: 10, outputTokens: 5 }
        if (last.role === 'tool') {
          const text = 'the desk said: ' + last.content
          options.onText?.(text)
          return { text, toolCalls: [], stopReason: 'end', usage, model: 'scripted-1' }
        }
        const call = /^wait/.test(last.content)
          ? { name: 'wait', args: {} }
          : { name: 'echo', args: { text: /echo (\\S+)/.exec(last.content)?.[1] ?? 'nothing' } }
        const toolCalls = [{ id: 'call_' + request.messages.length, ...call }]
        return { text: '', toolCalls, stopReason: 'tool_use', usage, model: 'scripted-1' }
      },
    })
  },
}
`

/** A desk whose echo says its config's prefix first, and a tool that waits until cancelled. */
export const RUNS_DESK = `export default {
  name: 'desk',
  inject: ['runtime'],
  apply(ctx, config) {
    ctx.runtime.register({
      name: 'echo',
      description: 'repeats a text',
      concurrency: 'safe',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
      execute: (args) => (config.prefix ?? '') + args.text,
    })
    ctx.runtime.register({
      name: 'wait',
      description: 'waits until cancelled',
      // a test that runs this desk in its own process may let a wait end by itself (a run that
      // must end on its turn budget), rather than at the runtime's call timeout (5 minutes)
      execute: (args, call) =>
        new Promise((resolve) => {
          if (globalThis.deskWaitsEnd) return resolve('ended by itself')
          call.signal.addEventListener('abort', () => resolve('stopped'))
        }),
    })
  },
}
`

/** The runs project: the desk, the scripted model and the agent loop (and the console). */
export const RUNS_CONFIG = (prefix = '', preset = 'base', extra = '') => `preset: ${preset}
plugins:
  console:
    use: console
${extra}  desk:
    use: ./plugins/desk.mjs
    config: { prefix: '${prefix}' }
  model:
    use: ./plugins/scripted.mjs
  agent:
    use: agent-loop
`
