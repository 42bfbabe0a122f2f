/**
 * @module tool-search/rank
 * Ranking tools (or skills) for a query: BM25+ (minisearch) over names, titles, descriptions,
 * parameter names and descriptions and the source, with prefix matching and typo tolerance, and
 * optionally fused with the semantic arm's similarities (hybrid.ts), and
 * two guarantees a plain BM25 lacks: a thing whose exact name (or `server/tool` pair) is in the
 * query comes first whatever the scores say, and a query nothing answers gets `noMatch` (a normal
 * answer, so a model does not invent a tool).
 */
import MiniSearch, { type SearchResult as MiniResult } from 'minisearch'
import { fuse, hybridNoMatch, type HybridOptions, type Similarity } from './hybrid.ts'
import { wordnet, type Lexicon } from './wordnet.ts'
import { everyday, withoutAsking } from './asking.ts'
import {
  modelFor,
  noMatchProbability,
  SHARE,
  signalsOf,
  type MatchSignals,
  type NoMatchModel,
} from './no-match.ts'

/** What the index reads of one thing. */
export interface Searchable {
  /** unique in the index */
  name: string
  title?: string
  description?: string
  /** where it comes from: `mcp:github`, `exec:text-tools`, `skills`, `native` */
  source?: string
  /** parameter names and descriptions */
  params?: ReadonlyArray<{ name: string; description?: string }>
  /** other spellings that count as naming it exactly (an MCP tool's `server/tool`, its bare name) */
  aliases?: readonly string[]
  /**
   * words that name it when a query holds one of them, even inside a sentence (a skill's name:
   * `matplotlib` in "make a chart in matplotlib"); a query holding one is never `noMatch`, and one
   * holding them all puts it first after the exact names. Words under 3 letters and stopwords do
   * not count. Tools leave it out: a tool named `search` is not asked for by every sentence that
   * says "search".
   */
  namedBy?: readonly string[]
  /**
   * requests people make for it, in their words (written by a model at index time: phrases.ts);
   * searched as its own field, and they count as the item's words
   */
  asked?: readonly string[]
}

export interface Candidate<T> {
  item: T
  score: number
  /** why it ranks: `exact name`, the query terms it matched and where, its similarity in meaning */
  why: string
}

export interface SearchOutcome<T> {
  candidates: Candidate<T>[]
  /** nothing scored above the threshold (candidates may still hold weak guesses) */
  noMatch: boolean
  /** which arms ranked: `lexical` (words; also when absent), or `hybrid` (words and meaning) */
  arms?: 'lexical' | 'hybrid'
  /**
   * what decided `noMatch` on words: the signals, and the chance of no match the calibrated model
   * gives them (absent under the share rule); absent when the query names something
   */
  evidence?: { signals: MatchSignals; noMatch?: number }
}

export interface RankOptions extends HybridOptions {
  /**
   * the share of the query's words (stopwords aside) the best candidate must match, else no match
   * (a share, not a score: BM25 scores depend on the corpus's size); unset: the calibrated
   * decision (no-match.ts, learned per index size by bench/eval-tools)
   */
  threshold?: number
  /** the calibrated no-match models to choose from by index size (no-match.ts's by default) */
  noMatchModels?: readonly NoMatchModel[]
  /** typo tolerance on terms of 5+ letters: the edit distance as a share of the term's length */
  fuzzy?: number
  /**
   * related words (synonyms, derivations) for a tool's name words and a query's words; default
   * WordNet (wordnet.ts) when its package loads; null: none
   */
  lexicon?: Lexicon | null
  /** the weight of a query word's related words against the word itself (0: not searched) */
  relatedQuery?: number
  /** the boost of a tool's name words' related words, indexed as a field of their own (0: none) */
  relatedName?: number
  /**
   * a query word is expanded only when fewer items than this hold it (1: only words the index
   * does not know; Infinity: every word): a word the tools use already needs no synonym
   */
  relatedRare?: number
  /** take how a query is asked off before ranking it ("is there a way to", "help me"; asking.ts) */
  normalise?: boolean
  /** add the everyday words for a tool's name words to its related words (asking.ts) */
  expand?: boolean
}

const FIELDS = ['name', 'title', 'description', 'params', 'source', 'related', 'asked'] as const
/** how many of the best results are varied by kind (#varied) */
const VARIED_POOL = 50
/** (`asked`, a model's phrases, weighs as the description: not measured, no model is reachable here) */
const BOOST = { name: 3, title: 2, description: 1, params: 0.7, source: 1.5, asked: 1 }
/** tuned on the eval's development queries (bench/eval-tools) */
const RELATED = { query: 0.6, name: 0.5, rare: 3 }

