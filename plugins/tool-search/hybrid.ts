/**
 * @module tool-search/hybrid
 * Words and meaning together: the lexical arm's BM25 results fused with the semantic arm's cosine
 * similarities, and "no match" decided on both (a need nothing serves often shares a verb with
 * real tools, "order a pizza"; but it is near nothing in meaning). The defaults were chosen on
 * half of bench/eval-tools' queries and checked on the other half (its README has the numbers).
 */

/** A query's similarity to the embedded tools (from the semantic arm). */
export interface Similarity {
  /** the most similar, best first */
  top: Array<{ name: string; similarity: number }>
  /** the cosine similarity of one tool (undefined: not embedded yet) */
  of(name: string): number | undefined
  /** the mean and standard deviation of the similarities to every tool */
  mean: number
  std: number
}

export interface HybridOptions {
  /** `weighted`: a weighted sum of the two scores; `rrf`: reciprocal-rank fusion */
  fusion?: 'weighted' | 'rrf'
  /** the share of meaning in a weighted sum (0: words only, 1: meaning only) */
  semanticWeight?: number
  /** a best similarity at or above this is a match, whatever the words */
  sureSimilarity?: number
  /** below this best similarity it is no match, whatever the words */
  minSimilarity?: number
  /**
   * a tool found by meaning alone (no word in common) is a candidate when it is at least
   * `minSimilarity` and within this of the best: the rest of a small catalog is not padding
   */
  semanticMargin?: number
}

/** One lexical result as the fusion reads it. */
export interface Lexical {
  id: string
  score: number
}

export interface Fused<L extends Lexical> {
  id: string
  score: number
  lexical?: L
  similarity?: number
}

export const HYBRID_DEFAULTS: Required<HybridOptions> = {
  fusion: 'weighted',
  semanticWeight: 0.7,
  sureSimilarity: 0.6,
  minSimilarity: 0.35,
  semanticMargin: 0.1,
}

const RRF_K = 60
/** how many lexical results take part (BM25 can return thousands) */
const LEXICAL_POOL = 100

/** The lexical results and the most similar tools, in one order. */
export function fuse<L extends Lexical>(
  lexical: readonly L[],
  similarity: Similarity,
  options: HybridOptions = {},
): Fused<L>[] {
  const { fusion, semanticWeight, minSimilarity, semanticMargin } = {
    ...HYBRID_DEFAULTS,
    ...options,
  }
  const floor = Math.max(minSimilarity, (similarity.top[0]?.similarity ?? 0) - semanticMargin)
  const pool = new Map<string, Fused<L>>()
  const lexicalRank = new Map<string, number>()
  lexical.slice(0, LEXICAL_POOL).forEach((result, rank) => {
    lexicalRank.set(result.id, rank)
    pool.set(result.id, {
      id: result.id,
      score: 0,
      lexical: result,
      similarity: similarity.of(result.id),
    })
  })
  const semanticRank = new Map<string, number>()
  similarity.top.forEach(({ name, similarity: value }, rank) => {
    semanticRank.set(name, rank)
    if (!pool.has(name) && value >= floor) pool.set(name, { id: name, score: 0, similarity: value })
  })
  const bestLexical = lexical[0]?.score || 1
  for (const entry of pool.values()) {
    if (fusion === 'rrf') {
      const l = lexicalRank.get(entry.id)
      const s = semanticRank.get(entry.id)
      entry.score =
        (l === undefined ? 0 : 1 / (RRF_K + l)) + (s === undefined ? 0 : 1 / (RRF_K + s))
    } else {
      const words = (entry.lexical?.score ?? 0) / bestLexical
      entry.score =
        (1 - semanticWeight) * words + semanticWeight * Math.max(0, entry.similarity ?? 0)
    }
  }
  return [...pool.values()].sort((a, b) => b.score - a.score)
}

/**
 * No match, on both arms: the best similarity is low (under `minSimilarity`), or middling and the
 * words do not cover the query either (`covered`: the lexical arm's own rule).
 */
export function hybridNoMatch(
  bestSimilarity: number,
  covered: boolean,
  options: HybridOptions = {},
): boolean {
  const { sureSimilarity, minSimilarity } = { ...HYBRID_DEFAULTS, ...options }
  if (bestSimilarity >= sureSimilarity) return false
  return bestSimilarity < minSimilarity || !covered
}
