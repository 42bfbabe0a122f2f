/**
 * @module skills/ranking
 * Which skills a catalog lists first, and what `skills_list(query)` answers: the same search as
 * tool_search (the tool-search plugin's index, BM25 with exact names first). The catalog lists
 * pinned skills first, then those relevant to the run's task, then the rest by name; what does not
 * fit its budget is counted and said, never dropped silently.
 */
import { globToRegExp } from 'yoke'
import { SearchIndex, type SearchOutcome, type Searchable } from '../tool-search/api.ts'
import type { Skill } from './parse.ts'

interface Item extends Searchable {
  skill: Skill
}

export class SkillRanker {
  readonly #index = new SearchIndex<Item>()
  readonly #items = new WeakMap<Skill, Item>()
  readonly #pinned: RegExp[]

  constructor(pinned: readonly string[]) {
    this.#pinned = pinned.map((g) => globToRegExp(g))
  }

  /** Pinned first, then relevant to `task` (best first), then by name. */
  order(skills: readonly Skill[], task?: string): Skill[] {
    const byName = [...skills].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const pinned = byName.filter((s) => this.#pinned.some((g) => g.test(s.name)))
    const relevant = task ? this.search(skills, task, skills.length) : undefined
    const found = relevant && !relevant.noMatch ? relevant.candidates.map((c) => c.item) : []
    return [...new Set([...pinned, ...found, ...byName])]
  }

  search(skills: readonly Skill[], query: string, limit: number): SearchOutcome<Skill> {
    this.#index.sync(skills.map((s) => this.#item(s)))
    const { candidates, noMatch } = this.#index.search(query, limit)
    return { noMatch, candidates: candidates.map((c) => ({ ...c, item: c.item.skill })) }
  }

  #item(skill: Skill): Item {
    let item = this.#items.get(skill)
    if (!item) {
      item = { skill, name: skill.name, description: skill.description, source: 'skills' }
      this.#items.set(skill, item)
    }
    return item
  }
}
