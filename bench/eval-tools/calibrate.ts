/**
 * `npm run eval:tools -- --calibrate`: learns the no-match decision (plugins/tool-search/
 * no-match.ts) on the development queries, per index size — a logistic model over the lexical
 * arm's signals and a cut on its probability — and states its operating point: no-match
 * precision, recall and F1, and the served queries it turns away, on the development set (in
 * sample, and 5-fold cross-validated) and on the test set (read, never fitted to). It prints the
 * models as no-match.ts holds them.
 */
import type { RegisteredTool } from 'yoke'
import { ToolFinder } from '../../plugins/tool-search/finder.ts'
import {
  noMatchProbability,
  SIGNALS,
  type MatchSignals,
  type NoMatchModel,
} from '../../plugins/tool-search/no-match.ts'
import type { Tool } from './corpus.ts'
import { aliasMap, resolveGold, type Query } from './queries.ts'
import { f1, LIMIT } from './score.ts'

/** One query as the decision sees it. */
export interface Example {
  q: string
  /** nothing serves it */
  none: boolean
  /** a served query whose tool is in the first five (a no-match answer would lose it) */
  found: boolean
  /** undefined: the query names something, no decision is made */
  signals?: MatchSignals
}

/** The examples of a set of queries at one size (default ranking, calibrated or not: the signals are the same). */
export async function examples(corpus: Tool[], queries: Query[]): Promise<Example[]> {
  const finder = new ToolFinder({})
  const tools = corpus as unknown as RegisteredTool[]
  const byAlias = aliasMap(corpus)
  const out: Example[] = []
  for (const q of queries) {
    const gold = resolveGold(q, corpus, byAlias)
    const outcome = await finder.search(q.q, tools, LIMIT)
    const found = outcome.candidates.some((c) => gold.has(c.item.name))
    out.push({ q: q.q, none: !gold.size, found, signals: outcome.evidence?.signals })
  }
  return out
}

const vector = (s: MatchSignals) => SIGNALS.map((k) => s[k])

/** A logistic regression (L2, gradient descent on standardized signals), its cut not yet chosen. */
export function fit(
  train: Example[],
  l2 = 0.05,
  size = 0,
  use: ReadonlySet<string> = new Set(SIGNALS),
): NoMatchModel {
  const rows = train.filter((e) => e.signals)
  const xs = rows.map((e) => vector(e.signals!))
  const ys = rows.map((e) => (e.none ? 1 : 0))
  const d = SIGNALS.length
  const mean = SIGNALS.map((_, j) => xs.reduce((a, x) => a + x[j]!, 0) / xs.length)
  const scale = SIGNALS.map(
    (_, j) => Math.sqrt(xs.reduce((a, x) => a + (x[j]! - mean[j]!) ** 2, 0) / xs.length) || 1,
  )
  const zs = xs.map((x) => x.map((v, j) => (v - mean[j]!) / scale[j]!))
  // the rarer class weighed up, so that the fit does not settle for "always a match"
  const positives = ys.filter(Boolean).length
  const weightOf = (y: number) => (y ? (ys.length - positives) / positives : 1)
  const w = new Array<number>(d).fill(0)
  let b = 0
  for (let step = 0; step < 3000; step++) {
    const gw = new Array<number>(d).fill(0)
    let gb = 0
    let total = 0
    zs.forEach((z, i) => {
      const p = 1 / (1 + Math.exp(-(b + z.reduce((a, v, j) => a + v * w[j]!, 0))))
      const err = (p - ys[i]!) * weightOf(ys[i]!)
      total += weightOf(ys[i]!)
      z.forEach((v, j) => (gw[j]! += err * v))
      gb += err
    })
    for (let j = 0; j < d; j++)
      if (use.has(SIGNALS[j]!)) w[j]! -= 0.5 * (gw[j]! / total + l2 * w[j]!)
    b -= 0.5 * (gb / total)
  }
  const round = (x: number) => Math.round(x * 1e4) / 1e4
  return {
    size,
    mean: mean.map(round),
    scale: scale.map(round),
    weights: w.map(round),
    bias: round(b),
    cut: 0.5,
  }
}

/** What a model says of examples at a cut: no-match P, R, F1, and the found served queries lost. */
export function operatingPoint(model: NoMatchModel, set: Example[], cut = model.cut) {
  let said = 0
  let right = 0
  let none = 0
  let lost = 0
  let served = 0
  for (const e of set) {
    const no = e.signals ? noMatchProbability(e.signals, model) >= cut : false
    if (e.none) none++
    else served++
    if (no) said++
    if (no && e.none) right++
    if (no && !e.none && e.found) lost++
  }
  const p = said ? right / said : 0
  const r = none ? right / none : 0
  return { p, r, f1: f1(p, r), lost: served ? lost / served : 0 }
}

