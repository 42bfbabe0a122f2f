// tool-search's calibrated "no match" (issue 32): the lexical signals a query's results give, the
// logistic model learned per index size on bench/eval-tools' development queries (applied from a
// quarter of the smallest size learned; the share rule below), the decision on 947 real MCP tools,
// and tool_search's answer when nothing matches: the closest candidates named as not matches,
// with their one-line summaries, and the model asked to rephrase once.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { RegisteredTool } from 'yoke'
import { realCorpus } from '../../../bench/eval-tools/corpus.ts'
import { describe as answerOf } from '../../../plugins/tool-search/answer.ts'
import type { FinderOutcome } from '../../../plugins/tool-search/finder.ts'
import { MODELS, modelFor, signalsOf } from '../../../plugins/tool-search/no-match.ts'
import { SearchIndex, type Searchable } from '../../../plugins/tool-search/rank.ts'

describe('the no-match signals', () => {
  const df: Record<string, number> = { send: 40, email: 3, messag: 5 }
  const of = (
    terms: string[],
    ranked: Array<{ queryTerms: string[]; match: Record<string, unknown> }>,
  ) =>
    signalsOf(
      new Set(terms),
      ranked.map((r) => ({ ...r, score: 1 })),
      (t) => df[t] ?? 0,
      100,
    )

  it('a candidate holding every word covers the query whole, nothing left out or unknown', () => {
    const s = of(
      ['send', 'email'],
      [{ queryTerms: ['send', 'email'], match: { send: 1, email: 1 } }],
    )
    assert.equal(s.coverage, 1)
    assert.equal(s.weighted, 1)
    assert.equal(s.leftOut, 0)
    assert.equal(s.unknown, 0)
  })

  it('a common word matched and a word no tool holds left over: little weight covered, the rarest left out, unknown', () => {
    const s = of(['send', 'sms'], [{ queryTerms: ['send'], match: { send: 1 } }])
    assert.equal(s.coverage, 0.5)
    assert.ok(s.weighted < 0.3, `weighted ${s.weighted}`)
    assert.equal(s.leftOut, 1, 'sms: no tool holds it')
    assert.equal(s.unknown, 0.5)
  })

  it('a word met only as the prefix of a longer one weighs half', () => {
    const whole = of(['messag'], [{ queryTerms: ['messag'], match: { messag: 1 } }])
    const prefix = of(['messag'], [{ queryTerms: ['messag'], match: { messaging: 1 } }])
    assert.equal(prefix.coverage, whole.coverage)
    assert.equal(prefix.weighted, whole.weighted / 2)
  })
})

describe('the model per index size', () => {
  it('is the one learned nearest in orders of magnitude; none under a quarter of the smallest', () => {
    const sizes = MODELS.map((m) => m.size)
    assert.deepEqual(sizes, [1000, 5000, 10000])
    assert.equal(modelFor(30), undefined)
    assert.equal(modelFor(249), undefined)
    assert.equal(modelFor(250)?.size, 1000)
    assert.equal(modelFor(2000)?.size, 1000)
    assert.equal(modelFor(3000)?.size, 5000)
    assert.equal(modelFor(50_000)?.size, 10000)
  })

  it('decides on 947 real MCP tools: needs nothing serves are no match, served ones match', () => {
    const index = new SearchIndex<Searchable>()
    for (const tool of realCorpus()) index.set(tool)
    const said = (query: string) => index.search(query, 5)
    for (const query of ['mine some bitcoin', 'set the thermostat to 21 degrees']) {
      const outcome = said(query)
      assert.equal(outcome.noMatch, true, query)
      assert.ok(outcome.evidence!.noMatch! >= modelFor(index.size)!.cut, query)
      assert.ok(outcome.candidates.length > 0, 'the closest still come with it')
    }
    for (const [query, tool] of [
      ['take a screenshot of the page', 'take_screenshot'],
      ['list the commits on main', 'list_commits'],
      ['create a github issue for the login crash', 'mcp__github__create_issue'],
    ] as const) {
      const outcome = said(query)
      assert.equal(outcome.noMatch, false, query)
      assert.ok(
        outcome.candidates.some((c) => c.item.name.endsWith(tool)),
        query,
      )
    }
    // an exact name decides nothing: it is a match
    const exact = said('mcp__github__create_issue')
    assert.equal(exact.noMatch, false)
    assert.equal(exact.evidence, undefined)
  })

  it('a small index decides by the share of the query words matched (no model)', () => {
    const index = new SearchIndex<Searchable>({ lexicon: null })
    index.set({ name: 'send_email', description: 'Send an email' })
    index.set({ name: 'list_files', description: 'List the files of a folder' })
    const miss = index.search('send an sms to my phone', 3)
    assert.equal(miss.evidence!.noMatch, undefined)
    assert.equal(miss.noMatch, true, 'send: 1 of 3 words')
    assert.equal(index.search('send an email', 3).noMatch, false)
    // a threshold set by the user is the share rule at any size
    const strict = new SearchIndex<Searchable>({ lexicon: null, threshold: 0.9 })
    strict.set({ name: 'send_email', description: 'Send an email' })
    assert.equal(strict.search('send an email to Bob', 3).noMatch, true)
  })
})

describe("tool_search's answer when nothing matches", () => {
  const tool = (name: string, description: string) =>
    ({ name, description, source: 'mcp:line', risk: 'low' }) as unknown as RegisteredTool
  const outcome = (noMatch: boolean): FinderOutcome => ({
    noMatch,
    semantic: 'off',
    arms: 'lexical',
    candidates: [
      {
        item: tool('push_text_message', 'Push a text message to a LINE user.\nMore.'),
        score: 2,
        why: 'text, messag in name',
      },
      {
        item: tool('broadcast_text_message', 'Broadcast a text message to every LINE follower.'),
        score: 1.5,
        why: 'text in name',
      },
    ],
  })

  it('names the closest as not matches, with their one-line summaries, and asks to rephrase once', () => {
    const text = answerOf('send an SMS to +1 555 0100', outcome(true))
    assert.match(text, /^No tool matches "send an SMS to \+1 555 0100"\. /)
    assert.match(text, /nothing was loaded/)
    assert.match(text, /The closest, which are NOT matches/)
    assert.match(text, /- push_text_message \(mcp:line\): Push a text message to a LINE user\.\n/)
    assert.doesNotMatch(text, /More\./, 'the first line only')
    assert.doesNotMatch(text, /\d\.\d\d:/, 'no score: nothing is dressed as a match')
    assert.match(text, /search again in its terms/)
    assert.match(text, /Rephrase at most once/)
    assert.match(text, /do not guess a tool name/)
  })

  it('with no candidate at all, says there is no tool for it', () => {
    const text = answerOf('please do it', { ...outcome(true), candidates: [] })
    assert.doesNotMatch(text, /closest/)
    assert.match(text, /There is no tool here for that/)
  })

  it('a match is listed as found, with its score', () => {
    assert.match(
      answerOf('send a text', outcome(false)),
      /^Found 2 .*\n- push_text_message \(mcp:line, low risk; 2\.00: /,
    )
  })
})
