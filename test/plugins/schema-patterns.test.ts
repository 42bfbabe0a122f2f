// JSON Schema patterns on the linear-time engine (runtime/schema-safety): the translation from
// ECMAScript to RE2 matches what JavaScript matches, and what RE2 cannot run is refused by name.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  createAjv,
  linearPattern,
  MAX_PATTERN_SIZE,
  patternProblem,
  riskyPattern,
} from '../../src/lib/schema-safety.ts'

/** Every pattern against every string: the linear engine must answer as `new RegExp(p, 'u')`. */
function sameAsJavaScript(patterns: string[], strings: string[]) {
  let compared = 0
  for (const p of patterns) {
    assert.equal(patternProblem(p), undefined, p)
    const js = new RegExp(p, 'u')
    const linear = linearPattern(p)
    for (const s of strings) {
      assert.equal(linear.test(s), js.test(s), `${JSON.stringify(p)} on ${JSON.stringify(s)}`)
      compared++
    }
  }
  return compared
}

const STRINGS = [
  '',
  'a',
  'A',
  'ab',
  'aa',
  'abc',
  'a-b',
  'foo bar',
  ' ',
  '\t',
  '\n',
  '\r',
  '\v',
  '\f',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
  '\u200b',
  '\u0085',
  '1',
  '123',
  '١٢٣',
  'é',
  'É',
  'ß',
  'ǅ',
  'αβγ',
  'Ω',
  '😀',
  '😀😀',
  '\ud83d',
  '\ude00',
  '\ud83d\ude00x',
  '\u0000',
  '\u0001',
  '\b',
  '-',
  '^',
  '/',
  '.',
  '[',
  ']',
  '$',
  '_',
  'a@b.c',
  'x\n',
  '\na',
  'ab\nc',
  '\u{10000}',
  '\u{10FFFF}',
]

