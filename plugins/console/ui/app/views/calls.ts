/**
 * Calls: a timeline from the spans. Each trace is a group; each span a row with its duration as a
 * bar on the trace's time axis and the pipeline's decisions (span events) as marks on it. Filter by
 * tool, source, scope and status; `#/calls/<spanId>` opens one call with its attributes.
 */
import { h } from 'preact'
import { useState } from 'preact/hooks'
import type { SpanRow, Snapshot } from '../types.ts'
import { Badge, Empty, Json, Section, ms, time } from '../ui.ts'

const str = (v: unknown) => (v === undefined ? undefined : String(v))
const attr = (s: SpanRow, ...names: string[]) =>
  str(names.map((n) => s.attributes[n]).find((v) => v !== undefined))

/** The result's status the pipeline recorded on the span (`ok`, `error`, `denied`, …). */
function resultStatus(s: SpanRow): string | undefined {
  const value = s.events.find((e) => e.attributes?.['yoke.status'] !== undefined)?.attributes?.[
    'yoke.status'
  ]
  return value === undefined ? attr(s, 'yoke.status', 'yoke.result.status') : String(value)
}

/** What a span says about its call: tool, source, scope (names from the GenAI and yoke attributes). */
export function facets(s: SpanRow) {
  return {
    tool: attr(s, 'gen_ai.tool.name', 'yoke.tool.name'),
    source: attr(s, 'yoke.tool.source', 'yoke.source', 'gen_ai.tool.type'),
    scope: attr(s, 'yoke.scope', 'yoke.tool.scope', 'yoke.call.scope'),
    status: s.error ?? (s.status === 'unset' ? (resultStatus(s) ?? s.status) : s.status),
  }
}

type Filter = { tool: string; source: string; scope: string; status: string }
const KEYS = ['tool', 'source', 'scope', 'status'] as const

function end(s: SpanRow) {
  return s.end ?? s.start + (s.durationMs ?? 0)
}

function Bar(props: { span: SpanRow; from: number; width: number; open: boolean }) {
  const s = props.span
  const pct = (t: number) => `${((t - props.from) / props.width) * 100}%`
  const w = Math.max(((end(s) - s.start) / props.width) * 100, 0.5)
  return h(
    'div',
    { class: 'track' },
    h('div', { class: `bar ${s.status}`, style: { left: pct(s.start), width: `${w}%` } }),
    s.events.map((e, i) =>
      h('span', {
        key: i,
        class: 'mark',
        style: { left: pct(e.at) },
        title: `${e.name} +${ms(e.at - s.start)}`,
      }),
    ),
  )
}

function Detail(props: { span: SpanRow }) {
  const s = props.span
  return h(
    'div',
    { class: 'span-detail' },
    h(
      'ol',
      { class: 'stages' },
      s.events.map((e, i) =>
        h(
          'li',
          { key: i },
          h('span', { class: 'muted' }, `+${ms(e.at - s.start)} `),
          h('b', null, e.name),
          e.attributes && Object.keys(e.attributes).length
            ? h('code', null, ' ', JSON.stringify(e.attributes))
            : null,
        ),
      ),
    ),
    h(Json, { value: s.attributes }),
  )
}

function SpanLine(props: {
  s: SpanRow
  depth: number
  from: number
  width: number
  open: boolean
}) {
  const s = props.s
  const f = facets(s)
  return h(
    'li',
    {
      class: `span ${props.open ? 'open' : ''}`,
      id: `span-${s.spanId}`,
      'data-span': s.spanId,
      'data-tool': f.tool ?? '',
    },
    h(
      'a',
      {
        class: 'span-row',
        href: props.open ? '#/calls' : `#/calls/${encodeURIComponent(s.spanId)}`,
      },
      h('span', { class: 'name', style: { paddingLeft: `${props.depth}em` } }, s.name),
      h(Badge, { value: f.status }),
      h('span', { class: 'muted' }, ms(s.durationMs ?? end(s) - s.start)),
      h(Bar, { span: s, from: props.from, width: props.width, open: props.open }),
    ),
    props.open ? h(Detail, { span: s }) : null,
  )
}

/** How long a trace took, first start to last end. */
const length = (spans: SpanRow[]) =>
  Math.max(...spans.map(end)) - Math.min(...spans.map((s) => s.start))

/** One trace; `width` is the longest shown trace's length, so bars compare across traces. */
function Trace(props: { spans: SpanRow[]; open?: string; width: number }) {
  const spans = [...props.spans].sort((a, b) => a.start - b.start)
  const from = spans[0].start
  const width = props.width || 1
  const ids = new Set(spans.map((s) => s.spanId))
  const depth = (s: SpanRow): number => {
    const p = spans.find((x) => x.spanId === s.parentSpanId)
    return p && ids.has(p.spanId) ? 1 + depth(p) : 0
  }
  return h(
    'li',
    { class: 'trace' },
    h('div', { class: 'trace-head muted' }, time(from), ' · trace ', spans[0].traceId.slice(0, 8)),
    h(
      'ul',
      null,
      spans.map((s) =>
        h(SpanLine, {
          s,
          key: s.spanId,
          depth: depth(s),
          from,
          width,
          open: s.spanId === props.open,
        }),
      ),
    ),
  )
}

export function Calls(props: { snap: Snapshot; open?: string; initial?: Partial<Filter> }) {
  const section = props.snap.calls
  const [filter, setFilter] = useState<Filter>({
    tool: '',
    source: '',
    scope: '',
    status: '',
    ...props.initial,
  })
  const spans = section.spans ?? []
  const values = (k: keyof Filter) =>
    [...new Set(spans.map((s) => facets(s)[k]).filter(Boolean))] as string[]
  const match = (s: SpanRow) => KEYS.every((k) => !filter[k] || facets(s)[k] === filter[k])
  const traces = new Map<string, SpanRow[]>()
  for (const s of spans) traces.set(s.traceId, [...(traces.get(s.traceId) ?? []), s])
  const shown = [...traces.values()].filter(
    (t) => t.some(match) || t.some((s) => s.spanId === props.open),
  )
  const scale = Math.max(0, ...shown.map(length))
  return h(
    Section,
    { title: 'Calls', id: 'calls', part: section },
    h(
      'div',
      { class: 'filters' },
      KEYS.map((k) =>
        h(
          'label',
          { key: k },
          k,
          ' ',
          h(
            'select',
            {
              name: k,
              value: filter[k],
              onChange: (e: Event) =>
                setFilter({ ...filter, [k]: (e.target as HTMLSelectElement).value }),
            },
            h('option', { value: '' }, 'all'),
            values(k).map((v) => h('option', { value: v, key: v }, v)),
          ),
        ),
      ),
    ),
    shown.length
      ? h(
          'ul',
          { class: 'timeline' },
          shown
            .reverse()
            .map((t) => h(Trace, { spans: t, open: props.open, width: scale, key: t[0].traceId })),
        )
      : h(
          Empty,
          null,
          spans.length
            ? 'No call matches the filter.'
            : 'No calls yet: run a tool from the Tools view.',
        ),
  )
}
