/**
 * @module runtime/schema-safety
 * A check for tool input schemas, applied by the runtime to every tool it registers (checkSchema)
 * and used by sources that vet schemas earlier (MCP servers, packages, `yoke plugins check`). ajv
 * compiles `pattern` and `patternProperties` into backtracking RegExps that run on the event loop
 * when arguments are validated, so a pattern like `^(a|aa)+$` lets one call freeze yoke for
 * seconds. Refused here: a repeated group (`*`, `+`, `{n,}`, `{n,m}`) whose body can match in more
 * than one way (it holds a quantifier or an alternative). That is conservative: `(ab|cd)+` is
 * refused too.
 */

const MAX_DEPTH = 64

/** The first pattern in the schema that can backtrack exponentially, as a reason; undefined when none. */
export function riskyPattern(schema: unknown, depth = 0): string | undefined {
  if (!schema || typeof schema !== 'object' || depth > MAX_DEPTH) return undefined
  for (const [key, value] of Object.entries(schema)) {
    const patterns =
      key === 'pattern' && typeof value === 'string'
        ? [value]
        : key === 'patternProperties' && value && typeof value === 'object'
          ? Object.keys(value)
          : []
    for (const p of patterns)
      if (backtracks(p))
        return `its input schema has the pattern ${JSON.stringify(p)}, which can take exponential time to match (a repeated group with a quantifier or an alternative inside)`
    const inner = riskyPattern(value, depth + 1)
    if (inner) return inner
  }
  return undefined
}

/** Whether a repeated group holds a quantifier or an alternative (star height above one, or ambiguity). */
export function backtracks(source: string): boolean {
  const groups: boolean[] = [] // per open group: does its body vary (a quantifier or an alternative)?
  const mark = () => {
    if (groups.length) groups[groups.length - 1] = true
  }
  for (let i = 0; i < source.length; i++) {
    const c = source[i]
    if (c === '\\') i++
    else if (c === '[') {
      for (i++; i < source.length && source[i] !== ']'; i++) if (source[i] === '\\') i++
    } else if (c === '(') groups.push(false)
    else if (c === ')') {
      const varies = groups.pop() ?? false
      if (repeats(source, i + 1) && varies) return true
      if (varies || quantifierAt(source, i + 1)) mark()
    } else if (c === '|') mark()
    else if (quantifierAt(source, i)) mark()
  }
  return false
}

function quantifierAt(s: string, i: number): boolean {
  return (
    s[i] === '*' ||
    s[i] === '+' ||
    s[i] === '?' ||
    (s[i] === '{' && /^\{\d*,?\d*\}/.test(s.slice(i)))
  )
}

/** `*`, `+`, `{n,}` and `{n,m}` with m > 1 repeat; `?` and `{1}` do not. */
function repeats(s: string, i: number): boolean {
  if (s[i] === '*' || s[i] === '+') return true
  const braces = /^\{(\d*)(,?)(\d*)\}/.exec(s.slice(i))
  if (!braces) return false
  const max = braces[2] ? (braces[3] ? Number(braces[3]) : Infinity) : Number(braces[1])
  return max > 1
}
