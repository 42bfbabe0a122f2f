/**
 * @module tool-search/no-match
 * Whether a query has a match: a small logistic model over what the words say (how much of the
 * query the best candidates cover, how rare the words they match are, how many of the query's
 * words nothing holds), learned on bench/eval-tools' development queries per index size
 * (`npm run eval:tools -- --calibrate` prints the models below and their operating points).
 * "Send an SMS" shares `send` with an email tool, but `send` is common and `sms` is in no tool:
 * a match on a common word, with a rare one left over, is no match.
 */

/** What the lexical arm's results say about a query (every value 0..1). */
export interface MatchSignals {
  /** the largest share of the query's words one candidate matches (as a prefix or a typo too) */
  coverage: number
  /** the same, each word weighed by its rarity (its idf as a share of the largest possible) */
  weighted: number
  /** the rarity of the rarest query word some candidate matches (0: none matched) */
  specific: number
  /** the rarity of the rarest query word the best-covering candidate leaves out (0: none left) */
  leftOut: number
  /** the share of the query's words no item holds and none matched (not even as a prefix) */
  unknown: number
  /** 1 / the number of the query's words */
  short: number
  /** how many items matched any word, as a share of the index (in orders of magnitude) */
  spread: number
  /** the best score's lead over the second's, as a share of the best */
  gap: number
}

export const SIGNALS: ReadonlyArray<keyof MatchSignals> = [
  'coverage',
  'weighted',
  'specific',
  'leftOut',
  'unknown',
  'short',
  'spread',
  'gap',
]

/** A logistic model: P(no match) = σ(bias + Σ weight·(signal − mean)/scale); no match above `cut`. */
export interface NoMatchModel {
  /** the index size it was learned at */
  size: number
  mean: number[]
  scale: number[]
  weights: number[]
  bias: number
  cut: number
}

/** The rarity of a word `df` of `n` items hold: ln((n+1)/(df+1)) / ln(n+1), 1 for a word none holds. */
export function rarity(df: number, n: number): number {
  return Math.log((n + 1) / (df + 1)) / Math.log(n + 1)
}

/** One lexical result as the signals read it: the query terms it matched, and the item's terms they met. */
interface Matched {
  queryTerms: readonly string[]
  match: Readonly<Record<string, unknown>>
  score: number
}

/** in `weighted`, a query term met only as a prefix (`feed` in `feedback`) or a typo's neighbour counts this much */
const LOOSE = 0.5

/**
 * The signals of a query's own terms against the ranked results (`df`: how many items hold a
 * term; `n`: the index's size).
 */
export function signalsOf(
  terms: ReadonlySet<string>,
  ranked: readonly Matched[],
  df: (term: string) => number,
  n: number,
): MatchSignals {
  const asked = terms.size
  const spread = Math.log(ranked.length + 1) / Math.log(n + 1)
  const first = ranked[0]?.score ?? 0
  const gap = first ? (first - (ranked[1]?.score ?? 0)) / first : 0
  if (!asked)
    return { coverage: 0, weighted: 0, specific: 0, leftOut: 0, unknown: 1, short: 1, spread, gap }
  const rare = new Map([...terms].map((t) => [t, rarity(df(t), n)]))
  const total = [...rare.values()].reduce((a, b) => a + b, 0) || 1
  const everMatched = new Set<string>()
  let coverage = 0
  let weighted = 0
  let specific = 0
  let best: Matched | undefined
  for (const r of ranked) {
    let count = 0
    let sum = 0
    for (const t of r.queryTerms) {
      const rarity = rare.get(t)
      if (rarity === undefined) continue
      const share = t in r.match ? 1 : LOOSE
      count++
      sum += share * rarity
      everMatched.add(t)
      if (share * rarity > specific) specific = share * rarity
    }
    if (count / asked > coverage) coverage = count / asked
    if (sum / total > weighted) {
      weighted = sum / total
      best = r
    }
  }
  let leftOut = 0
  for (const [t, w] of rare) if (!best?.queryTerms.includes(t) && w > leftOut) leftOut = w
  let unknown = 0
  for (const t of terms) if (!df(t) && !everMatched.has(t)) unknown++
  return {
    coverage,
    weighted,
    specific,
    leftOut,
    unknown: unknown / asked,
    short: 1 / asked,
    spread,
    gap,
  }
}

/** P(no match) under a model. */
export function noMatchProbability(signals: MatchSignals, model: NoMatchModel): number {
  let z = model.bias
  SIGNALS.forEach((name, i) => {
    z += model.weights[i]! * ((signals[name] - model.mean[i]!) / model.scale[i]!)
  })
  return 1 / (1 + Math.exp(-z))
}

/**
 * The model learned nearest (in orders of magnitude) to an index of `size` items; none under a
 * quarter of the smallest size learned (the eval grows its corpus from 947 real tools, so nothing
 * smaller is measured): there the share rule decides (`SHARE`).
 */
export function modelFor(
  size: number,
  models: readonly NoMatchModel[] = MODELS,
): NoMatchModel | undefined {
  const smallest = Math.min(...models.map((m) => m.size))
  if (!models.length || size < smallest / 4) return undefined
  const distance = (m: NoMatchModel) => Math.abs(Math.log(size / m.size))
  return models.reduce((a, b) => (distance(b) < distance(a) ? b : a))
}

/** Without a model: the share of the query's words the best candidate must match (`coverage`). */
export const SHARE = 0.35

/**
 * Learned by `npm run eval:tools -- --calibrate` on the development queries (its README has the
 * operating points): the signals of words weighed by rarity (the others' weights are 0: they did
 * not add on the development set, held out).
 */
export const MODELS: readonly NoMatchModel[] = [
  {
    size: 1000,
    mean: [0.7044, 0.6471, 0.7222, 0.5968, 0.0863, 0.2383, 0.7218, 0.3062],
    scale: [0.2217, 0.2485, 0.1429, 0.3912, 0.1666, 0.0859, 0.1278, 0.2473],
    weights: [-0.4601, -0.7496, 0, 0.3948, 0.385, 0, 0, 0],
    bias: -1.0889,
    cut: 0.77,
  },
  {
    size: 5000,
    mean: [0.709, 0.6461, 0.6529, 0.5492, 0.084, 0.2383, 0.7622, 0.1575],
    scale: [0.2216, 0.2542, 0.1429, 0.3885, 0.166, 0.0859, 0.1196, 0.2111],
    weights: [-0.51, -0.747, 0, 0.3463, 0.3386, 0, 0, 0],
    bias: -1.0778,
    cut: 0.78,
  },
  {
    size: 10000,
    mean: [0.7093, 0.644, 0.6226, 0.5357, 0.0834, 0.2383, 0.7764, 0.1476],
    scale: [0.2218, 0.2573, 0.1372, 0.3875, 0.1657, 0.0859, 0.1124, 0.2078],
    weights: [-0.4988, -0.7615, 0, 0.3533, 0.3276, 0, 0, 0],
    bias: -1.0895,
    cut: 0.78,
  },
]
