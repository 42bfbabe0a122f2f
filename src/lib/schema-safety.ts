/**
 * @module lib/schema-safety
 * JSON Schema patterns on a linear-time engine. ajv compiles `pattern`, `patternProperties` and
 * the `pattern` of `propertyNames` into RegExps that run on the event loop when arguments are
 * validated; with JavaScript's backtracking engine `^a*a*a*a*…b$`, `\d+\d+\d+$` or `(\s|.)*x` let
 * one 200-character argument freeze yoke for seconds to minutes. Here every pattern runs on re2js
 * (RE2: an automaton, time linear in the string), translated from ECMAScript syntax so that it
 * matches exactly what JavaScript's `u`-mode RegExp matches (`.`, `\s`, `[^]`, `\p{…}` differ in
 * RE2 and are rewritten). What RE2 cannot run is refused, never run on the backtracking engine:
 * lookarounds, backreferences, inline modifiers, repetition counts over 1000 and patterns that
 * compile to more than MAX_PATTERN_SIZE instructions (riskyPattern names the reason; the engine
 * throws, so ajv refuses the schema too).
 *
 * Linear is O(length × program size); a validation's pattern work is capped at PATTERN_BUDGET
 * (characters × instructions, summed over the strings it checks: a onepass pattern such as
 * `^[a-z0-9-]+$` costs one per character). Past it the validation fails closed with a reason
 * instead of running on.
 */
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { RE2JS } from 're2js'

const MAX_DEPTH = 64
/** Compiled size of one pattern, in RE2 instructions (`^.{1,500}$` is 1,003; `^[a-z0-9-]+$` is 6). */
export const MAX_PATTERN_SIZE = 1024
/**
 * Pattern work per validation, in characters × instructions: 30-70 ms measured for patterns whose
 * automaton explodes (re2js 2.10, ~30-70 ns a step), and every allowed pattern checks 1,024 characters.
 */
export const PATTERN_BUDGET = 2 ** 20
/** The `url` format (ajv-formats) backtracks quadratically: longer strings are not URLs. */
export const MAX_URL_LENGTH = 2048
const MAX_REPEAT = 1000
const CACHE_SIZE = 200 // compiled patterns kept after their tools go (each holds a DFA cache of up to 8 MB)

type RegExpEngine = NonNullable<NonNullable<Options['code']>['regExp']>

/** A pattern yoke does not run; the message says why. */
export class PatternRefused extends Error {}
/** Thrown by a pattern test once a validation has spent PATTERN_BUDGET. */
export class PatternBudgetError extends Error {}

interface Compiled {
  test(s: string): boolean
  toString(): string
  size: number
}

const cache = new Map<string, Compiled | PatternRefused>()

/**
 * The RE2 form of an ECMAScript (`u` flag) pattern, compiled and cached; throws PatternRefused. The
 * result tests like `new RegExp(source, 'u').test(s)`, in linear time.
 */
export function linearPattern(source: string): Compiled {
  let entry = cache.get(source)
  if (!entry) {
    try {
      entry = compile(source)
    } catch (err) {
      if (!(err instanceof PatternRefused)) throw err
      entry = err
    }
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!)
    cache.set(source, entry)
  }
  if (entry instanceof PatternRefused) throw entry
  return entry
}

/** Why yoke does not run this pattern; undefined when it does. */
export function patternProblem(source: string): string | undefined {
  try {
    linearPattern(source)
    return undefined
  } catch (err) {
    if (err instanceof PatternRefused) return err.message
    throw err
  }
}

/** ajv's `code.regExp`: every schema pattern on the linear engine (the `u` flag is always on). */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string) => linearPattern(pattern),
  { code: 'linearPattern' }, // only used by ajv's standalone code, which yoke does not generate
)

/**
 * An ajv with yoke's settings: patterns on the linear engine, ajv-formats (with `url` capped at
 * MAX_URL_LENGTH characters). Every ajv that validates untrusted schemas comes from here.
 */
export function createAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({
    strict: false,
    allErrors: true,
    validateFormats: true,
    ...options,
    code: { ...options.code, regExp: linearRegExp },
  })
  ;(addFormats as unknown as (a: Ajv) => void)(ajv)
  const url = ajv.formats.url
  if (url instanceof RegExp)
    ajv.addFormat('url', (s: string) => s.length <= MAX_URL_LENGTH && url.test(s))
  return ajv
}

let spent: number | undefined // pattern work in the budgeted validation running now

/**
 * A validate function whose pattern tests share PATTERN_BUDGET: past it the validation fails with
 * that reason (errors like ajv's) instead of running on. Outside one, each test has the budget.
 */
