#!/usr/bin/env node
// workspace: an example MCP server (official SDK v2, stdio) that gives an agent read-only access to
// one directory tree: list_files, read_file, search_text and file_info, and every file as a
// `workspace:///<path>` resource. It serves both protocol eras on the one stdio stream: a client of
// the 2026-07-28 revision and one that opens with the 2025 `initialize` handshake. Plain .mjs, no
// build step: it starts as fast as node can load the SDK (no TypeScript loader in front of it).
//
//   node examples/mcp-server/index.mjs [ROOT]      ROOT: argument, else $WORKSPACE_ROOT, else cwd
//
// Safety: paths are relative to ROOT; absolute paths, `..` escapes and symlinks that point out of
// ROOT are refused; `.git` is never served; node_modules & co. are skipped when walking; every
// answer is bounded (workspace.mjs LIMITS); a regex search runs in a worker with a deadline.
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { z } from 'zod'
import { searchInWorker } from './search.mjs'
import { formatBytes, LIMITS, SKIPPED_DIRS, Workspace, WorkspaceError } from './workspace.mjs'

const USAGE = `usage: node index.mjs [ROOT]
An MCP server (stdio) with read-only tools over the files under ROOT
(default: $WORKSPACE_ROOT, else the current directory).
env: WORKSPACE_SEARCH_MS  time budget of one search_text (default 10000)`

const arg = process.argv[2]
if (arg === '--help' || arg === '-h') {
  process.stdout.write(`${USAGE}\n`)
  process.exit(0)
}
let ws
try {
  ws = await Workspace.open(arg ?? process.env.WORKSPACE_ROOT ?? process.cwd())
} catch (err) {
  process.stderr.write(`workspace: ${err.message}\n${USAGE}\n`)
  process.exit(2)
}

const READ_ONLY = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
}
const path = z
  .string()
  .max(4096)
  .describe('relative to the workspace root, e.g. "src" or "src/index.ts"')
const glob = z
  .string()
  .min(1)
  .max(256)
  .describe('e.g. "*.ts" (any depth: no / in it), "src/**/*.{js,mjs}", "test/*.ts"')

/** A tool body's answer as an MCP result; a refusal (WorkspaceError) is a tool error the model can read. */
const run = (body) => async (args, ctx) => {
  try {
    const { text, structured } = await body(args, ctx)
    return {
      content: [{ type: 'text', text }],
      ...(structured && { structuredContent: structured }),
    }
  } catch (err) {
    const text =
      err instanceof WorkspaceError ? err.message : `unexpected error: ${err?.message ?? err}`
    return { isError: true, content: [{ type: 'text', text }] }
  }
}

const uriOf = (rel) => `workspace:///${rel.split('/').map(encodeURIComponent).join('/')}`

