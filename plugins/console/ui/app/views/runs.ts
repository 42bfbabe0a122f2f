/**
 * Runs: the project's agent runs (newest first), one run's steps by turn, and the two things a
 * recorded run is for — replay it (its cassette against the current tools, live, with whether it
 * still matches and where not) and fork it at a turn (the conversation so far, the current model
 * and plugins), with the old and the new run side by side from that turn and where they part.
 */
import { h } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api } from '../api.ts'
import type { RunDetail, RunJob, RunRow, RunStep, RunsSection, Snapshot } from '../types.ts'
import { Badge, Empty, Section, ms } from '../ui.ts'

const when = (at?: number) => (at === undefined ? '—' : new Date(at).toLocaleString())

function origin(r: RunRow) {
  if (!r.origin) return null
  const o = r.origin
  return h(
    'span',
    { class: 'muted origin' },
    o.kind === 'fork' ? `fork at turn ${o.turn} of ` : 'replay of ',
    h('a', { href: `#/runs/${encodeURIComponent(o.runId)}` }, o.runId),
  )
}

function RunList(props: { section: RunsSection; open?: string }) {
  const heads = ['run', 'task', 'status', 'turns', 'when', 'took', 'from']
  return h(
    'table',
    { class: 'runs' },
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
      props.section.runs.map((r) =>
        h(
          'tr',
          { key: r.id, 'data-run': r.id, class: r.id === props.open ? 'selected' : '' },
          h('td', null, h('a', { href: `#/runs/${encodeURIComponent(r.id)}` }, r.id)),
          h('td', { class: 'task' }, (r.task ?? '').slice(0, 80)),
          h('td', null, h(Badge, { value: r.status, title: r.reason ?? r.problem })),
          h('td', { class: 'num' }, r.turns === undefined ? '—' : String(r.turns)),
          h('td', null, when(r.at)),
          h('td', { class: 'num' }, ms(r.durationMs)),
          h('td', null, origin(r)),
        ),
      ),
    ),
  )
}

export function Step(props: { s: RunStep }) {
  const s = props.s
  const more = s.cut ? h('span', { class: 'muted' }, ` … ${s.cut} more characters`) : null
  if (s.kind === 'tool-call')
    return h(
      'div',
      { class: 'step tool-call', 'data-kind': s.kind },
      h('b', null, '→ ', s.name),
      ' ',
      h('code', null, JSON.stringify(s.args)),
    )
  if (s.kind === 'tool-result')
    return h(
      'div',
      { class: `step tool-result ${s.ok ? 'ok' : 'failed'}`, 'data-kind': s.kind },
      h(Badge, { value: s.ok ? 'ok' : (s.status ?? 'error') }),
      ' ',
      h('b', null, s.name),
      s.durationMs !== undefined ? h('span', { class: 'muted' }, ` ${ms(s.durationMs)}`) : null,
      h('pre', null, s.text, more),
    )
  const who = s.kind === 'user' ? 'user' : s.kind === 'text' ? 'assistant' : ''
  return h(
    'div',
    { class: `step ${s.kind}`, 'data-kind': s.kind },
    who ? h('b', null, who, ' ') : null,
    h(
      s.kind === 'note' ? 'span' : 'pre',
      { class: s.kind === 'note' ? 'muted' : '' },
      s.text,
      more,
    ),
  )
}

/** A run's steps by turn; each turn from 1 on offers a fork there. */
function Steps(props: { steps: RunStep[]; fork?: (turn: number) => void; noFork?: string }) {
  const turns = new Map<number, RunStep[]>()
  for (const s of props.steps) turns.set(s.turn, [...(turns.get(s.turn) ?? []), s])
  return h(
    'ol',
    { class: 'turns' },
    [...turns].map(([turn, steps]) =>
      h(
        'li',
        { key: turn, 'data-turn': turn },
        h(
          'div',
          { class: 'head' },
          h('b', null, turn === 0 ? 'start' : `turn ${turn}`),
          props.fork && turn >= 1
            ? h(
                'button',
                {
                  class: 'small fork',
                  'data-fork': turn,
                  disabled: !!props.noFork,
                  title: props.noFork ?? `a new run from the conversation before turn ${turn}`,
                  onClick: () => props.fork!(turn),
                },
                `Fork at turn ${turn}`,
              )
            : null,
        ),
        steps.map((s, i) => h(Step, { s, key: i })),
      ),
    ),
  )
}

/** One run's transcript, read again whenever its row changes (it is being written: live). */
function useDetail(id: string, row?: RunRow) {
  const [detail, setDetail] = useState<RunDetail>()
  const [error, setError] = useState('')
  useEffect(() => {
    let live = true
    api<RunDetail>(`/api/runs/${encodeURIComponent(id)}`).then(
      (d) => live && (setDetail(d), setError('')),
      (e: Error) => live && setError(e.message),
    )
    return () => void (live = false)
  }, [id, row?.bytes, row?.status])
  return { detail, error }
}

function Compared(props: { job: RunJob }) {
  const { job } = props
  const c = job.compared
  if (!c) return null
  const at = job.departure?.index
  const rows = Math.max(c.old.length, c.new.length)
  return h(
    'table',
    { class: 'compare' },
    h(
      'thead',
      null,
      h('tr', null, h('th', null, `old: ${job.of}`), h('th', null, `new: ${job.id}`)),
    ),
    h(
      'tbody',
      null,
      Array.from({ length: rows }, (_, i) =>
        h(
          'tr',
          { key: i, class: i === at ? 'departs' : at !== undefined && i > at ? 'after' : '' },
          [c.old[i], c.new[i]].map((s, k) =>
            h(
              'td',
              { key: k },
              s ? h('span', { class: 'muted' }, `turn ${s.turn} `) : null,
              s ? h(Step, { s }) : h('span', { class: 'muted' }, '(ended)'),
            ),
          ),
        ),
      ),
    ),
  )
}

