// Glob matching without regular expressions, so a hostile pattern cannot backtrack: `*`, `?`,
// `[abc]`, `[a-z]` and `[!abc]` within one path segment, `**` across segments, `{a,b}`
// alternatives. A pattern without `/` matches the file name at any depth (as ripgrep's -g does).
// Cost: O(segments × pattern parts × segment length × pattern length) per path, whatever the pattern.

const STAR = Symbol('*')
const ANY = Symbol('?')
const GLOBSTAR = Symbol('**')
const MAX_LENGTH = 256
const MAX_ALTERNATIVES = 64

export class GlobError extends Error {}

/** `compileGlob('src/**\/*.{ts,mjs}')('src/cli/dev.ts') === true` */
export function compileGlob(glob) {
  if (typeof glob !== 'string' || glob === '') throw new GlobError('the glob is empty')
  if (glob.length > MAX_LENGTH)
    throw new GlobError(`the glob is longer than ${MAX_LENGTH} characters`)
  const anywhere = !glob.includes('/')
  const alternatives = expandBraces(anywhere ? `**/${glob}` : glob.replace(/^\.\//, ''))
  const compiled = alternatives.map((alt) => {
    const parts = []
    for (const segment of alt.split('/')) {
      if (segment === '' || segment === '.') continue
      const part = segment === '**' ? GLOBSTAR : tokenize(segment)
      if (part === GLOBSTAR && parts.at(-1) === GLOBSTAR) continue // a/**/**/b is a/**/b
      parts.push(part)
    }
    return parts
  })
  return (path) => {
    const segments = path.split('/').filter(Boolean)
    return compiled.some((parts) => matchParts(parts, segments))
  }
}

/** `{a,b}x{1,2}` → ax1, ax2, bx1, bx2 (nesting allowed; at most 64 results). */
function expandBraces(glob) {
  const open = glob.indexOf('{')
  if (open < 0) {
    if (glob.includes('}')) throw new GlobError('the glob has a } without a {')
    return [glob]
  }
  let depth = 0
  const commas = []
  let close = -1
  for (let i = open; i < glob.length && close < 0; i++) {
    if (glob[i] === '{') depth++
    else if (glob[i] === '}' && --depth === 0) close = i
    else if (glob[i] === ',' && depth === 1) commas.push(i)
  }
  if (close < 0) throw new GlobError('the glob has a { without a }')
  const bounds = [open, ...commas, close]
  const out = []
  for (let i = 0; i < bounds.length - 1; i++) {
    for (const tail of expandBraces(glob.slice(close + 1))) {
      for (const head of expandBraces(glob.slice(bounds[i] + 1, bounds[i + 1]))) {
        out.push(glob.slice(0, open) + head + tail)
        if (out.length > MAX_ALTERNATIVES)
          throw new GlobError(`the glob expands to more than ${MAX_ALTERNATIVES} alternatives`)
      }
    }
  }
  return out
}

function tokenize(segment) {
  const tokens = []
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]
    if (c === '*') {
      if (tokens.at(-1) !== STAR) tokens.push(STAR)
    } else if (c === '?') tokens.push(ANY)
    else if (c === '[') {
      const end = segment.indexOf(']', i + 2) // a ] right after [ is literal
      if (end < 0) {
        tokens.push('[')
        continue
      }
      tokens.push(charClass(segment.slice(i + 1, end)))
      i = end
    } else tokens.push(c)
  }
  return tokens
}

function charClass(body) {
  const negate = body[0] === '!' || body[0] === '^'
  const chars = negate ? body.slice(1) : body
  const ranges = []
  for (let i = 0; i < chars.length; i++) {
    if (chars[i + 1] === '-' && i + 2 < chars.length) {
      ranges.push([chars[i], chars[i + 2]])
      i += 2
    } else ranges.push([chars[i], chars[i]])
  }
  return (c) => ranges.some(([from, to]) => c >= from && c <= to) !== negate
}

function matchChar(token, c) {
  return token === ANY || (typeof token === 'function' ? token(c) : token === c)
}

/** Wildcard matching with one remembered star: linear-ish, never exponential. */
function matchSegment(tokens, s) {
  let t = 0
  let i = 0
  let starT = -1
  let starI = 0
  while (i < s.length) {
    if (t < tokens.length && tokens[t] === STAR) {
      starT = t++
      starI = i
    } else if (t < tokens.length && matchChar(tokens[t], s[i])) {
      t++
      i++
    } else if (starT >= 0) {
      t = starT + 1
      i = ++starI
    } else return false
  }
  while (t < tokens.length && tokens[t] === STAR) t++
  return t === tokens.length
}

/** An NFA over path segments: `**` matches zero or more of them. */
function matchParts(parts, segments) {
  const close = (states) => {
    for (const g of states) if (parts[g] === GLOBSTAR) states.add(g + 1)
    return states
  }
  let states = close(new Set([0]))
  for (const segment of segments) {
    const next = new Set()
    for (const g of states) {
      if (g >= parts.length) continue
      if (parts[g] === GLOBSTAR) next.add(g)
      else if (matchSegment(parts[g], segment)) next.add(g + 1)
    }
    if (!next.size) return false
    states = close(next)
  }
  return states.has(parts.length)
}