export function budgeted<T>(validate: ValidateFunction<T>): ValidateFunction<T> {
  const run = function (this: unknown, data: unknown, cxt?: unknown) {
    const outer = spent
    spent = 0
    try {
      const ok = (validate as (this: unknown, d: unknown, c?: unknown) => boolean).call(
        this,
        data,
        cxt,
      )
      run.errors = validate.errors
      return ok
    } catch (err) {
      if (!(err instanceof PatternBudgetError)) throw err
      const error: ErrorObject = {
        instancePath: '',
        schemaPath: '#',
        keyword: 'pattern',
        params: {},
        message: err.message,
      }
      run.errors = [error]
      return false
    } finally {
      spent = outer
    }
  } as unknown as ValidateFunction<T>
  run.schema = validate.schema
  run.schemaEnv = validate.schemaEnv
  return run
}

function charge(source: string, size: number, length: number): void {
  const cost = size * length
  if (spent === undefined ? cost <= PATTERN_BUDGET : (spent += cost) <= PATTERN_BUDGET) return
  throw new PatternBudgetError(
    `not checked: the strings matched against patterns add up to more than ${PATTERN_BUDGET} characters × instructions, the limit per call (here ${length} characters against ${JSON.stringify(source)}, ${size} instructions each); send shorter strings`,
  )
}

// JavaScript's \s (WhiteSpace and LineTerminator) and its complement, as RE2 class ranges; `.`
// without the s flag; every code point.
const SPACE =
  '\\x{9}-\\x{D}\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}'
const NOT_SPACE =
  '\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{FEFE}\\x{FF00}-\\x{10FFFF}'
const DOT = '[^\\n\\r\\x{2028}\\x{2029}]'
const ANY = '\\x{0}-\\x{10FFFF}'

function compile(source: string): Compiled {
  try {
    new RegExp(source, 'u') // JSON Schema patterns are ECMAScript ones; parsing does not match anything
  } catch (err) {
    throw new PatternRefused(`it is not a valid regular expression (${(err as Error).message})`)
  }
  const { re2, estimate } = translate(source)
  const tooLarge = (n: string) =>
    new PatternRefused(
      `it compiles to ${n} instructions; the limit is ${MAX_PATTERN_SIZE} (use maxLength for long strings)`,
    )
  // compiling that would itself block for long
  if (estimate > MAX_PATTERN_SIZE * 8) throw tooLarge(`more than ${MAX_PATTERN_SIZE * 8}`)
  let re: RE2JS
  try {
    re = RE2JS.compile(re2)
  } catch (err) {
    throw new PatternRefused(`RE2 cannot run it (${(err as Error).message})`)
  }
  const size = re.programSize()
  if (size > MAX_PATTERN_SIZE) throw tooLarge(String(size))
  // a onepass program (anchored, never two ways on) runs one thread: it costs one per character
  const onepass = (re as unknown as { re2Input?: { onepass?: unknown } }).re2Input?.onepass
  const cost = onepass ? 1 : size
  return {
    size: cost,
    test(s: string) {
      charge(source, cost, s.length)
      return re.test(s)
    },
    toString: () => `/${source}/u`,
  }
}

interface Frame {
  sum: number
  alts: number
  last: number
}

/** ECMAScript (u-mode, already parsed by V8) to RE2 syntax, with an upper estimate of its size. */
function translate(src: string): { re2: string; estimate: number } {
  let out = ''
  const frames: Frame[] = [{ sum: 0, alts: 0, last: 0 }]
  const top = () => frames[frames.length - 1]!
  const atom = (text: string, size = 1) => {
    out += text
    top().sum += size
    top().last = size
  }
  const counts = /\{(\d+)(,(\d*))?\}\??/y
  let i = 0
  while (i < src.length) {
    const c = src[i]!
    if (c === '\\') {
      const [text, next] = escape(src, i, false)
      atom(text)
      i = next
    } else if (c === '[') {
      const [text, next] = charClass(src, i)
      atom(text)
      i = next
    } else if (c === '(') {
      if (src.startsWith('(?=', i) || src.startsWith('(?!', i))
        throw new PatternRefused('it uses a lookahead ((?= or (?!)')
      if (src.startsWith('(?<=', i) || src.startsWith('(?<!', i))
        throw new PatternRefused('it uses a lookbehind ((?<= or (?<!)')
      if (src.startsWith('(?:', i)) i += 3
      else if (src.startsWith('(?<', i)) i = src.indexOf('>', i) + 1
      else if (src[i + 1] === '?') throw new PatternRefused('it uses an inline modifier ((?i: …)')
      else i += 1
      out += '(?:' // groups never capture: only test() is asked
      frames.push({ sum: 0, alts: 0, last: 0 })
    } else if (c === ')') {
      const group = frames.pop()!
      atom(')', group.sum + group.alts + 2)
      i++
    } else if (c === '|') {
      out += '|'
      top().alts++
      top().last = 0
      i++
    } else if (c === '.') {
      atom(DOT)
      i++
    } else if (c === '*' || c === '+' || c === '?') {
      const end = src[i + 1] === '?' ? i + 2 : i + 1
      out += src.slice(i, end)
      grow(top(), 1)
      i = end
    } else if (c === '{') {
      counts.lastIndex = i
      const m = counts.exec(src)!
      const min = Number(m[1])
      const max = m[2] ? (m[3] ? Number(m[3]) : min + 1) : min
      if (Math.max(min, Number(m[3] || 0)) > MAX_REPEAT)
        throw new PatternRefused(
          `it repeats more than ${MAX_REPEAT} times (${m[0]}); use maxLength for long strings`,
        )
      out += m[0]
      grow(top(), Math.max(max, 1))
      i += m[0].length
    } else {
      atom(c) // a literal (surrogate pairs are copied unit by unit: RE2 reads code points), ^ or $
      i++
    }
  }
  const whole = frames[0]!
  return { re2: out, estimate: whole.sum + whole.alts }
}

