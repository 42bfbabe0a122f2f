/**
 * The web console's page: takes the launch token, loads the snapshot, follows the event stream,
 * and draws one view at a time (hash routes, so a view is a link: `#/calls/<spanId>`).
 */
import { h, render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { takeToken } from './api.ts'
import { store, usePage } from './store.ts'
import type { Snapshot } from './types.ts'
import { Approvals } from './views/approvals.ts'
import { Calls } from './views/calls.ts'
import { Composition } from './views/composition.ts'
import { Doctor } from './views/doctor.ts'
import { Reloads } from './views/reloads.ts'
import { Runs } from './views/runs.ts'
import { Servers } from './views/servers.ts'
import { Skills } from './views/skills.ts'
import { Tools } from './views/tools.ts'
import { Badge } from './ui.ts'

interface Route {
  view: string
  arg?: string
  query: URLSearchParams
}

function parseHash(): Route {
  const [path, q = ''] = location.hash.replace(/^#\/?/, '').split('?')
  const [view = 'doctor', ...rest] = path.split('/')
  const arg = rest.length ? decodeURIComponent(rest.join('/')) : undefined
  return { view: view || 'doctor', arg, query: new URLSearchParams(q) }
}

function useRoute(): Route {
  const [route, setRoute] = useState(parseHash)
  useEffect(() => {
    const on = () => setRoute(parseHash())
    addEventListener('hashchange', on)
    return () => removeEventListener('hashchange', on)
  }, [])
  return route
}

const VIEWS: Array<{ id: string; label: string; count?: (s: Snapshot) => number | undefined }> = [
  {
    id: 'doctor',
    label: 'Doctor',
    count: (s) => s.doctor.checks?.filter((c) => c.level !== 'ok').length,
  },
  { id: 'composition', label: 'Composition', count: (s) => s.instances.length },
  { id: 'reloads', label: 'Reloads', count: (s) => s.reloads.length },
  { id: 'tools', label: 'Tools', count: (s) => s.tools.tools?.length },
  { id: 'calls', label: 'Calls', count: (s) => s.calls.spans?.length },
  { id: 'servers', label: 'MCP servers', count: (s) => s.servers.servers?.length },
  { id: 'skills', label: 'Skills', count: (s) => s.skills.skills?.length },
  { id: 'approvals', label: 'Approvals', count: (s) => s.approvals.length },
  { id: 'runs', label: 'Runs', count: (s) => s.runs?.runs.length },
]

function View(props: { route: Route; snap: Snapshot }) {
  const { route, snap } = props
  switch (route.view) {
    case 'composition':
      return h(Composition, { snap })
    case 'reloads':
      return h(Reloads, { snap })
    case 'tools':
      return h(Tools, { snap, selected: route.arg })
    case 'calls':
      return h(Calls, { snap, open: route.arg, initial: Object.fromEntries(route.query) })
    case 'servers':
      return h(Servers, { snap })
    case 'skills':
      return h(Skills, { snap })
    case 'approvals':
      return h(Approvals, { snap })
    case 'runs':
      return h(Runs, { snap, open: route.arg })
    default:
      return h(Doctor, { snap })
  }
}

function Nav(props: { route: Route; snap?: Snapshot }) {
  return h(
    'nav',
    null,
    VIEWS.map((v) => {
      const n = props.snap && v.count?.(props.snap)
      const urgent = v.id === 'approvals' && !!n
      return h(
        'a',
        {
          key: v.id,
          href: `#/${v.id}`,
          class: `${props.route.view === v.id ? 'current' : ''} ${urgent ? 'urgent' : ''}`,
          'data-nav': v.id,
        },
        v.label,
        n ? h('span', { class: 'count' }, String(n)) : null,
      )
    }),
  )
}

function App() {
  const page = usePage()
  const route = useRoute()
  const snap = page.snapshot
  return h(
    'div',
    { class: 'app' },
    h(
      'header',
      null,
      h('h1', null, 'yoke'),
      snap ? h('span', { class: 'project', title: snap.about.url }, snap.about.project) : null,
      h(
        'span',
        { class: 'conn', 'data-connection': page.connection },
        h(Badge, { value: page.connection === 'live' ? 'live' : page.connection }),
      ),
    ),
    h(Nav, { route, snap }),
    h(
      'main',
      null,
      page.error ? h('div', { class: 'error banner', role: 'alert' }, page.error) : null,
      snap ? h(View, { route, snap }) : page.error ? null : h('p', { class: 'muted' }, 'Loading…'),
    ),
  )
}

takeToken()
store.start()
void store.refresh()
const root = document.getElementById('app')!
root.textContent = ''
render(h(App, null), root)