describe('the translation matches JavaScript', () => {
  it('ordinary patterns: ids, digits, words, anchors, quantifiers, groups, classes', () => {
    sameAsJavaScript(
      [
        '^[a-z0-9-]+$',
        '^[a-z0-9_-]{1,64}$',
        '^\\d{4}-\\d{2}-\\d{2}$',
        '^\\w+$',
        '\\bfoo\\b',
        '\\Bo',
        '^a{2,3}$',
        '^a{2,}$',
        '^(?:ab)+$',
        '^(?<name>ab)+$',
        '^(a|b)*c$',
        '^(ab|cd)+$', // refused by the old guard: the engine makes such patterns safe
        '^([a-z]+-)*[a-z]+$',
        '^a*?$',
        '^a+?b$',
        'a$',
        '^$',
        '^(?:)$',
        '^https?://[^/]+/.*$',
        '^[\\w.-]+@[\\w.-]+$',
        '^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$',
      ],
      STRINGS,
    )
  })

  it('where RE2 and JavaScript differ: . \\s \\S [] [^] \\b in a class, \\d, $ before a newline', () => {
    sameAsJavaScript(
      [
        '^.$', // JavaScript's . stops at \n \r \u2028 \u2029 and takes a whole code point (u flag)
        '^.*$',
        '^.\\S.$',
        '^\\s*$', // JavaScript's \s has \v, \u00a0, \u2028, \ufeff …; RE2's has five ASCII ones
        '^\\S+$',
        '[\\s]',
        '[\\S]',
        '[^\\s]',
        '^[\\d\\s]+$',
        '^[^\\d\\s]+$',
        '[]', // nothing, in JavaScript; RE2 would read []a] as a class holding ]
        'a[]b',
        '[^]', // anything, in JavaScript; RE2 would not parse it
        '^[^]*$',
        '^[\\b]$', // backspace in a class
        '^\\d+$', // ASCII digits only in both: ١٢٣ matches neither
        'a$', // no match before a final newline in either
        '^\\v$',
        '^\\f$',
        '^\\t$',
        '\\n',
        '\\r',
        '^[\\s\\S]{0,10}$',
      ],
      STRINGS,
    )
  })

  it('escapes, unicode classes and astral characters (u flag)', () => {
    sameAsJavaScript(
      [
        '^\\p{L}+$',
        '^\\p{Lu}$',
        '^\\P{L}+$',
        '^\\p{Letter}+$',
        '^\\p{gc=Lu}$',
        '^\\p{General_Category=Uppercase_Letter}$',
        '^\\p{Script=Greek}+$',
        '^\\p{sc=Latin}$',
        '^[\\p{L}\\p{N}_-]+$',
        '^\\p{Nd}+$',
        '^\\p{ASCII}+$',
        '^\\p{Any}$',
        '^\\p{Alpha}+$',
        '^\\p{Lowercase}$',
        '^\\p{White_Space}$',
        '^\\p{Emoji}$',
        '^\\p{Cs}$',
        '^\\u0041$',
        '^\\u{1F600}$',
        '^\\uD83D\\uDE00$', // a pair of escapes is one code point
        '^[\\uD83D\\uDE00]$',
        '^[😀-😎]+$',
        '^😀+$',
        '^[\\u{10000}-\\u{10FFFF}]$',
        '^\\x41$',
        '^\\cA$',
        '^\\0$',
        '^[\\x00-\\x1F]$',
        '^[^\\x00-\\x7F]+$',
        '^[a\\-z]$',
        '^[-a]$',
        '^[a-]$',
        '^[\\^a]$',
        '^[^^]$',
        '^\\/$',
        '^\\.$',
        '^[.]$',
        '^[[]$',
        '^[\\]]$',
        '^\\$$',
      ],
      STRINGS,
    )
  })

  it('random patterns over the same pieces agree with JavaScript on random strings', () => {
    let seed = 14
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const pick = <T>(xs: T[]) => xs[rnd(xs.length)]!
    const atoms = ['a', 'b', '.', '\\d', '\\w', '\\s', '\\S', '[ab]', '[^a]', '[\\s\\S]', '[]']
    atoms.push('[^]', '\\p{L}', '\\p{Lu}', '\\u00e9', '😀', '[a-c😀]', '(?:a|b)', '(a|)', '\\n')
    const quantifiers = ['', '', '*', '+', '?', '{2}', '{1,3}', '*?', '{0,}']
    const piece = (depth: number): string =>
      depth < 2 && rnd(4) === 0
        ? `(${sequence(depth + 1)}${rnd(2) ? `|${sequence(depth + 1)}` : ''})${pick(quantifiers)}`
        : pick(atoms) + pick(quantifiers)
    const sequence = (depth: number) =>
      Array.from({ length: 1 + rnd(4) }, () => piece(depth)).join('')
    const alphabet = ['a', 'b', 'c', ' ', '\n', '\r', '\u2028', '\u00a0', 'é', 'É', '😀', '1', '_']
    alphabet.push('\ud83d')
    const strings = Array.from({ length: 40 }, () =>
      Array.from({ length: rnd(8) }, () => pick(alphabet)).join(''),
    )
    const patterns = new Set<string>()
    while (patterns.size < 300)
      patterns.add(`${rnd(2) ? '^' : ''}${sequence(0)}${rnd(2) ? '$' : ''}`)
    assert.equal(sameAsJavaScript([...patterns], strings), 300 * 40)
  })
})