/** The last atom repeated: RE2 copies it up to `times` times, each copy optional or not. */
function grow(frame: Frame, times: number) {
  const grown = frame.last * times * 2 + 1
  frame.sum += grown - frame.last
  frame.last = grown
}

const hex = (cp: number) => `\\x{${cp.toString(16).toUpperCase()}}`

/** One escape at src[i] (a backslash); returns its RE2 text and where the next token starts. */
function escape(src: string, i: number, inClass: boolean): [string, number] {
  const c = src[i + 1]!
  switch (c) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 't':
    case 'n':
    case 'v':
    case 'f':
    case 'r':
    case 'B':
      return [`\\${c}`, i + 2]
    case 'b':
      return [inClass ? hex(8) : '\\b', i + 2]
    case 's':
      return [inClass ? SPACE : `[${SPACE}]`, i + 2]
    case 'S':
      return [inClass ? NOT_SPACE : `[^${SPACE}]`, i + 2]
    case '0':
      return [hex(0), i + 2]
    case 'c':
      return [hex(src.charCodeAt(i + 2) % 32), i + 3]
    case 'x':
      return [hex(parseInt(src.slice(i + 2, i + 4), 16)), i + 4]
    case 'u': {
      if (src[i + 2] === '{') {
        const end = src.indexOf('}', i)
        return [hex(parseInt(src.slice(i + 3, end), 16)), end + 1]
      }
      const unit = parseInt(src.slice(i + 2, i + 6), 16)
      const low = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(src.slice(i + 6, i + 12))
      if (unit >= 0xd800 && unit <= 0xdbff && low) {
        const cp = (unit - 0xd800) * 0x400 + (parseInt(low[1]!, 16) - 0xdc00) + 0x10000
        return [hex(cp), i + 12] // u-mode: a surrogate pair of escapes is one code point
      }
      return [hex(unit), i + 6]
    }
    case 'p':
    case 'P': {
      const end = src.indexOf('}', i)
      return [`\\${c}{${property(src.slice(i + 3, end))}}`, end + 1]
    }
    case 'k':
      throw new PatternRefused('it uses a backreference (\\k<name>)')
    default:
      if (c >= '1' && c <= '9') throw new PatternRefused(`it uses a backreference (\\${c})`)
      return [`\\${c}`, i + 2] // a syntax character, / or -
  }
}

/** A character class at src[i]; `[]` matches nothing and `[^]` anything, as in JavaScript. */
function charClass(src: string, i: number): [string, number] {
  let j = i + 1
  const negated = src[j] === '^'
  if (negated) j++
  let body = ''
  while (src[j] !== ']') {
    const c = src[j]!
    if (c === '\\') {
      const [text, next] = escape(src, j, true)
      body += text
      j = next
    } else {
      body += c === '[' ? '\\[' : c // RE2 reads [: … :] inside a class as a POSIX class
      j++
    }
  }
  if (!body) return [negated ? `[${ANY}]` : `[^${ANY}]`, j + 1]
  return [`[${negated ? '^' : ''}${body}]`, j + 1]
}

