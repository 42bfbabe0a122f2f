/** Reloads: a feed, newest first, of what changed, restarted, was kept, took, and failed where. */
import { h } from 'preact'
import type { ReloadEntry, Snapshot } from '../types.ts'
import { Badge, Empty, ErrorBox, Section, list, ms, time } from '../ui.ts'

function Reload(props: { r: ReloadEntry }) {
  const r = props.r
  const line = (label: string, xs: string[]) =>
    xs.length ? h('div', { class: `line ${label}` }, h('b', null, label, ': '), list(xs)) : null
  return h(
    'li',
    { class: `reload ${r.ok ? 'ok' : 'failed'}`, 'data-seq': r.seq },
    h(
      'div',
      { class: 'head' },
      h('time', null, time(r.at)),
      h(Badge, { value: r.ok ? 'ok' : 'failed' }),
      h('span', null, r.type === 'loaded' ? 'loaded' : 'reload'),
      h('span', { class: 'muted' }, ms(r.durationMs)),
      r.trigger.length ? h('span', { class: 'trigger' }, list(r.trigger)) : null,
    ),
    line('added', r.added),
    line('removed', r.removed),
    line('restarted', r.restarted),
    line('kept', r.unchanged),
    r.failed.map((f, i) =>
      h(
        'div',
        { key: i, class: 'line failed' },
        h('b', null, f.instance, ': '),
        h(ErrorBox, { error: f.error }),
      ),
    ),
    r.errors.map((e, i) => h(ErrorBox, { error: e, key: `e${i}` })),
  )
}

export function Reloads(props: { snap: Snapshot }) {
  const rs = [...props.snap.reloads].reverse()
  return h(
    Section,
    { title: 'Reloads', id: 'reloads' },
    rs.length
      ? h(
          'ul',
          { class: 'reloads' },
          rs.map((r) => h(Reload, { r, key: r.seq })),
        )
      : h(Empty, null, 'No reloads yet: edit a config file or a plugin and watch it here.'),
  )
}
