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
    mean: [0.6965, 0.6418, 0.7275, 0.6006, 0.0872, 0.2413, 0.6992, 0.3024],
    scale: [0.2274, 0.2511, 0.1374, 0.3907, 0.1678, 0.0863, 0.1217, 0.2508],
    weights: [-0.4423, -0.7221, 0, 0.4061, 0.4083, 0, 0, 0],
    bias: -1.0491,
    cut: 0.77,
  },
  {
    size: 5000,
    mean: [0.7007, 0.6402, 0.6569, 0.557, 0.0852, 0.2413, 0.7434, 0.1557],
    scale: [0.2258, 0.2563, 0.1387, 0.388, 0.1673, 0.0863, 0.1157, 0.2107],
    weights: [-0.4925, -0.7211, 0, 0.3406, 0.3671, 0, 0, 0],
    bias: -1.0272,
    cut: 0.78,
  },
  {
    size: 10000,
    mean: [0.7012, 0.6383, 0.6257, 0.5415, 0.0846, 0.2413, 0.7583, 0.1456],
    scale: [0.2258, 0.259, 0.1325, 0.3868, 0.167, 0.0863, 0.1086, 0.2074],
    weights: [-0.4824, -0.7358, 0, 0.3569, 0.3525, 0, 0, 0],
    bias: -1.0457,
    cut: 0.78,
  },
]
