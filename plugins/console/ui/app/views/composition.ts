/**
 * Composition: layers → instances → effects, each instance's state, why it waits or failed and
 * the fix; then the config with every value's origin (as `yoke config print --explain`).
 */
import { h } from 'preact'
import type { ConfigSection, EffectRow, InstanceRow, Snapshot } from '../types.ts'
import { Badge, Empty, ErrorBox, Section } from '../ui.ts'

function Effects(props: { effects: EffectRow[] }) {
  if (!props.effects.length) return null
  return h(
    'ul',
    { class: 'effects' },
    props.effects.map((e, i) =>
      h('li', { key: i }, e.label, e.children?.length ? h(Effects, { effects: e.children }) : null),
    ),
  )
}

function why(i: InstanceRow) {
  if (i.trust)
    return h(
      'div',
      { class: 'why' },
      'Waits for trust. Fix: ',
      h('code', null, 'yoke trust'),
      i.error?.message ? ` — ${i.error.message}` : '',
    )
  if (i.error) return h(ErrorBox, { error: i.error })
  if (i.waitsFor?.length)
    return h('div', { class: 'why' }, 'Waits for the service ', i.waitsFor.join(', '))
  return null
}

function Instance(props: { row: InstanceRow; children: InstanceRow[] }) {
  const i = props.row
  return h(
    'li',
    { class: 'instance', 'data-key': i.key, 'data-state': i.state },
    h(
      'details',
      { open: false },
      h(
        'summary',
        null,
        h('span', { class: 'key' }, i.key),
        i.plugin !== i.key ? h('span', { class: 'muted' }, ` (${i.plugin})`) : null,
        ' ',
        h(Badge, { value: i.state }),
        i.trust ? h(Badge, { value: 'untrusted' }) : null,
      ),
      why(i),
      h(Effects, { effects: i.effects }),
    ),
    props.children.length
      ? h(
          'ul',
          { class: 'children' },
          props.children.map((c) => h(Instance, { row: c, children: [], key: c.key })),
        )
      : null,
  )
}

/** `{a: {b: 1}}` → [['a.b', 1]] (arrays by index). */
function flatten(value: unknown, prefix = ''): Array<[string, unknown]> {
  if (value && typeof value === 'object' && Object.keys(value).length) {
    return Object.entries(value).flatMap(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k))
  }
  return [[prefix, value]]
}

/** The origin of a path: its own, else its nearest parent's. */
function originOf(origins: Record<string, string>, path: string): string | undefined {
  for (let p = path; p; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    if (origins[p]) return origins[p]
  }
  return undefined
}

function Config(props: { config: ConfigSection }) {
  const c = props.config
  const rows = flatten(c.value)
  return h(
    Section,
    { title: 'Config', id: 'config', part: c },
    h(
      'ol',
      { class: 'layers' },
      (c.layers ?? []).map((l, i) => h('li', { key: i }, h(Badge, { value: l.kind }), ' ', l.file)),
    ),
    h(
      'table',
      { class: 'config' },
      h(
        'thead',
        null,
        h('tr', null, h('th', null, 'key'), h('th', null, 'value'), h('th', null, 'from')),
      ),
      h(
        'tbody',
        null,
        rows.map(([path, v]) =>
          h(
            'tr',
            { key: path },
            h('td', null, h('code', null, path)),
            h('td', null, h('code', null, JSON.stringify(v))),
            h('td', { class: 'muted' }, originOf(c.origins ?? {}, path) ?? '—'),
          ),
        ),
      ),
    ),
  )
}

const settled = (state: string) => state === 'active' || state === 'running'

/** The instances that wait or failed, first, each with why and the fix. */
function Attention(props: { rows: InstanceRow[] }) {
  const rows = props.rows.filter((r) => !settled(r.state) && r.state !== 'stopping')
  if (!rows.length) return h('p', { class: 'summary ok' }, 'Every instance runs.')
  return h(
    'ul',
    { class: 'attention' },
    rows.map((r) =>
      h(
        'li',
        { key: r.key, class: 'needs', 'data-key': r.key, 'data-state': r.state },
        h('span', { class: 'key' }, r.key),
        ' ',
        h(Badge, { value: r.state }),
        why(r),
      ),
    ),
  )
}

export function Composition(props: { snap: Snapshot }) {
  const rows = props.snap.instances
  const keys = new Set(rows.map((r) => r.key))
  const top = rows.filter((r) => !r.parent || !keys.has(r.parent))
  const kids = (k: string) => rows.filter((r) => r.parent === k)
  const layers = props.snap.config.layers ?? []
  const running = rows.filter((r) => settled(r.state)).length
  return h(
    'div',
    null,
    h(
      Section,
      { title: 'Composition', id: 'composition' },
      h(
        'p',
        { class: 'layers-line muted' },
        `${running} of ${rows.length} instances running`,
        layers.length ? ` · layers: ${layers.map((l) => l.file.split('/').pop()).join(' → ')}` : '',
      ),
      h(Attention, { rows }),
      top.length
        ? h(
            'ul',
            { class: 'instances' },
            top.map((r) => h(Instance, { row: r, children: kids(r.key), key: r.key })),
          )
        : h(Empty, null, 'No instances.'),
    ),
    h(Config, { config: props.snap.config }),
  )
}
