/** Doctor, the front page: every check `yoke doctor` reports, worst first, and recent warnings. */
import { h } from 'preact'
import type { DoctorCheck, Snapshot } from '../types.ts'
import { logs } from '../merge.ts'
import { Badge, Empty, Section, time } from '../ui.ts'

const ORDER = { error: 0, warn: 1, ok: 2 } as const

function Check(props: { check: DoctorCheck }) {
  const c = props.check
  return h(
    'li',
    { class: `check ${c.level}` },
    h(Badge, { value: c.level }),
    c.topic ? h('span', { class: 'topic' }, c.topic) : null,
    h('span', { class: 'message' }, c.message),
    c.hint ? h('div', { class: 'fix' }, 'Fix: ', c.hint) : null,
  )
}

export function Doctor(props: { snap: Snapshot }) {
  const d = props.snap.doctor
  const checks = [...(d.checks ?? [])].sort((a, b) => ORDER[a.level] - ORDER[b.level])
  const counts = { error: 0, warn: 0, ok: 0 }
  for (const c of checks) counts[c.level]++
  return h(
    Section,
    { title: 'Doctor', id: 'doctor', part: d },
    h(
      'p',
      { class: `summary ${d.level}` },
      h(Badge, { value: d.level }),
      ` ${counts.error} error${counts.error === 1 ? '' : 's'}, ${counts.warn} warning${counts.warn === 1 ? '' : 's'}, ${counts.ok} ok`,
    ),
    checks.length
      ? h(
          'ul',
          { class: 'checks' },
          checks.map((c, i) => h(Check, { check: c, key: i })),
        )
      : h(Empty, null, 'No checks reported.'),
    logs.length
      ? h(
          'div',
          { class: 'logs' },
          h('h3', null, 'Warnings and errors since this page opened'),
          h(
            'ul',
            null,
            [...logs]
              .reverse()
              .map((l, i) =>
                h(
                  'li',
                  { key: i, class: `log ${l.level}` },
                  h('time', null, time(l.at)),
                  h(Badge, { value: l.level }),
                  l.instance ? h('span', { class: 'topic' }, l.instance) : null,
                  l.message,
                ),
              ),
          ),
        )
      : null,
  )
}