/** Words that say nothing about which tool: a query of only these is no match. */
const STOPWORDS = new Set(
  (
    'a an the to of in on for with and or but by from at as into about over is are be been being it ' +
    'its this that these those i me my we our you your he she they them their please can could would ' +
    'should will shall may might must do does did done have has had want need like some any all ' +
    'what which who whom how when where why there here just also then than so very up out get tool'
  ).split(' '),
)

/** `createIssue`, `create_issue`, `create-issue`, `mcp__gh__x` → their words. */
export function words(text: string): string[] {
  return (
    text
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      // `HTTPServer` → `HTTP Server`; a lookahead, not `([A-Z]+)([A-Z][a-z])`, whose backtracking
      // made a long run of capitals cost its length squared (50,000 of them: 8 s)
      .replace(/([A-Z])(?=[A-Z][a-z])/g, '$1 ')
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)
  )
}

/** A light stem, so that `issues`, `issued` and `issue` meet (applied alike to index and query). */
function stem(term: string): string {
  if (term.length > 4 && term.endsWith('ies')) return term.slice(0, -3) + 'y'
  if (term.length > 4 && term.endsWith('ing')) return term.slice(0, -3)
  if (term.length > 4 && term.endsWith('ed')) return term.slice(0, -2)
  if (term.length > 3 && term.endsWith('s') && !term.endsWith('ss')) return term.slice(0, -1)
  return term
}

/** A term as the index holds it (and a query's): stopwords dropped, the rest stemmed. */
export const processTerm = (term: string) => (STOPWORDS.has(term) ? null : stem(term))

interface Doc {
  id: string
  name: string
  title: string
  description: string
  params: string
  source: string
  /** words related to the name's (a lexicon's synonyms and derivations) */
  related: string
  /** the requests people make for it (Searchable's asked) */
  asked: string
}

export class SearchIndex<T extends Searchable> {
  readonly #items = new Map<string, T>()
  readonly #search: MiniSearch<Doc>
  readonly #threshold: number | undefined
  readonly #models: readonly NoMatchModel[] | undefined
  readonly #fuzzy: number
  readonly #hybrid: HybridOptions
  readonly #lexicon: Lexicon | null
  readonly #relatedQuery: number
  readonly #relatedName: number
  readonly #relatedRare: number
  readonly #normalise: boolean
  readonly #expand: boolean
  /** every spelling that names an item exactly (lower case) → the items it names */
  readonly #names = new Map<string, Set<string>>()
  /** the indexed words, each with how many items hold it: a known word is matched as it is */
  readonly #vocabulary = new Map<string, number>()
  /** each `namedBy` term (stemmed as queries are) → the items it names */
  readonly #namedBy = new Map<string, Set<string>>()