/** The cut with the best F1 that loses at most `budget` of the served queries found. */
export function chooseCut(model: NoMatchModel, set: Example[], budget = 0.02): number {
  let best = { cut: 0.5, f1: -1 }
  for (let cut = 0.05; cut < 0.96; cut += 0.01) {
    const op = operatingPoint(model, set, cut)
    if (op.lost <= budget && op.f1 > best.f1) best = { cut: Math.round(cut * 100) / 100, f1: op.f1 }
  }
  return best.cut
}

/** The model at `size` on the signals `use`, with its cut chosen on the same examples. */
export function learn(set: Example[], size: number, use?: ReadonlySet<string>): NoMatchModel {
  const model = fit(set, 0.05, size, use)
  return { ...model, cut: chooseCut(model, set) }
}

/** The signal sets compared: the query's coverage alone (a threshold), and every signal. */
export const SIGNAL_SETS: Record<string, ReadonlySet<string>> = {
  'coverage alone': new Set(['coverage']),
  'words weighed by rarity': new Set(['coverage', 'weighted', 'leftOut', 'unknown']),
  'every signal': new Set(SIGNALS),
}

/** 5-fold cross-validation on the development examples: each fold judged by a model that did not see it. */
export function crossValidated(set: Example[], size: number, use?: ReadonlySet<string>) {
  const folds = 5
  const judged: Array<{ e: Example; no: boolean }> = []
  for (let k = 0; k < folds; k++) {
    const train = set.filter((_, i) => i % folds !== k)
    const model = learn(train, size, use)
    set.forEach((e, i) => {
      if (i % folds === k)
        judged.push({
          e,
          no: e.signals ? noMatchProbability(e.signals, model) >= model.cut : false,
        })
    })
  }
  const said = judged.filter((j) => j.no).length
  const right = judged.filter((j) => j.no && j.e.none).length
  const none = judged.filter((j) => j.e.none).length
  const served = judged.length - none
  const lost = judged.filter((j) => j.no && !j.e.none && j.e.found).length
  const p = said ? right / said : 0
  const r = none ? right / none : 0
  return { p, r, f1: f1(p, r), lost: lost / served }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`
const said = (op: { p: number; r: number; f1: number; lost: number }) =>
  `P ${pct(op.p)} R ${pct(op.r)} F1 ${op.f1.toFixed(2)}, served found turned away ${pct(op.lost)}`

/** Learns a model per size on `dev`, prints each with its operating points, and the models as code. */
export async function calibrate(corpora: Map<number, Tool[]>, dev: Query[], test: Query[]) {
  console.log(
    '\ncalibrating the no-match decision on the development queries (signals: ' +
      `${SIGNALS.join(', ')}; the cut: the best F1 turning away at most 2% of the served queries found):`,
  )
  const learned = new Map<string, Array<{ model: NoMatchModel; heldF1: number }>>()
  for (const [size, corpus] of corpora) {
    const d = await examples(corpus, dev)
    const t = await examples(corpus, test)
    const at = size.toLocaleString('en')
    for (const [name, use] of Object.entries(SIGNAL_SETS)) {
      const model = learn(d, size, use)
      const held = crossValidated(d, size, use)
      console.log(`  ${at}, ${name}: cut ${model.cut}`)
      console.log(`    development, in sample:       ${said(operatingPoint(model, d))}`)
      console.log(`    development, 5-fold held out: ${said(held)}`)
      console.log(`    test (never fitted to):       ${said(operatingPoint(model, t))}`)
      learned.set(name, [...(learned.get(name) ?? []), { model, heldF1: held.f1 }])
    }
  }
  // one signal set for every size: the best mean F1 held out on the development set (5-fold)
  const mean = (name: string) =>
    learned.get(name)!.reduce((a, m) => a + m.heldF1, 0) / learned.get(name)!.length
  const kept = [...learned.keys()].reduce((a, b) => (mean(b) > mean(a) ? b : a))
  console.log(
    `kept: ${kept} (mean held-out F1 ${[...learned.keys()].map((n) => `${n} ${mean(n).toFixed(3)}`).join(', ')})`,
  )
  const models = learned.get(kept)!.map((m) => m.model)
  console.log('\nexport const MODELS: readonly NoMatchModel[] = ' + JSON.stringify(models, null, 2))
  return models
}