// \p{…}: ECMAScript's long General_Category names and binary-property aliases to RE2's names
const GENERAL_CATEGORY: Record<string, string> = {
  Other: 'C',
  Control: 'Cc',
  cntrl: 'Cc',
  Format: 'Cf',
  Unassigned: 'Cn',
  Private_Use: 'Co',
  Surrogate: 'Cs',
  Letter: 'L',
  Cased_Letter: 'LC',
  Lowercase_Letter: 'Ll',
  Modifier_Letter: 'Lm',
  Other_Letter: 'Lo',
  Titlecase_Letter: 'Lt',
  Uppercase_Letter: 'Lu',
  Mark: 'M',
  Combining_Mark: 'M',
  Spacing_Mark: 'Mc',
  Enclosing_Mark: 'Me',
  Nonspacing_Mark: 'Mn',
  Number: 'N',
  Decimal_Number: 'Nd',
  digit: 'Nd',
  Letter_Number: 'Nl',
  Other_Number: 'No',
  Punctuation: 'P',
  punct: 'P',
  Connector_Punctuation: 'Pc',
  Dash_Punctuation: 'Pd',
  Close_Punctuation: 'Pe',
  Final_Punctuation: 'Pf',
  Initial_Punctuation: 'Pi',
  Other_Punctuation: 'Po',
  Open_Punctuation: 'Ps',
  Symbol: 'S',
  Currency_Symbol: 'Sc',
  Modifier_Symbol: 'Sk',
  Math_Symbol: 'Sm',
  Other_Symbol: 'So',
  Separator: 'Z',
  Line_Separator: 'Zl',
  Paragraph_Separator: 'Zp',
  Space_Separator: 'Zs',
}
const SHORT_CATEGORY = new Set(Object.values(GENERAL_CATEGORY))
const BINARY: Record<string, string> = {
  ASCII: 'Ascii',
  Any: 'Any',
  Assigned: 'Assigned',
  AHex: 'ASCII_Hex_Digit',
  ASCII_Hex_Digit: 'ASCII_Hex_Digit',
  Alpha: 'Alphabetic',
  Alphabetic: 'Alphabetic',
  Dash: 'Dash',
  Emoji: 'Emoji',
  EComp: 'Emoji_Component',
  Emoji_Component: 'Emoji_Component',
  EMod: 'Emoji_Modifier',
  Emoji_Modifier: 'Emoji_Modifier',
  EBase: 'Emoji_Modifier_Base',
  Emoji_Modifier_Base: 'Emoji_Modifier_Base',
  EPres: 'Emoji_Presentation',
  Emoji_Presentation: 'Emoji_Presentation',
  ExtPict: 'Extended_Pictographic',
  Extended_Pictographic: 'Extended_Pictographic',
  Hex: 'Hex_Digit',
  Hex_Digit: 'Hex_Digit',
  Lower: 'Lowercase',
  Lowercase: 'Lowercase',
  Math: 'Math',
  QMark: 'Quotation_Mark',
  Quotation_Mark: 'Quotation_Mark',
  Term: 'Terminal_Punctuation',
  Terminal_Punctuation: 'Terminal_Punctuation',
  Upper: 'Uppercase',
  Uppercase: 'Uppercase',
  space: 'White_Space',
  WSpace: 'White_Space',
  White_Space: 'White_Space',
}

function property(name: string): string {
  const unsupported = () =>
    new PatternRefused(`it uses the Unicode property \\p{${name}}, which RE2 does not have`)
  const own = (table: Record<string, string>, key: string) =>
    Object.hasOwn(table, key) ? table[key] : undefined
  const category = (v: string) =>
    own(GENERAL_CATEGORY, v) ?? (SHORT_CATEGORY.has(v) ? v : undefined)
  const eq = name.indexOf('=')
  if (eq < 0) {
    const mapped = category(name) ?? own(BINARY, name)
    if (!mapped) throw unsupported()
    return mapped
  }
  const [key, value] = [name.slice(0, eq), name.slice(eq + 1)]
  if (key === 'General_Category' || key === 'gc') {
    const mapped = category(value)
    if (!mapped) throw unsupported()
    return mapped
  }
  if (key === 'Script' || key === 'sc') return value // a long script name; RE2 refuses short codes
  throw unsupported() // Script_Extensions
}

/**
 * The first pattern in a tool's schema that yoke does not run, as a reason; undefined when every
 * one runs. Looks at `pattern`, the keys of `patternProperties` and so `propertyNames` patterns,
 * anywhere but inside data (`const`, `enum`, `default`, `examples`).
 */
export function riskyPattern(schema: unknown, depth = 0, inMap = false): string | undefined {
  if (!schema || typeof schema !== 'object' || depth > MAX_DEPTH) return undefined
  for (const [key, value] of Object.entries(schema)) {
    if (!inMap && DATA.has(key)) continue
    const patterns = inMap
      ? []
      : key === 'pattern' && typeof value === 'string'
        ? [value]
        : key === 'patternProperties' && value && typeof value === 'object'
          ? Object.keys(value)
          : []
    for (const p of patterns) {
      const problem = patternProblem(p)
      if (problem)
        return `its input schema has the pattern ${JSON.stringify(p)}, which yoke does not run: ${problem}. Patterns run on a linear-time engine (RE2): no lookarounds or backreferences`
    }
    const inner = riskyPattern(value, depth + 1, !inMap && SCHEMA_MAPS.has(key))
    if (inner) return inner
  }
  return undefined
}

const DATA = new Set(['const', 'enum', 'default', 'examples'])
const SCHEMA_MAPS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'dependencies',
])
