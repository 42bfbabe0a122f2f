/**
 * Tools: every tool with source, exposure, risk, version, metrics and refusal; a form generated
 * from the chosen tool's input schema (or raw JSON) that runs a call through the full pipeline
 * and links to the call in the timeline.
 */
import { h } from 'preact'
import { useState } from 'preact/hooks'
import { api } from '../api.ts'
import { SchemaFields, formable, initial, type Schema } from '../form.ts'
import type { Snapshot, ToolCallResponse, ToolRow } from '../types.ts'
import { Badge, Empty, Json, Section, ms } from '../ui.ts'

function errorsText(errors: Record<string, number>): string {
  const parts = Object.entries(errors).map(([code, n]) => `${code} ${n}`)
  return parts.length ? parts.join(', ') : '—'
}

function Row(props: { t: ToolRow; selected: boolean; onPick: () => void }) {
  const t = props.t
  const m = t.metrics
  return h(
    'tr',
    { class: props.selected ? 'selected' : '', 'data-tool': t.name },
    h(
      'td',
      null,
      h('a', { href: `#/tools/${encodeURIComponent(t.name)}`, onClick: props.onPick }, t.name),
    ),
    h('td', null, t.source),
    h('td', null, h(Badge, { value: t.refused ? 'refused' : t.exposure, title: t.refused })),
    h('td', null, t.risk ?? '—'),
    h('td', { class: 'muted' }, t.version ?? (t.hash ? t.hash.slice(0, 12) : '—')),
    h('td', { class: 'num' }, m ? String(m.called) : '0'),
    h('td', null, m ? errorsText(m.errors) : '—'),
    h('td', { class: 'num' }, ms(m?.p50)),
    h('td', { class: 'num' }, ms(m?.p95)),
  )
}

function Result(props: { res: ToolCallResponse }) {
  const r = props.res.result
  const link = props.res.spanId
    ? `#/calls/${encodeURIComponent(props.res.spanId)}`
    : `#/calls?tool=${encodeURIComponent(r.tool)}`
  return h(
    'div',
    { class: `result ${r.ok ? 'ok' : 'failed'}` },
    h(Badge, { value: r.status }),
    ` ${ms(r.durationMs)} `,
    h('a', { href: link, class: 'open-call' }, 'Open this call in the timeline'),
    r.error
      ? h('div', { class: 'error' }, h('code', null, r.error.code), ' ', r.error.message)
      : null,
    h(Json, { value: r.structured ?? r.content }),
  )
}

function RunForm(props: { tool: ToolRow }) {
  const schema = (props.tool.inputSchema ?? { type: 'object', properties: {} }) as Schema
  const [args, setArgs] = useState<unknown>(() => initial(schema) ?? {})
  const [raw, setRaw] = useState(!formable(schema))
  const [text, setText] = useState('')
  const [scope, setScope] = useState('')
  const [busy, setBusy] = useState(false)
  const [res, setRes] = useState<ToolCallResponse>()
  const [error, setError] = useState('')
  const run = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError('')
    try {
      const body = raw ? (text.trim() ? JSON.parse(text) : {}) : args
      const path = `/api/tools/${encodeURIComponent(props.tool.name)}/call`
      setRes(await api<ToolCallResponse>(path, { args: body, ...(scope ? { scope } : {}) }))
    } catch (err) {
      setError((err as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const toggle = () => {
    if (!raw) setText(JSON.stringify(args ?? {}, null, 2))
    else {
      try {
        setArgs(JSON.parse(text || '{}'))
      } catch {}
    }
    setRaw(!raw)
  }
  return h(
    'form',
    { class: 'run', onSubmit: run, 'data-tool': props.tool.name },
    h('h3', null, 'Run ', h('code', null, props.tool.name)),
    props.tool.description ? h('p', { class: 'muted' }, props.tool.description) : null,
    raw
      ? h('textarea', {
          class: 'json raw-args',
          name: 'raw',
          rows: 8,
          value: text,
          onInput: (e: Event) => setText((e.target as HTMLTextAreaElement).value),
        })
      : h(SchemaFields, { schema, value: args, onChange: setArgs }),
    h(
      'div',
      { class: 'actions' },
      h(
        'label',
        null,
        'scope ',
        h('input', {
          name: 'scope',
          placeholder: 'global',
          value: scope,
          onInput: (e: Event) => setScope((e.target as HTMLInputElement).value),
        }),
      ),
      h('button', { type: 'button', class: 'small', onClick: toggle }, raw ? 'Form' : 'Raw JSON'),
      h('button', { type: 'submit', disabled: busy }, busy ? 'Running…' : 'Run'),
    ),
    error ? h('div', { class: 'error' }, error) : null,
    res ? h(Result, { res }) : null,
  )
}

export function Tools(props: { snap: Snapshot; selected?: string }) {
  const section = props.snap.tools
  const tools = section.tools ?? []
  const [picked, setPicked] = useState(props.selected)
  const name = props.selected ?? picked
  const tool = tools.find((t) => t.name === name)
  const heads = ['tool', 'source', 'exposure', 'risk', 'version', 'calls', 'errors', 'p50', 'p95']
  return h(
    Section,
    { title: 'Tools', id: 'tools', part: section },
    tools.length
      ? h(
          'table',
          { class: 'tools' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              heads.map((x) => h('th', { key: x }, x)),
            ),
          ),
          h(
            'tbody',
            null,
            tools.map((t) =>
              h(Row, {
                t,
                key: t.name,
                selected: t.name === name,
                onPick: () => setPicked(t.name),
              }),
            ),
          ),
        )
      : h(Empty, null, 'No tools registered.'),
    tool ? h(RunForm, { tool, key: tool.name }) : null,
  )
}