describe('what the engine cannot run is refused, with the reason', () => {
  it('lookarounds, backreferences, modifiers, large counts, unknown properties, invalid syntax', () => {
    const refused: Array<[string, RegExp]> = [
      ['(?<=a)b', /uses a lookbehind/],
      ['(?<!a)b', /uses a lookbehind/],
      ['a(?=b)', /uses a lookahead/],
      ['a(?!b)', /uses a lookahead/],
      ['(a)\\1', /uses a backreference \(\\1\)/],
      ['(?<x>a)\\k<x>', /uses a backreference/],
      ['(?i:a)b', /inline modifier|is not a valid regular expression/], // Node 20 has no modifiers
      ['a{1001}', /repeats more than 1000 times \(\{1001\}\); use maxLength/],
      ['^.{0,5000}$', /repeats more than 1000 times/],
      ['(a{100}){100}', /compiles to more than 8192 instructions; the limit is 1024/],
      ['[ab]{0,999}[ab]{0,999}', /compiles to 3998 instructions; the limit is 1024/],
      ['^.{1,1000}$', /compiles to 2003 instructions; the limit is 1024 \(use maxLength/],
      ['\\p{Script_Extensions=Latin}', /Unicode property \\p\{Script_Extensions=Latin\}/],
      ['\\p{sc=Grek}', /RE2 cannot run it/],
      ['[', /is not a valid regular expression/],
      ['\\q', /is not a valid regular expression/], // u mode: no identity escapes
    ]
    for (const [p, reason] of refused) {
      assert.match(patternProblem(p) ?? 'accepted', reason, p)
      assert.throws(() => linearPattern(p), reason, p)
    }
    assert.equal(MAX_PATTERN_SIZE, 1024)
    assert.equal(patternProblem('^.{1,500}$'), undefined, 'a counted repeat of 500 fits')
  })

  it('riskyPattern finds them anywhere a pattern is: pattern, patternProperties, propertyNames', () => {
    const lookbehind = '(?<=a)b'
    const schemas = [
      { type: 'object', properties: { a: { type: 'string', pattern: lookbehind } } },
      { type: 'object', patternProperties: { [lookbehind]: { type: 'string' } } },
      { type: 'object', propertyNames: { pattern: lookbehind } },
      { type: 'object', properties: { a: { type: 'array', items: { pattern: lookbehind } } } },
      { type: 'object', $defs: { x: { anyOf: [{ pattern: lookbehind }] } } },
      { type: 'object', properties: { enum: { pattern: lookbehind } } }, // a property named enum
    ]
    for (const schema of schemas)
      assert.match(
        riskyPattern(schema) ?? 'accepted',
        /the pattern "\(\?<=a\)b", which yoke does not run: it uses a lookbehind \(\(\?<= or \(\?<!\)\. Patterns run on a linear-time engine \(RE2\): no lookarounds or backreferences/,
        JSON.stringify(schema),
      )
    const fine = [
      { type: 'object', properties: { a: { type: 'string', pattern: '^(a|aa)+$' } } },
      { type: 'object', properties: { pattern: { type: 'string' } } }, // a property named pattern
      { type: 'object', properties: { a: { const: { pattern: lookbehind } } } }, // data
      { type: 'object', properties: { a: { enum: [{ pattern: lookbehind }] } } },
      { type: 'object', properties: { a: { default: { pattern: lookbehind } } } },
    ]
    for (const schema of fine) assert.equal(riskyPattern(schema), undefined, JSON.stringify(schema))
  })

  it('ajv from createAjv refuses such a schema too, instead of compiling it on the backtracking engine', () => {
    const ajv = createAjv()
    assert.throws(
      () => ajv.compile({ type: 'object', properties: { a: { pattern: 'a(?=b)' } } }),
      /uses a lookahead/,
    )
    const v = ajv.compile({ type: 'string', pattern: '^\\p{L}+$' })
    assert.equal(v('héllo'), true)
    assert.equal(v('a1'), false)
    const names = ajv.compile({ type: 'object', propertyNames: { pattern: '^[a-z]+$' } })
    assert.equal(names({ ok: 1 }), true)
    assert.equal(names({ Bad: 1 }), false)
    const props = ajv.compile({
      type: 'object',
      patternProperties: { '^n_': { type: 'number' } },
      additionalProperties: false,
    })
    assert.equal(props({ n_a: 1 }), true)
    assert.equal(props({ n_a: 'x' }), false)
    assert.equal(props({ other: 1 }), false)
  })
})
