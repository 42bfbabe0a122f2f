/**
 * The corpus grown to a size with distractors, deterministically (one seed, so every run and
 * every machine gets the same 10,000 tools): clones of real servers under other vendors' names.
 * First every real sibling vendor of each family (GitHub → Gitea, Forgejo, Bitbucket…; Gmail →
 * Outlook…; Playwright → Selenium…), in a seeded order, then made-up vendors for any server. A
 * clone keeps most of its source's tools, names and schemas, with the vendor swapped and the
 * wording varied. Each size's corpus is a prefix of the next one's, so sizes compare.
 */
import { FAMILIES, type Vendor } from './families.ts'
import { mcpTool, type ServerFixture, type Tool } from './corpus.ts'

export const SEED = 17

/** mulberry32: small, fast, and the same everywhere. */
export function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function shuffle<T>(items: T[], rand: () => number): T[] {
  const out = [...items]
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1))
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}

const pick = <T>(items: readonly T[], rand: () => number): T =>
  items[Math.floor(rand() * items.length)]!

/** How clones word things differently (each swap taken at random, about half the time). */
const REWORDS: Array<[RegExp, string[]]> = [
  [/\bCreate\b/g, ['Make', 'Add', 'Create']],
  [/\bcreate\b/g, ['make', 'add', 'create']],
  [/\bRetrieve[s]?\b/g, ['Fetch', 'Get', 'Return']],
  [/\bGet\b/g, ['Fetch', 'Retrieve', 'Return']],
  [/\bList\b/g, ['Show', 'Enumerate', 'List']],
  [/\bDelete[s]?\b/g, ['Remove', 'Erase']],
  [/\bRemove[s]?\b/g, ['Delete', 'Drop']],
  [/\bUpdate[s]?\b/g, ['Modify', 'Change', 'Edit']],
  [/\bSearch(es)? for\b/g, ['Find', 'Look up', 'Query']],
  [/\bSend[s]?\b/g, ['Deliver', 'Dispatch', 'Send']],
  [/\brepository\b/g, ['repo', 'repository']],
  [/\bdetails\b/g, ['information', 'details']],
  [/\bspecific\b/g, ['particular', 'given', 'single']],
  [/\bexisting\b/g, ['current', 'existing']],
  [/\bmultiple\b/g, ['several', 'many']],
]
const SUFFIXES = [' (via the {v} API)', ' ({v})', ' Uses your {v} account.', ' Powered by {v}.']

/** Made-up vendor names: two or three syllables, never a real word on purpose. */
const SYLLABLES =
  'ka ze lo mi ra vo ti nu sel dar kor vex lin mar quo fen bri tal zu pex om ari'.split(' ')

function brandPattern(brand: string): RegExp {
  const escaped = brand.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '[ _-]')
  return new RegExp(`(?<![A-Za-z])${escaped}(?![A-Za-z])`, 'gi')
}

/** `Slack` → `Mattermost` in prose, `slack_post_message` → `mattermost_post_message` in names. */
function swapVendor(text: string, brands: string[], to: Vendor, inName: boolean): string {
  let out = text
  for (const brand of [...brands].sort((a, b) => b.length - a.length))
    out = out.replace(brandPattern(brand), inName ? to.id.replace(/-/g, '_') : to.display)
  return out
}

/** `named`: the text names the vendor already (else a suffix always does). */
function reword(text: string, vendor: Vendor, named: boolean, rand: () => number): string {
  let out = text
  for (const [pattern, choices] of REWORDS)
    out = out.replace(pattern, (match) => (rand() < 0.5 ? pick(choices, rand) : match))
  // a long description is often cut to its first sentence by a thinner server
  if (out.length > 200 && rand() < 0.3) out = out.slice(0, out.search(/[.!?](\s|$)/) + 1 || 200)
  if (named && rand() < 0.5) return out
  const suffix = pick(SUFFIXES, rand).replaceAll('{v}', vendor.display)
  return (
    out.trimEnd() + (suffix.startsWith(' (') || /[.!?]$/.test(out.trimEnd()) ? '' : '.') + suffix
  )
}

function clone(source: ServerFixture, vendor: Vendor, rand: () => number): Tool[] {
  const brands = FAMILIES[source.server]?.brand ?? []
  const keep = 0.6 + rand() * 0.4
  return source.tools
    .filter(() => rand() < keep)
    .map((t) => {
      const description = swapVendor(t.description ?? '', brands, vendor, false)
      const named = description !== (t.description ?? '')
      const schema = JSON.parse(
        swapVendor(JSON.stringify(t.inputSchema ?? { type: 'object' }), brands, vendor, false),
      )
      const text = reword(description, vendor, named, rand)
      const raw = swapVendor(t.name, brands, vendor, true)
      return mcpTool(vendor.id, raw, text, schema, `mcp__${source.server}__${t.name}`)
    })
}

/** The clones in the order they are added: real sibling vendors first, then made-up ones. */
function* clones(fixtures: ServerFixture[], taken: Set<string>): Generator<Tool[]> {
  const rand = random(SEED)
  const byServer = new Map(fixtures.map((f) => [f.server, f]))
  const siblings = fixtures.flatMap((f) =>
    (FAMILIES[f.server]?.siblings ?? []).map((vendor) => ({ source: f, vendor })),
  )
  // a vendor two families name (Selenium for Playwright and Puppeteer) is one server with both
  // clones' tools (a name both have is kept once)
  for (const { source, vendor } of shuffle(siblings, rand)) {
    // a vendor whose own real server is in the corpus (Selenium, Asana, Mapbox…) is not cloned
    if (byServer.has(vendor.id)) continue
    taken.add(vendor.id)
    yield clone(source, vendor, rand)
  }
  const sources = fixtures.filter((f) => f.server !== 'everything' && byServer.has(f.server))
  for (;;) {
    const syllables = Array.from({ length: 2 + Math.floor(rand() * 2) }, () =>
      pick(SYLLABLES, rand),
    )
    const display = syllables.join('').replace(/^./, (c) => c.toUpperCase())
    const id = display.toLowerCase()
    if (taken.has(id)) continue
    taken.add(id)
    yield clone(pick(sources, rand), { id, display }, rand)
  }
}

/** The real corpus plus distractors up to `size` things (the last clone cut to fit). */
export function grow(real: Tool[], fixtures: ServerFixture[], size: number): Tool[] {
  const out = [...real]
  const names = new Set(real.map((t) => t.name))
  const taken = new Set(fixtures.map((f) => f.server))
  for (const batch of clones(fixtures, taken)) {
    if (out.length >= size) break
    for (const tool of batch) {
      if (out.length >= size) break
      if (names.has(tool.name)) continue
      names.add(tool.name)
      out.push(tool)
    }
  }
  return out
}
