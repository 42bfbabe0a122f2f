/**
 * How each event of the stream changes the page's snapshot. Lists (reloads, spans, approvals)
 * and whole sections the event carries are merged in place; an instance's change also asks for
 * the snapshot again, since it moves the doctor's checks and the servers with it.
 */
import type { EventMap, Snapshot } from './types.ts'

/** The kinds the page listens to. */
export const EVENT_KINDS = [
  'hello',
  'instance',
  'reload',
  'tools',
  'span',
  'approval',
  'approval-ended',
  'doctor',
  'server',
  'config',
  'runs',
  'run-job',
  'log',
] as const satisfies ReadonlyArray<keyof EventMap>

export interface Merged {
  snapshot?: Snapshot
  refetch?: boolean
}

const MAX_SPANS = 500
const MAX_RELOADS = 100

/** An approval ended: kept for the page to say who answered, by id. */
export const ended = new Map<string, EventMap['approval-ended']>()

/** The last warnings and errors the harness logged since the page opened, oldest first. */
export const logs: Array<EventMap['log']> = []
const MAX_LOGS = 50

type Mergers = { [K in keyof EventMap]: (s: Snapshot, data: EventMap[K]) => Merged }

const mergers: Mergers = {
  hello: () => ({ refetch: true }),
  instance: (s, row) => {
    const found = s.instances.some((i) => i.key === row.key)
    const instances = found
      ? s.instances.map((i) => (i.key === row.key ? row : i))
      : [...s.instances, row]
    return { snapshot: { ...s, instances }, refetch: true }
  },
  reload: (s, entry) => ({
    snapshot: {
      ...s,
      reloads: [...s.reloads.filter((r) => r.seq !== entry.seq), entry].slice(-MAX_RELOADS),
    },
    refetch: true,
  }),
  tools: (s, tools) => ({ snapshot: { ...s, tools } }),
  // a call's span moves its tool's metrics too: the snapshot again (coalesced) brings them
  span: (s, span) => ({
    refetch: true,
    snapshot: {
      ...s,
      calls: {
        ...s.calls,
        spans: [...s.calls.spans.filter((x) => x.spanId !== span.spanId), span].slice(-MAX_SPANS),
      },
    },
  }),
  approval: (s, a) => ({
    snapshot: { ...s, approvals: [...s.approvals.filter((x) => x.id !== a.id), a] },
  }),
  'approval-ended': (s, e) => {
    ended.set(e.id, e)
    return { snapshot: { ...s, approvals: s.approvals.filter((x) => x.id !== e.id) } }
  },
  doctor: (s, doctor) => ({ snapshot: { ...s, doctor } }),
  server: (s, row) => {
    const servers = s.servers.servers.some((x) => x.name === row.name)
      ? s.servers.servers.map((x) => (x.name === row.name ? row : x))
      : [...s.servers.servers, row]
    return { snapshot: { ...s, servers: { ...s.servers, servers } } }
  },
  config: (s, config) => ({ snapshot: { ...s, config } }),
  runs: (s, runs) => ({ snapshot: { ...s, runs } }),
  'run-job': (s, job) => ({
    snapshot: {
      ...s,
      runs: { ...s.runs, jobs: [job, ...s.runs.jobs.filter((j) => j.id !== job.id)] },
    },
  }),
  log: (s, record) => {
    logs.push(record)
    if (logs.length > MAX_LOGS) logs.shift()
    return { snapshot: { ...s } }
  },
}

/** The snapshot after one event (or a request to fetch it again). */
export function mergeEvent(s: Snapshot, kind: string, data: unknown): Merged {
  const merge = mergers[kind as keyof EventMap] as ((s: Snapshot, d: unknown) => Merged) | undefined
  return merge ? merge(s, data) : {}
}
