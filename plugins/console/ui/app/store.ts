/**
 * The page's state: the last snapshot, kept live by the event stream. Events that add to a list
 * (a span, a reload, an approval) are merged at once; the rest (an instance's state, the tools,
 * the doctor) fetch the snapshot again, coalesced: one fetch in flight, at most one after it.
 */
import { useEffect, useState } from 'preact/hooks'
import { api, subscribe, type Connection } from './api.ts'
import type { Snapshot } from './types.ts'
import { EVENT_KINDS, mergeEvent } from './merge.ts'

export interface PageState {
  snapshot?: Snapshot
  connection: Connection
  error?: string
  /** bumps on every event, so views that show times can re-render */
  tick: number
}

type Listener = (s: PageState) => void

/** The one store of the page. */
export class Store {
  state: PageState = { connection: 'connecting', tick: 0 }
  #listeners = new Set<Listener>()
  #fetching = false
  #again = false
  #close?: () => void

  start(): void {
    this.#close = subscribe(
      EVENT_KINDS,
      (kind, data) => this.#event(kind, data),
      (connection) => this.#set({ connection }),
      () => void this.refresh(),
    )
  }

  stop(): void {
    this.#close?.()
  }

  /** Fetches the snapshot again (one at a time; a request during a fetch runs once after it). */
  async refresh(): Promise<void> {
    if (this.#fetching) {
      this.#again = true
      return
    }
    this.#fetching = true
    try {
      const snapshot = await api<Snapshot>('/api/snapshot')
      this.#set({ snapshot, error: undefined })
    } catch (e) {
      this.#set({ error: (e as Error).message })
    } finally {
      this.#fetching = false
      if (this.#again) {
        this.#again = false
        void this.refresh()
      }
    }
  }

  /** Applies a change to the snapshot at once (an optimistic or known local change). */
  update(change: (s: Snapshot) => Snapshot): void {
    if (this.state.snapshot) this.#set({ snapshot: change(this.state.snapshot) })
  }

  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  #event(kind: string, data: unknown): void {
    const snap = this.state.snapshot
    if (!snap) return void this.refresh()
    const merged = mergeEvent(snap, kind, data)
    if (merged.snapshot) this.#set({ snapshot: merged.snapshot, tick: this.state.tick + 1 })
    if (merged.refetch) void this.refresh()
  }

  #set(patch: Partial<PageState>): void {
    this.state = { ...this.state, ...patch }
    for (const l of this.#listeners) l(this.state)
  }
}

export const store = new Store()

/** The store's state in a component, re-rendered on every change. */
export function usePage(): PageState {
  const [state, setState] = useState(store.state)
  useEffect(() => store.subscribe(setState), [])
  return state
}
