/**
 * @module suggest
 * "Did you mean": the known word nearest a mistyped one, when it is near enough to be a typo (an
 * edit distance of at most a third of the word, at least one) or the word begins it.
 */
import { distance } from 'fastest-levenshtein'

export function suggest(word: string, known: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of known) {
    if (candidate === word) return undefined
    const d = word.length >= 3 && candidate.startsWith(word) ? 1 : distance(word, candidate)
    if (d < bestDistance) [best, bestDistance] = [candidate, d]
  }
  return bestDistance <= Math.max(1, Math.floor(word.length / 3)) ? best : undefined
}

/** ` (did you mean "x"?)`, or nothing; `show` writes the guess (`--json`, `yoke tools list`). */
export function didYouMean(
  word: string,
  known: Iterable<string>,
  show = (guess: string) => `"${guess}"`,
): string {
  const guess = suggest(word, known)
  return guess ? ` (did you mean ${show(guess)}?)` : ''
}