/** One server instance: serveStdio builds one per connection (and one for a 2026-07-28 probe). */
function buildServer() {
  const server = new McpServer(
    { name: 'workspace', title: 'Workspace (read-only files)', version: '1.0.0' },
    {
      instructions:
        `Read-only access to the files under ${ws.root}. Paths are relative to it ("src/index.ts"); ` +
        'start with list_files, find text with search_text, read with read_file (numbered lines, in pages).',
    },
  )

  server.registerTool(
    'list_files',
    {
      title: 'List files',
      description:
        `List the files and directories under a directory of the workspace: one level by default, or every entry matching a glob. ` +
        `${SKIPPED_DIRS.join(', ')} are skipped unless named as path. Directories end with /; files show their size.`,
      inputSchema: z.object({
        path: path.default('.'),
        glob: glob.optional(),
        depth: z
          .number()
          .int()
          .min(1)
          .max(LIMITS.depth)
          .optional()
          .describe('levels to descend: default 1, or 32 with a glob'),
        limit: z
          .number()
          .int()
          .min(1)
          .max(2000)
          .default(200)
          .describe('the most entries to return'),
      }),
      outputSchema: z.object({
        root: z.string(),
        path: z.string(),
        entries: z.array(
          z.object({
            path: z.string(),
            type: z.enum(['file', 'directory', 'symlink', 'other']),
            size: z.number().optional(),
          }),
        ),
        truncated: z.boolean(),
        skipped: z.array(z.string()),
      }),
      annotations: { title: 'List files', ...READ_ONLY },
    },
    run((args) => ws.list(args)),
  )

  server.registerTool(
    'read_file',
    {
      title: 'Read a file',
      description:
        `Read a text file of the workspace as numbered lines (\`   12<TAB>text\`), ${400} lines at a time by default; ` +
        `the last line says how to read on. Files over ${formatBytes(LIMITS.fileBytes)} and binary files are refused; lines over ${LIMITS.lineChars} characters are cut.`,
      inputSchema: z.object({
        path: path.min(1),
        offset: z.number().int().min(1).default(1).describe('the first line to return (1-based)'),
        limit: z.number().int().min(1).max(2000).default(400).describe('the most lines to return'),
      }),
      annotations: { title: 'Read a file', ...READ_ONLY },
    },
    run((args) => ws.read(args)),
  )

  server.registerTool(
    'search_text',
    {
      title: 'Search text',
      description:
        'Find the lines that contain a text (or match a JavaScript regular expression) in the text files under a path; ' +
        `answers \`path:line: text\`. Case-insensitive unless caseSensitive. Binary files, files over ${formatBytes(LIMITS.fileBytes)} and ${SKIPPED_DIRS.join(', ')} are skipped.`,
      inputSchema: z.object({
        query: z
          .string()
          .min(1)
          .max(1000)
          .describe('the text to find (or a regular expression, with regex: true)'),
        regex: z.boolean().default(false),
        caseSensitive: z.boolean().default(false),
        path: path.default('.').describe('a directory to search under, or one file'),
        glob: glob
          .optional()
          .describe('only files whose path (relative to path) matches, e.g. "*.md"'),
        maxResults: z.number().int().min(1).max(1000).default(100),
      }),
      outputSchema: z.object({
        query: z.string(),
        path: z.string(),
        matches: z.array(z.object({ path: z.string(), line: z.number(), text: z.string() })),
        filesSearched: z.number(),
        truncated: z.boolean(),
      }),
      annotations: { title: 'Search text', ...READ_ONLY },
    },
    run((args, ctx) => searchInWorker(ws.root, args, ctx.mcpReq.signal)),
  )

  server.registerTool(
    'file_info',
    {
      title: 'File info',
      description:
        'Describe one path of the workspace: file or directory, size, modification time, and for files whether they are binary and how many lines they have.',
      inputSchema: z.object({ path: path.default('.') }),
      outputSchema: z.object({
        path: z.string(),
        type: z.enum(['file', 'directory', 'other']),
        size: z.number(),
        modified: z.string(),
        symlinkTo: z.string().optional(),
        entries: z.number().optional(),
        binary: z.boolean().optional(),
        lines: z.number().optional(),
      }),
      annotations: { title: 'File info', ...READ_ONLY },
    },
    run((args) => ws.info(args)),
  )

  server.registerResource(
    'file',
    new ResourceTemplate('workspace:///{+path}', {
      // the first 100 files, in walk order: a client can read any other by its URI
      list: async () => {
        const resources = []
        for await (const entry of ws.walk({ abs: ws.root, rel: '.' })) {
          if (entry.type !== 'file') continue
          resources.push({ uri: uriOf(entry.rel), name: entry.rel })
          if (resources.length === 100) break
        }
        return { resources }
      },
      complete: {
        path: async (value) => {
          const dir = value.includes('/') ? value.slice(0, value.lastIndexOf('/')) : '.'
          const listed = await ws.list({ path: dir, limit: 200 }).catch(() => undefined)
          return (listed?.structured.entries ?? [])
            .map((e) => e.path + (e.type === 'directory' ? '/' : ''))
            .filter((p) => p.startsWith(value))
            .slice(0, 100)
        },
      },
    }),
    {
      title: 'Workspace file',
      description:
        'A file of the workspace, by its path relative to the root: text, or base64 for small binary files.',
    },
    async (uri, { path: raw }) => {
      let rel
      try {
        rel = decodeURIComponent(Array.isArray(raw) ? raw.join('/') : raw)
      } catch {
        throw new WorkspaceError(`${uri.href} is not a valid workspace URI (bad percent-encoding)`)
      }
      const content = await ws.resource(rel)
      return { contents: [{ uri: uri.href, ...content }] }
    },
  )

  return server
}

// the opening message picks the era: `server/discover` (2026-07-28) or `initialize` (2025)
serveStdio(buildServer, {
  onerror: (err) => process.stderr.write(`workspace: ${err.message}\n`),
})
