/** MCP servers: state, era, capabilities, stderr, and the protocol transcript (request ↔ response). */
import { h } from 'preact'
import type { ServerRow, Snapshot, TranscriptEntry } from '../types.ts'
import { Badge, Empty, ErrorBox, Json, Section, ms, time } from '../ui.ts'

type Entry = TranscriptEntry

/** An exchange's state: its answer (ok, error), none (cancelled by its sender, or not yet), or a notification. */
function status(e: Entry): string {
  if (e.error !== undefined) return 'error'
  if (e.response !== undefined) return 'ok'
  if (e.id === undefined) return 'notification'
  return e.cancelled ? 'cancelled' : 'no answer'
}

function Transcript(props: { entries: Entry[] }) {
  if (!props.entries.length) return h(Empty, null, 'No transcript kept.')
  return h(
    'ol',
    { class: 'transcript' },
    props.entries.map((e, i) => {
      const state = status(e)
      return h(
        'li',
        { key: i, 'data-method': e.method, 'data-from': e.from, 'data-status': state },
        h(
          'details',
          null,
          h(
            'summary',
            null,
            h('time', null, time(e.at)),
            ' ',
            e.from
              ? h(
                  'span',
                  { class: 'muted', title: e.from === 'server' ? 'from the server' : 'from yoke' },
                  e.from === 'server' ? '← ' : '→ ',
                )
              : null,
            h('code', null, e.method),
            e.id !== undefined ? h('span', { class: 'muted' }, ` #${e.id}`) : null,
            ' ',
            state === 'notification'
              ? h('span', { class: 'muted' }, 'notification')
              : h(Badge, { value: state }),
            ' ',
            state === 'notification' ? null : ms(e.durationMs),
            e.truncated ? h('span', { class: 'muted' }, ' · cut') : null,
          ),
          h(
            'div',
            { class: 'pair' },
            h(Json, { value: e.request }),
            state === 'notification' ? null : h(Json, { value: e.error ?? e.response }),
          ),
        ),
      )
    }),
  )
}

function Server(props: { s: ServerRow }) {
  const s = props.s
  return h(
    'article',
    { class: 'server', 'data-server': s.name },
    h(
      'h3',
      null,
      s.name,
      ' ',
      h(Badge, { value: s.state }),
      s.era ? h('span', { class: 'muted' }, ` ${s.era}`) : null,
      s.serverInfo?.name
        ? h('span', { class: 'muted' }, ` · ${s.serverInfo.name} ${s.serverInfo.version ?? ''}`)
        : null,
      s.tools !== undefined ? h('span', { class: 'muted' }, ` · ${s.tools} tools`) : null,
    ),
    s.error ? h(ErrorBox, { error: s.error }) : null,
    s.capabilities
      ? h('details', null, h('summary', null, 'Capabilities'), h(Json, { value: s.capabilities }))
      : null,
    h('h4', null, 'stderr'),
    s.stderr.length
      ? h('pre', { class: 'stderr' }, s.stderr.join('\n'))
      : h(Empty, null, 'Nothing on stderr.'),
    h('h4', null, 'Transcript'),
    h(Transcript, { entries: s.transcript }),
  )
}

export function Servers(props: { snap: Snapshot }) {
  const section = props.snap.servers
  const servers = section.servers ?? []
  return h(
    Section,
    { title: 'MCP servers', id: 'servers', part: section },
    servers.length
      ? servers.map((s) => h(Server, { s, key: s.name }))
      : h(Empty, null, 'No MCP servers configured.'),
  )
}
