// An MCP server over stdio that offers skills with the SDK's own skills extension (SEP-2640,
// @modelcontextprotocol/server/ext/skills), either era by the client:
//   node skills-server.mjs dir DIR     the skills in a folder (loadSkills), reloaded by the tool `reload`
//   node skills-server.mjs many N      N generated skills, 100 a page
//   node skills-server.mjs hostile     a good skill beside bad ones (see HOSTILE)
//   node skills-server.mjs none        no skills extension at all
// The tool `reload` (dir) re-reads DIR and sends resources/list_changed when the list changed.
// many, hostile and none are served by hand on the low-level Server, so that entries the SDK's
// own extension would drop before sending reach the client.
import { createHash } from 'node:crypto'
import { McpServer, ProtocolError, Server } from '@modelcontextprotocol/server'
import { loadSkills } from '@modelcontextprotocol/server/ext/skills/node'
import {
  SKILLS_EXTENSION_ID,
  SKILLS_LIST_METHOD,
  skillEntry,
} from '@modelcontextprotocol/server/ext/skills'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { z } from 'zod'

const [mode, arg] = process.argv.slice(2)
const md = (name, description, body = `Do ${name}.\n`, extra = '') =>
  `---\nname: ${name}\ndescription: ${description}\n${extra}---\n${body}`
const digest = (text) => `sha256:${createHash('sha256').update(text).digest('hex')}`

/** A SkillSource over entries built by hand (digests of `files`), so a test can serve what the SDK's catalog would refuse. */
function handSource(skills) {
  const byUri = new Map()
  for (const s of skills) for (const [uri, text] of Object.entries(s.files)) byUri.set(uri, text)
  return {
    list: async ({ cursor }) => {
      const at = cursor ? Number(cursor) : 0
      const page = skills.slice(at, at + 100).map((s) => s.entry)
      return { skills: page, ...(at + 100 < skills.length && { nextCursor: String(at + 100) }) }
    },
    get: async (uri) => skills.find((s) => s.entry.uri === uri)?.entry,
    read: async (uri) => {
      const text = byUri.get(uri)
      return text === undefined ? undefined : { text, mimeType: 'text/markdown' }
    },
  }
}

/** An entry as a server writes it: the files' digests, and the frontmatter it claims. */
function entry(path, files, frontmatter) {
  const base = `skill://${path}`
  const resources = Object.entries(files).map(([f, text]) => ({
    uri: `${base}/${f}`,
    digest: digest(text),
    size: Buffer.byteLength(text),
  }))
  return {
    entry: { uri: `${base}/SKILL.md`, frontmatter, resources },
    files: Object.fromEntries(Object.entries(files).map(([f, t]) => [`${base}/${f}`, t])),
  }
}

const HOSTILE = async () => [
  // good: loads, with its reference file readable
  {
    entry: await skillEntry('good', {
      'SKILL.md': md('good', 'A good skill among bad ones.'),
      'references/guide.md': '# Guide\nthe good guide\n',
    }),
    files: {
      'skill://good/SKILL.md': md('good', 'A good skill among bad ones.'),
      'skill://good/references/guide.md': '# Guide\nthe good guide\n',
    },
  },
  // a resource whose path escapes the skill's root
  entry(
    'escape',
    { 'SKILL.md': md('escape', 'Lists a file outside its folder.'), '../good/SKILL.md': 'x' },
    { name: 'escape', description: 'Lists a file outside its folder.' },
  ),
  // a SKILL.md of 2 MiB
  entry(
    'huge',
    { 'SKILL.md': md('huge', 'Far too long.', 'x'.repeat(2 * 1024 * 1024)) },
    { name: 'huge', description: 'Far too long.' },
  ),
  // frontmatter that does not parse (an unclosed quote)
  entry(
    'malformed',
    { 'SKILL.md': '---\nname: malformed\ndescription: "never closed\n---\nbody\n' },
    { name: 'malformed', description: 'never closed' },
  ),
  // an entry whose frontmatter is not what its SKILL.md says
  entry(
    'liar',
    { 'SKILL.md': md('liar', 'What SKILL.md says.') },
    { name: 'liar', description: 'What the entry claims.' },
  ),
  // a digest that does not match
  (() => {
    const e = entry(
      'tampered',
      { 'SKILL.md': md('tampered', 'Its bytes changed after listing.') },
      { name: 'tampered', description: 'Its bytes changed after listing.' },
    )
    e.files['skill://tampered/SKILL.md'] += 'added later\n'
    e.entry.resources[0].size += 'added later\n'.length
    return e
  })(),
  // no description: not an entry at all
  {
    entry: { uri: 'skill://nodesc/SKILL.md', frontmatter: { name: 'nodesc' }, resources: [] },
    files: {},
  },
  // what yoke's parser flags and still loads: an unknown key (a spec violation)
  {
    entry: await skillEntry('odd', {
      'SKILL.md': md('odd', 'Has an unknown key.', 'Odd.\n', 'colour: red\n'),
    }),
    files: { 'skill://odd/SKILL.md': md('odd', 'Has an unknown key.', 'Odd.\n', 'colour: red\n') },
  },
]

async function many(n) {
  const out = []
  for (let i = 0; i < n; i++) {
    const name = `skill-${String(i).padStart(5, '0')}`
    const text = md(name, `Generated skill number ${i}.`)
    out.push({
      entry: await skillEntry(name, { 'SKILL.md': text }),
      files: { [`skill://${name}/SKILL.md`]: text },
    })
  }
  return out
}

if (mode === 'dir') {
  const skills = await loadSkills(arg, {
    onWarning: (w) => console.error(`warning ${w.path}: ${w.message}`),
  })
  serveStdio(() => {
    const server = new McpServer(
      { name: 'skills-dir', version: '1.0.0' },
      { capabilities: { tools: {}, resources: { listChanged: true } } },
    )
    server.registerTool('reload', { description: 'read the skills folder again' }, async () => {
      const changes = await skills.reload()
      return { content: [{ type: 'text', text: JSON.stringify(changes) }] }
    })
    skills.attach(server)
    return server
  })
} else {
  // by hand, on the low-level Server: entries the SDK's own extension would drop reach the client
  const source =
    mode === 'none'
      ? undefined
      : handSource(mode === 'many' ? await many(Number(arg)) : await HOSTILE())
  serveStdio(() => {
    const server = new Server(
      { name: `skills-${mode}`, version: '1.0.0' },
      {
        capabilities: {
          tools: {},
          resources: { listChanged: true },
          ...(source && { extensions: { [SKILLS_EXTENSION_ID]: {} } }),
        },
      },
    )
    server.setRequestHandler('tools/list', async () => ({ tools: [] }))
    server.setRequestHandler('resources/list', async () => ({ resources: [] }))
    server.setRequestHandler('resources/read', async (request) => {
      const read = await source?.read(request.params.uri)
      if (!read) throw new ProtocolError(-32002, `no resource ${request.params.uri}`)
      return { contents: [{ uri: request.params.uri, ...read }] }
    })
    if (source)
      server.setRequestHandler(
        SKILLS_LIST_METHOD,
        { params: z.looseObject({ cursor: z.string().optional() }) },
        async (params) => ({ ...(await source.list(params)), ttlMs: 0, cacheScope: 'private' }),
      )
    return server
  })
}
