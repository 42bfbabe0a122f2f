/**
 * @module skills/ranking
 * Which skills a catalog lists first, and what `skills_list(query)` answers: the same search as
 * tool_search (the tool-search plugin's index, BM25 with exact names first), and a skill whose
 * name, or a word of it, is in the query is found in any sentence. The catalog lists
 * pinned skills first, then those relevant to the run's task, then the rest by name; what does not
 * fit its budget is counted and said, never dropped silently.
 */
import { globToRegExp } from 'yoke'
import { SearchIndex, type SearchOutcome, type Searchable } from '../tool-search/api.ts'
import type { Skill } from './parse.ts'
import { bareName } from './skill-index.ts'

interface Item extends Searchable {
  skill: Skill
}

export class SkillRanker {
  readonly #index = new SearchIndex<Item>()
  readonly #items = new WeakMap<Skill, Item>()
  readonly #pinned: RegExp[]
  readonly #deferred: RegExp[]
  readonly #hidden: RegExp[]

  /** skill-name globs: pinned (direct), deferred (found, not listed), hidden (read by name only) */
  constructor(exposure: { pinned: string[]; deferred: string[]; hidden: string[] }) {
    const globs = (list: string[]) => list.map((g) => globToRegExp(g))
    this.#pinned = globs(exposure.pinned)
    this.#deferred = globs(exposure.deferred)
    this.#hidden = globs(exposure.hidden)
  }

  /** The catalog's skills: pinned first, then relevant to `task` (best first), then by name. */
  order(skills: readonly Skill[], task?: string): Skill[] {
    const pinned = (s: Skill) => this.#pinned.some((g) => g.test(s.name))
    const listed = skills.filter((s) => pinned(s) || !this.#deferred.some((g) => g.test(s.name)))
    const byName = this.findable(listed).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    )
    const relevant = task ? this.search(listed, task, listed.length) : undefined
    const found = relevant && !relevant.noMatch ? relevant.candidates.map((c) => c.item) : []
    return [...new Set([...byName.filter(pinned), ...found, ...byName])]
  }

  /** What skills_list(query) ranks: all but the hidden. */
  search(skills: readonly Skill[], query: string, limit: number): SearchOutcome<Skill> {
    this.#index.sync(this.findable(skills).map((s) => this.#item(s)))
    const { candidates, noMatch } = this.#index.search(query, limit)
    return { noMatch, candidates: candidates.map((c) => ({ ...c, item: c.item.skill })) }
  }

  /** Every skill but the hidden ones (a pinned skill is never hidden). */
  findable(skills: readonly Skill[]): Skill[] {
    return skills.filter(
      (s) => this.#pinned.some((g) => g.test(s.name)) || !this.#hidden.some((g) => g.test(s.name)),
    )
  }

  #item(skill: Skill): Item {
    let item = this.#items.get(skill)
    if (!item) {
      item = {
        skill,
        name: skill.name,
        // a collection's one-line summary (openai/skills' `metadata.short-description`) reads as a title
        title: skill.metadata?.['short-description'],
        // Claude Code's `when_to_use` reads as more description, once the parser keeps it
        description: [skill.description, skill.whenToUse].filter(Boolean).join(' '),
        source: 'skills',
        // a query that names a skill (or a word of its name) finds it, in any sentence
        namedBy: [bareName(skill)],
      }
      this.#items.set(skill, item)
    }
    return item
  }
}
