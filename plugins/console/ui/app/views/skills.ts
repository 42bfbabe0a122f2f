/** Skills: the catalog as the model sees it, and what is left out and why. */
import { h } from 'preact'
import type { Snapshot } from '../types.ts'
import { Badge, Empty, Section } from '../ui.ts'

export function Skills(props: { snap: Snapshot }) {
  const section = props.snap.skills
  const skills = section.skills ?? []
  return h(
    Section,
    { title: 'Skills', id: 'skills', part: section },
    skills.length
      ? h(
          'table',
          { class: 'skills' },
          h(
            'thead',
            null,
            h(
              'tr',
              null,
              ['skill', 'listed', 'version', 'source', 'description / why left out'].map((x) =>
                h('th', { key: x }, x),
              ),
            ),
          ),
          h(
            'tbody',
            null,
            skills.map((s) =>
              h(
                'tr',
                { key: s.name, class: s.listed ? '' : 'left-out' },
                h('td', null, h('code', null, s.name)),
                h('td', null, h(Badge, { value: s.listed ? 'listed' : 'left out' })),
                h('td', null, s.version ?? '—'),
                h('td', { class: 'muted' }, s.source ?? '—'),
                h('td', null, s.listed ? (s.description ?? '') : (s.why ?? '')),
              ),
            ),
          ),
        )
      : h(Empty, null, 'No skills.'),
    section.catalog
      ? h(
          'details',
          null,
          h('summary', null, 'The catalog as the model sees it'),
          h('pre', { class: 'catalog' }, section.catalog),
        )
      : null,
  )
}
