/**
 * @module skills/spec
 * The Agent Skills spec's rules as its reference validator (`skills-ref validate`) applies them:
 * the frontmatter keys it allows, the name rules (after NFKC, Unicode lowercase letters and digits
 * with single inner hyphens, at most 64 characters, equal to the directory's name) and the length
 * limits. yoke loads a skill that breaks them (the spec's lenient client rules) and says so;
 * `yoke skills check` counts each as an error.
 */

/** the keys the spec defines */
export const SPEC_KEYS = [
  'name',
  'description',
  'license',
  'compatibility',
  'metadata',
  'allowed-tools',
] as const

/** octos's extensions, which yoke reads (skills-ref refuses them: a difference on purpose) */
export const OCTOS_KEYS = ['always', 'requires_bins', 'requires_env', 'version', 'author'] as const

/** Claude Code's own keys: yoke does not act on them, but a Claude Code skill is not at fault for them */
export const CLAUDE_CODE_KEYS = [
  'when_to_use',
  'argument-hint',
  'arguments',
  'disable-model-invocation',
  'user-invocable',
  'disallowed-tools',
  'model',
  'effort',
  'context',
  'agent',
  'background',
  'hooks',
  'paths',
  'shell',
] as const

const KNOWN_KEYS = new Set<string>([...SPEC_KEYS, ...OCTOS_KEYS, ...CLAUDE_CODE_KEYS])

export const MAX_NAME_CHARS = 64
export const MAX_DESCRIPTION_CHARS = 1024
export const MAX_COMPATIBILITY_CHARS = 500

/** Length as skills-ref (Python) counts it: code points, not UTF-16 units. */
export const charCount = (s: string) => [...s].length

/** What is wrong with a skill's name, as skills-ref judges it; empty when nothing is. */
export function nameViolations(written: string, dirName: string): string[] {
  const name = written.normalize('NFKC')
  const breaks = (why: string) => `name "${name}" breaks the spec: ${why}`
  const out: string[] = []
  const length = charCount(name)
  if (length > MAX_NAME_CHARS)
    out.push(breaks(`it is ${length} characters, at most ${MAX_NAME_CHARS} are allowed`))
  if (name !== name.toLowerCase()) out.push(breaks('it must be lowercase'))
  if (name.startsWith('-') || name.endsWith('-'))
    out.push(breaks('it must not start or end with a hyphen'))
  if (name.includes('--')) out.push(breaks('it must not hold two hyphens in a row'))
  if (!/^[\p{L}\p{N}-]*$/u.test(name))
    out.push(breaks('only letters, digits and hyphens are allowed (a-z, 0-9, -)'))
  if (dirName.normalize('NFKC') !== name)
    out.push(`name "${name}" differs from its directory "${dirName}" (the spec wants them equal)`)
  return out
}

/** A top-level key that neither the spec, octos nor Claude Code defines. */
export const isUnknownKey = (key: string) => !KNOWN_KEYS.has(key)

export const unknownKeyMessage = (key: string) =>
  `unknown key "${key}": the spec allows ${SPEC_KEYS.join(', ')} (yoke also reads octos's ${OCTOS_KEYS.join(', ')}); put other fields under metadata`
