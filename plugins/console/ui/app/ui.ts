/** Small pieces the views share: badges, times, durations, JSON blocks, empty states. */
import { h, type ComponentChildren } from 'preact'
import type { ErrorJson, Unavailable } from './types.ts'

const GOOD = new Set([
  'ok',
  'live',
  'direct',
  'running',
  'active',
  'connected',
  'ready',
  'visible',
  'allow',
  'listed',
])
const BAD = new Set(['error', 'failed', 'deny', 'denied', 'closed', 'refused'])

/** A state word in a coloured pill: good, bad or waiting. */
export function Badge(props: { value: string; title?: string }) {
  const v = props.value.toLowerCase()
  const tone = GOOD.has(v) ? 'good' : BAD.has(v) ? 'bad' : v === 'unset' ? 'quiet' : 'wait'
  return h('span', { class: `badge ${tone}`, title: props.title }, props.value)
}

export function ms(n: number | undefined): string {
  if (n === undefined) return '—'
  return n < 1
    ? `${n.toFixed(2)} ms`
    : n < 1000
      ? `${Math.round(n)} ms`
      : `${(n / 1000).toFixed(2)} s`
}

export function time(at: string | number): string {
  const d = new Date(at)
  return Number.isNaN(d.getTime()) ? String(at) : d.toLocaleTimeString()
}

export function Json(props: { value: unknown }) {
  return h('pre', { class: 'json' }, JSON.stringify(props.value, null, 2))
}

/** An error with its code, where, and the fix. */
export function ErrorBox(props: { error: ErrorJson }) {
  const e = props.error
  return h(
    'div',
    { class: 'error' },
    h('code', null, e.code),
    ' ',
    e.message,
    e.location ? h('div', { class: 'where' }, e.location) : null,
    e.hint ? h('div', { class: 'fix' }, 'Fix: ', e.hint) : null,
  )
}

/**
 * A view's section: its title, a note of what the server could not fill (and why), and what it
 * could. `id` names the view for links and tests (`data-view`).
 */
export function Section(props: {
  title: string
  id: string
  part?: Unavailable
  children?: ComponentChildren
}) {
  return h(
    'section',
    { class: 'view', 'data-view': props.id },
    h('h2', null, props.title),
    props.part?.unavailable ? h('p', { class: 'unavailable' }, props.part.unavailable) : null,
    props.children,
  )
}

export function Empty(props: { children: ComponentChildren }) {
  return h('p', { class: 'muted empty' }, props.children)
}

/** `a, b, c` or a dash. */
export function list(xs: readonly string[] | undefined): string {
  return xs && xs.length ? xs.join(', ') : '—'
}
