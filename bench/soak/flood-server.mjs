// The soak's flooding MCP server: raw JSON-RPC lines on stdio (no SDK, so it can write what a
// well-behaved server never would). Tools:
//   echo {text}           answers text
//   stderr_flood {mb}     writes mb MiB of log lines to stderr, then answers "flooded"
//   stderr_blob {mb}      writes mb MiB to stderr with no newline at all, then answers
//   big {mb}              answers with a text of mb MiB (over the client's maxMessageBytes: the
//                         client must end the connection naming the cap)
//   stdout_garbage {mb}   writes mb MiB of non-JSON bytes, no newline, to stdout, never answers
//   garbage_line          writes one line that is not JSON on stdout, never answers
import { createInterface } from 'node:readline'

const MIB = 1024 * 1024
const send = (message) =>
  new Promise((resolve) => {
    if (process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)) resolve()
    else process.stdout.once('drain', resolve)
  })
const write = (stream, chunk, times) =>
  new Promise((resolve) => {
    let left = times
    const more = () => {
      while (left > 0) {
        left--
        if (!stream.write(chunk)) return stream.once('drain', more)
      }
      resolve()
    }
    more()
  })
const object = (properties = {}) => ({ type: 'object', properties })
const tools = [
  { name: 'echo', description: 'echoes text', inputSchema: object({ text: { type: 'string' } }) },
  ...['stderr_flood', 'stderr_blob', 'big', 'stdout_garbage', 'garbage_line'].map((name) => ({
    name,
    description: `floods (${name})`,
    inputSchema: object({ mb: { type: 'number' } }),
  })),
]
const text = (id, value) => send({ id, result: { content: [{ type: 'text', text: value }] } })

async function call(id, name, args) {
  const mb = Number(args.mb ?? 1)
  switch (name) {
    case 'echo':
      return text(id, String(args.text))
    case 'stderr_flood':
      await write(process.stderr, `flood line ${'.'.repeat(50)}\n`.repeat(16 * 1024), mb) // ~1 MiB each
      return text(id, 'flooded')
    case 'stderr_blob':
      await write(process.stderr, 'x'.repeat(MIB), mb)
      return text(id, 'flooded')
    case 'big':
      return text(id, 'y'.repeat(mb * MIB))
    case 'stdout_garbage':
      await write(process.stdout, 'z'.repeat(MIB), mb)
      return new Promise(() => {})
    case 'garbage_line':
      process.stdout.write('this is not JSON-RPC\n')
      return new Promise(() => {})
  }
  return send({ id, error: { code: -32602, message: `unknown tool ${name}` } })
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let message
  try {
    message = JSON.parse(line)
  } catch {
    return
  }
  const { id, method, params } = message
  if (id === undefined) return // notifications
  if (method === 'initialize')
    return send({
      id,
      result: {
        protocolVersion: params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'soak-flood', version: '1.0.0' },
      },
    })
  if (method === 'tools/list') return send({ id, result: { tools } })
  if (method === 'tools/call') return call(id, params.name, params.arguments ?? {})
  if (method === 'ping') return send({ id, result: {} })
  return send({ id, error: { code: -32601, message: `no method ${method}` } })
})
process.stdin.on('end', () => process.exit(0))