function Job(props: { job: RunJob; row?: RunRow; onError: (m: string) => void }) {
  const { job } = props
  const { detail } = useDetail(job.id, props.row)
  const title = job.kind === 'replay' ? 'Replay' : `Fork at turn ${job.turn}`
  const cancel = () =>
    api(`/api/runs/${encodeURIComponent(job.id)}/cancel`, {}).catch((e: Error) =>
      props.onError(e.message),
    )
  const verdict =
    job.state === 'matched'
      ? job.kind === 'replay'
        ? 'matches the recording: every request was the recorded one'
        : 'did what the old run did from that turn on'
      : job.state === 'departed'
        ? 'departs from the old run'
        : job.state === 'running'
          ? 'running…'
          : (job.reason ?? job.state)
  return h(
    'div',
    { class: `job ${job.state}`, 'data-job': job.id, 'data-state': job.state },
    h(
      'div',
      { class: 'head' },
      h('b', null, title),
      ' ',
      h(Badge, { value: job.state }),
      ' ',
      h('a', { href: `#/runs/${encodeURIComponent(job.id)}` }, job.id),
      ' ',
      h('span', { class: 'verdict' }, verdict),
      job.state === 'running'
        ? h('button', { class: 'small cancel', onClick: cancel }, 'Cancel')
        : null,
    ),
    job.mismatch
      ? h(
          'div',
          { class: 'error mismatch' },
          h('code', null, 'REPLAY_MISMATCH'),
          ` at turn ${job.mismatch.turn} (lane ${job.mismatch.lane}): ${job.mismatch.difference}`,
          h(
            'div',
            { class: 'fix' },
            'Fix: the request is no longer the recorded one (a prompt, tool or result changed): record the run again with `yoke run --record FILE`, or fork it to see the new path.',
          ),
        )
      : null,
    job.departure
      ? h(
          'div',
          { class: 'departure' },
          h('b', null, 'First difference: '),
          `${job.departure.what}`,
          job.departure.oldTurn !== undefined ? ` (old turn ${job.departure.oldTurn}` : ' (',
          job.departure.newTurn !== undefined ? `, new turn ${job.departure.newTurn})` : ')',
          ': ',
          h('code', null, job.departure.difference),
        )
      : null,
    job.state === 'running' && detail
      ? h(Steps, { steps: detail.steps.filter((s) => s.turn >= 1) })
      : h(Compared, { job }),
  )
}

function RunView(props: { id: string; section: RunsSection }) {
  const { id, section } = props
  const row = section.runs.find((r) => r.id === id)
  const { detail, error } = useDetail(id, row)
  const [failed, setFailed] = useState('')
  const run = detail?.run ?? row
  const start = (verb: string, body: unknown = {}) => {
    setFailed('')
    api<RunJob>(`/api/runs/${encodeURIComponent(id)}/${verb}`, body).catch((e: Error) =>
      setFailed(e.message),
    )
  }
  const noReplay = section.blocked?.replay ?? run?.noReplay
  const noFork = section.blocked?.fork ?? run?.noFork
  const jobs = section.jobs.filter((j) => j.of === id)
  return h(
    'div',
    { class: 'run', 'data-open-run': id },
    h('h3', null, 'Run ', h('code', null, id), run ? h(Badge, { value: run.status }) : null),
    run?.task ? h('p', { class: 'task' }, run.task) : null,
    run
      ? h(
          'p',
          { class: 'muted' },
          `${run.provider ?? '?'} ${run.model ?? ''} · ${when(run.at)} · ${ms(run.durationMs)}`,
          run.reason ? ` · ${run.reason}` : '',
          ' ',
          origin(run),
        )
      : null,
    h(
      'div',
      { class: 'actions' },
      h(
        'button',
        { class: 'replay', disabled: !!noReplay, onClick: () => start('replay') },
        'Replay',
      ),
      noReplay ? h('span', { class: 'why' }, noReplay) : null,
    ),
    noFork ? h('p', { class: 'why' }, `Fork: ${noFork}`) : null,
    failed ? h('div', { class: 'error', role: 'alert' }, failed) : null,
    error ? h('div', { class: 'error' }, error) : null,
    detail?.problems.map((p) => h('div', { class: 'error problem', key: p }, p)),
    detail?.truncated ? h('p', { class: 'unavailable' }, detail.truncated) : null,
    jobs.map((job) =>
      h(Job, {
        job,
        key: job.id,
        row: section.runs.find((r) => r.id === job.id),
        onError: setFailed,
      }),
    ),
    detail
      ? h(Steps, { steps: detail.steps, fork: (turn) => start('fork', { turn }), noFork })
      : null,
  )
}

export function Runs(props: { snap: Snapshot; open?: string }) {
  const section = props.snap.runs
  return h(
    Section,
    { title: 'Runs', id: 'runs', part: section },
    section.runs.length
      ? h(RunList, { section, open: props.open })
      : h(
          Empty,
          null,
          `No runs in ${section.dir} yet: \`yoke run --record run.jsonl "TASK"\` records one that can be replayed.`,
        ),
    section.more
      ? h('p', { class: 'muted' }, `${section.more} older runs not listed (console maxRuns)`)
      : null,
    props.open ? h(RunView, { id: props.open, section, key: props.open }) : null,
  )
}