  constructor(options: RankOptions = {}) {
    this.#threshold = options.threshold
    this.#models = options.noMatchModels
    this.#fuzzy = options.fuzzy ?? 0.2
    this.#hybrid = options
    this.#lexicon = options.lexicon === undefined ? wordnet() : options.lexicon
    this.#relatedQuery = options.relatedQuery ?? RELATED.query
    this.#relatedName = options.relatedName ?? RELATED.name
    this.#relatedRare = options.relatedRare ?? RELATED.rare
    this.#normalise = options.normalise ?? false
    this.#expand = options.expand ?? true
    this.#search = new MiniSearch<Doc>({
      fields: [...FIELDS],
      tokenize: (text) => words(text),
      processTerm,
    })
  }

  get size(): number {
    return this.#items.size
  }

  /** Adds or replaces (by name). */
  set(item: T): void {
    this.delete(item.name)
    this.#items.set(item.name, item)
    const doc = this.#doc(item)
    this.#search.add(doc)
    this.#count(item, doc, 1)
  }

  delete(name: string): void {
    const item = this.#items.get(name)
    if (!item) return
    this.#items.delete(name)
    this.#search.discard(name)
    this.#count(item, this.#doc(item), -1)
  }

  /** Keeps the exact-name map and the vocabulary in step with an item added (+1) or removed (-1). */
  #count(item: T, doc: Doc, by: 1 | -1): void {
    for (const spelling of new Set(
      [item.name, ...(item.aliases ?? [])].map((n) => n.toLowerCase()),
    )) {
      const named = this.#names.get(spelling) ?? new Set()
      if (by > 0) named.add(item.name)
      else named.delete(item.name)
      if (named.size) this.#names.set(spelling, named)
      else this.#names.delete(spelling)
    }
    for (const term of nameTerms(item)) {
      const named = this.#namedBy.get(term) ?? new Set()
      if (by > 0) named.add(item.name)
      else named.delete(item.name)
      if (named.size) this.#namedBy.set(term, named)
      else this.#namedBy.delete(term)
    }
    const terms = new Set(
      FIELDS.flatMap((f) => words(doc[f]).map(processTerm)).filter((t): t is string => Boolean(t)),
    )
    for (const term of terms) {
      const n = (this.#vocabulary.get(term) ?? 0) + by
      if (n > 0) this.#vocabulary.set(term, n)
      else this.#vocabulary.delete(term)
    }
  }

  /** Makes the index hold exactly `items`: only what changed is re-indexed. */
  sync(items: Iterable<T>): void {
    const next = new Map([...items].map((item) => [item.name, item]))
    for (const name of [...this.#items.keys()]) if (!next.has(name)) this.delete(name)
    for (const [name, item] of next) if (this.#items.get(name) !== item) this.set(item)
  }

  get(name: string): T | undefined {
    return this.#items.get(name)
  }

  /** The best `limit` for the query; with `similarity` (the semantic arm's), words and meaning fused. */
  search(asked: string, limit = 5, similarity?: Similarity): SearchOutcome<T> {
    // what is asked, without how ("is there a way to", "help me"); names are read in the whole query
    const query = this.#normalise ? withoutAsking(asked) : asked
    // every word may be a prefix (`calc` of calculator); only a word the index lacks may be a typo
    // (expanding every word by edit distance would cost a walk of the whole term tree per word)
    const unknown = (term: string) => !this.#vocabulary.has(term)
    const related = this.#relatedOf(query)
    const boost = { ...BOOST, related: this.#relatedName }
    const ranked = this.#search.search(
      {
        combineWith: 'OR',
        queries: [
          {
            queries: [query],
            prefix: (term: string) => term.length >= 3,
            fuzzy: (term: string) => (term.length >= 5 && unknown(term) ? this.#fuzzy : false),
          },
          // a query word's related words, weighed less, as they are (no prefix, no typo), and not
          // against a tool's own related words (a synonym of a synonym is noise)
          ...(related
            ? [
                {
                  queries: [related],
                  fields: FIELDS.filter((f) => f !== 'related'),
                  boostTerm: () => this.#relatedQuery,
                },
              ]
            : []),
        ],
      },
      { boost, combineWith: 'OR' },
    )
    const exact = this.exact(asked)
    if (exact.length > 1) {
      const order = new Map(ranked.map((r, i) => [r.id as string, i]))
      const rank = (name: string) => order.get(name) ?? ranked.length
      exact.sort((a, b) => rank(a.item.name) - rank(b.item.name))
    }
    const seen = new Set(exact.map((c) => c.item.name))
    const queryTerms = termsOf(query)
    const named = this.#namedIn(query === asked ? queryTerms : termsOf(asked))
    const shown = (id: string) => this.#items.has(id) && !seen.has(id)
    // words alone and nothing named: only the results that can be shown are read (a query can
    // match thousands; #varied reads the best VARIED_POOL), else the whole ranking
    const order: Ranked[] = similarity
      ? fuse(ranked as Array<MiniResult & { id: string }>, similarity, this.#hybrid)
      : named.size
        ? ranked.map((r) => ({ id: r.id as string, score: r.score, lexical: r }))
        : firstRanked(ranked, Math.max(VARIED_POOL, limit), shown)
    // named by all its name's words: first after the exact names, in the order of the ranking
    const position = new Map(named.size ? order.map((r, i) => [r.id, i]) : [])
    const whole = [...named]
      .filter(([name, n]) => !seen.has(name) && n.all)
      .sort(([a], [b]) => (position.get(a) ?? Infinity) - (position.get(b) ?? Infinity))
      .map(([name, n]) => ({ item: this.#items.get(name)!, score: Infinity, why: n.why }))
    for (const c of whole) seen.add(c.item.name)
    // only the results shown are explained (a query can match thousands)
    const room = Math.max(0, limit - exact.length - whole.length)
    const varied = this.#varied(order.filter((r) => shown(r.id)))
    const rest = withNamed(varied, room, (id) => named.has(id)).map((r) => ({
      item: this.#items.get(r.id)!,
      score: r.score,
      why: [named.get(r.id)?.why, whyOf(r)].filter(Boolean).join('; '),
    }))
    const candidates = [...exact, ...whole, ...rest].slice(0, limit)
    const arms = similarity ? 'hybrid' : 'lexical'
    if (exact.length || named.size) return { candidates, noMatch: false, arms }
    const model = this.#threshold === undefined ? modelFor(this.size, this.#models) : undefined
    const evidence = this.#evidence(queryTerms, ranked, model)
    const covered = model
      ? evidence.noMatch! < model.cut
      : evidence.signals.coverage >= (this.#threshold ?? SHARE) && queryTerms.size > 0
    const best = similarity?.top[0]?.similarity ?? 0
    const noMatch = similarity ? hybridNoMatch(best, covered, this.#hybrid) : !covered
    return { candidates, noMatch, arms, evidence }
  }

  /** What the words say about a match (the query's own words: its related words rank, they do not match). */
  #evidence(
    queryTerms: Set<string>,
    ranked: MiniResult[],
    model: NoMatchModel | undefined,
  ): NonNullable<SearchOutcome<T>['evidence']> {
    const df = (term: string) => this.#vocabulary.get(term) ?? 0
    const signals = signalsOf(queryTerms, ranked, df, this.size)
    return { signals, noMatch: model && noMatchProbability(signals, model) }
  }

  /** A query's words' related words (less the query's own), as one string to search; '' for none. */
  #relatedOf(query: string): string {
    if (!this.#lexicon || !this.#relatedQuery) return ''
    const raw = words(query)
    const own = new Set(raw.map(processTerm).filter((t): t is string => !!t))
    const related = new Set<string>()
    const rare = (term: string) => (this.#vocabulary.get(term) ?? 0) < this.#relatedRare
    for (const word of new Set(raw)) {
      const term = processTerm(word)
      if (word.length >= 3 && term && rare(term))
        for (const r of this.#lexicon.related(word)) {
          const t = processTerm(r)
          if (t && !own.has(t)) related.add(r)
        }
    }
    return [...related].join(' ')
  }

  /** An item as the index holds it: its fields, and its name words' related words. */
  #doc(item: T): Doc {
    const doc = toDoc(item)
    const lexicon = this.#relatedName ? this.#lexicon : null
    if (!lexicon && !this.#expand) return doc
    const own = new Set(words(doc.name))
    const related = new Set<string>()
    for (const word of kindOf(item).split(' ')) {
      if (word.length < 3 || !processTerm(word)) continue
      for (const r of lexicon?.related(word) ?? []) if (!own.has(r)) related.add(r)
      if (this.#expand) for (const r of everyday(word)) if (!own.has(r)) related.add(r)
    }
    return { ...doc, related: [...related].join(' ') }
  }

  /** The items a query's terms name through their `namedBy` words: whether by all of them, and why. */
  #namedIn(queryTerms: Set<string>): Map<string, { all: boolean; why: string }> {
    const hits = new Map<string, string[]>()
    for (const term of queryTerms)
      for (const name of this.#namedBy.get(term) ?? [])
        hits.set(name, [...(hits.get(name) ?? []), term])
    const out = new Map<string, { all: boolean; why: string }>()
    for (const [name, terms] of hits) {
      const item = this.#items.get(name)
      if (!item) continue
      out.set(name, {
        all: nameTerms(item).every((t) => queryTerms.has(t)),
        why: `name word${terms.length > 1 ? 's' : ''} ${terms.join(', ')} in the query`,
      })
    }
    return out
  }

  /**
   * One of each kind of tool first, then the rest: `create_issue` on GitHub, GitLab and Gitea is one
   * kind, and three of it would crowd out the tool the query meant (from the best 50).
   */
  #varied(ranked: Ranked[]): Ranked[] {
    const kinds = new Set<string>()
    const first: Ranked[] = []
    const later: Ranked[] = []
    for (const r of ranked.slice(0, VARIED_POOL)) {
      const kind = kindOf(this.#items.get(r.id)!)
      if (kinds.has(kind)) later.push(r)
      else {
        kinds.add(kind)
        first.push(r)
      }
    }
    return [...first, ...later, ...ranked.slice(VARIED_POOL)]
  }

  /**
   * Things the query names exactly, ranked first by search (`select:a,b` names them outright). The longest naming wins:
   * `gitlab/create_issue` is GitLab's, though GitHub's tool is a `create_issue` too.
   */
  exact(query: string): Candidate<T>[] {
    const select = /^\s*select:(.+)$/i.exec(query)?.[1]
    if (select) return this.#named(select.split(',').map((n) => n.trim()))
    const whole = query.trim().toLowerCase()
    const quoted = new Set(
      [...query.toLowerCase().matchAll(/[`'"]([^`'"\s]+)[`'"]/g)].map((m) => m[1]!),
    )
    // a plain word (find, query, search) names a tool only as the whole query or quoted (`fetch`):
    // in a sentence it is a word, not a name
    const named = (spelling: string) =>
      /[/._-]|\d/.test(spelling) || spelling === whole || quoted.has(spelling)
    const longest = new Map<string, number>()
    for (const spelling of spellings(query).filter(named))
      for (const name of this.#names.get(spelling) ?? [])
        longest.set(name, Math.max(longest.get(name) ?? 0, spelling.length))
    const best = Math.max(0, ...longest.values())
    return this.#named([...longest].filter(([, length]) => length === best).map(([name]) => name))
  }

  #named(names: string[]): Candidate<T>[] {
    return names.flatMap((name) => {
      const item = this.#items.get(name)
      return item ? [{ item, score: Infinity, why: 'exact name' }] : []
    })
  }
}

/**
 * The spellings in a query that could name something: each run of name characters
 * (`mcp__gh__create_issue`, `gitlab/create_issue`, `files.read_text`), and the pieces of one
 * joined by `/` or `.` (`config.yaml` → `config`, `yaml`), lower-cased.
 */
function spellings(query: string): string[] {
  const runs = query.toLowerCase().match(/[\p{L}\p{N}_-]+(?:[./][\p{L}\p{N}_-]+)*/gu) ?? []
  return [
    ...new Set(runs.flatMap((run) => [run, ...(/[./]/.test(run) ? run.split(/[./]/) : [])])),
  ].filter((s) => s.length >= 3)
}

/** A query's terms, as the index holds terms (stopwords dropped, stemmed). */
function termsOf(query: string): Set<string> {
  return new Set(
    words(query)
      .map(processTerm)
      .filter((t): t is string => !!t),
  )
}

/** An item's `namedBy` words as terms (stemmed as queries are): 3 letters or more, no stopwords. */
function nameTerms(item: Searchable): string[] {
  const terms = (item.namedBy ?? []).flatMap((w) => words(w)).filter((w) => w.length >= 3)
  return [...new Set(terms.map(processTerm).filter((t): t is string => !!t))]
}

/**
 * The first `room` of `ranked`, with every named one among them: a named result the room would
 * cut takes the place of the last unnamed one shown (a query that names a thing always shows it).
 */
function withNamed(ranked: Ranked[], room: number, isNamed: (id: string) => boolean): Ranked[] {
  const shown = ranked.slice(0, room)
  const cut = ranked.slice(room).filter((r) => isNamed(r.id))
  if (!cut.length) return shown
  const keep = shown.filter((r) => isNamed(r.id))
  const others = shown
    .filter((r) => !isNamed(r.id))
    .slice(0, Math.max(0, room - keep.length - cut.length))
  const kept = new Set([...keep, ...cut, ...others].slice(0, room))
  return [...shown, ...cut].filter((r) => kept.has(r))
}

/** `mcp__sapling__sapling_show` from `mcp:sapling` → `show`: the name without its source's words. */
function kindOf(item: Searchable): string {
  const source = new Set(words((item.source ?? '').replace(/^(mcp|exec):/, '')))
  const bare = item.aliases?.at(-1) ?? item.name
  return words(bare)
    .filter((w) => !source.has(w))
    .join(' ')
}

function toDoc(item: Searchable): Doc {
  return {
    id: item.name,
    name: item.name,
    title: item.title ?? '',
    description: item.description ?? '',
    params: (item.params ?? []).map((p) => `${p.name} ${p.description ?? ''}`).join(' '),
    source: (item.source ?? '').replace(/^(mcp|exec):/, ''),
    related: '',
    asked: (item.asked ?? []).join(' . '),
  }
}

/** The first `count` results `keep` lets through, as Ranked (the rest are never built). */
function firstRanked(ranked: MiniResult[], count: number, keep: (id: string) => boolean): Ranked[] {
  const out: Ranked[] = []
  for (let i = 0; i < ranked.length && out.length < count; i++) {
    const r = ranked[i]!
    if (keep(r.id as string)) out.push({ id: r.id as string, score: r.score, lexical: r })
  }
  return out
}

/** A lexical result, or one fused with its similarity in meaning. */
interface Ranked {
  id: string
  score: number
  lexical?: MiniResult
  similarity?: number
}

/** `issue, create in name; repo in params; meaning 0.48`: the words it matched, how close in meaning. */
function whyOf({ lexical, similarity }: Ranked): string {
  const byField = new Map<string, string[]>()
  for (const [term, fields] of Object.entries(lexical?.match ?? {}))
    for (const field of fields) byField.set(field, [...(byField.get(field) ?? []), term])
  const matched = [...byField].map(([field, terms]) => `${terms.join(', ')} in ${field}`)
  if (similarity !== undefined) matched.push(`meaning ${similarity.toFixed(2)}`)
  return matched.join('; ')
}
