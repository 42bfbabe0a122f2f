/**
 * Approvals: pending approvals and questions, answered from the browser. Whoever else is asked
 * (the terminal, the call's own asker) may answer first: the server then says who (409, or an
 * `approval-ended` event), and the page shows it. A denial may say why: the caller is told.
 */
import { h } from 'preact'
import { useState } from 'preact/hooks'
import { ApiError, api } from '../api.ts'
import { SchemaFields, initial, type Schema } from '../form.ts'
import { ended } from '../merge.ts'
import type { ApprovalAnswerRequest, ErrorBody, PendingApproval, Snapshot } from '../types.ts'
import { Empty, Json, Section, time } from '../ui.ts'

/** What the page said about approvals it saw end, by id (kept while the page is open). */
const outcomes = new Map<string, string>()

function describe(id: string): string | undefined {
  const e = ended.get(id)
  if (!e) return outcomes.get(id)
  const by = e.by ?? 'someone'
  return e.answer ? `Answered ${e.answer} by ${by}.` : `Ended: ${e.why ?? 'given up'}.`
}

function Pending(props: { a: PendingApproval; onDone: (id: string, text: string) => void }) {
  const a = props.a
  const [busy, setBusy] = useState(false)
  const schema =
    a.kind === 'question' && a.mode !== 'url' ? (a.schema as Schema | undefined) : undefined
  const [content, setContent] = useState<unknown>(() => (schema ? (initial(schema) ?? {}) : {}))
  const [why, setWhy] = useState('')
  const answer = async (body: ApprovalAnswerRequest) => {
    setBusy(true)
    try {
      await api(`/api/approvals/${encodeURIComponent(a.id)}`, body)
      props.onDone(a.id, `You answered ${body.answer}.`)
    } catch (e) {
      const by =
        e instanceof ApiError && e.status === 409 ? (e.body as ErrorBody).answeredBy : undefined
      props.onDone(a.id, by ? `The ${by} answered first.` : (e as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const buttons =
    a.kind === 'approval'
      ? (['allow-once', 'allow-session', 'deny'] as const)
      : (['accept', 'decline', 'cancel'] as const)
  return h(
    'li',
    { class: `pending ${a.kind}`, 'data-approval': a.id },
    h(
      'div',
      { class: 'head' },
      h('time', null, time(a.at)),
      h('b', null, a.kind === 'approval' ? ` ${a.tool ?? 'a tool'}` : ` ${a.from ?? 'a question'}`),
      a.caller ? h('span', { class: 'muted' }, ` by ${a.caller}`) : null,
      a.scope ? h('span', { class: 'muted' }, ` in ${a.scope}`) : null,
      a.racing
        ? h('span', { class: 'racing' }, ` · also asked: ${a.racing} (the first answer wins)`)
        : null,
    ),
    a.reason || a.message ? h('p', null, a.reason ?? a.message) : null,
    a.args !== undefined ? h(Json, { value: a.args }) : null,
    schema ? h(SchemaFields, { schema, value: content, onChange: setContent }) : null,
    a.url ? h('a', { href: a.url, target: '_blank', rel: 'noreferrer' }, a.url) : null,
    h(
      'div',
      { class: 'actions' },
      a.kind === 'approval'
        ? h('input', {
            type: 'text',
            class: 'reason',
            'data-reason': a.id,
            placeholder: 'why not (sent with deny)',
            maxLength: 1000,
            value: why,
            disabled: busy,
            onInput: (e: Event) => setWhy((e.currentTarget as HTMLInputElement).value),
          })
        : null,
      buttons.map((b) =>
        h(
          'button',
          {
            key: b,
            disabled: busy,
            class: b === 'deny' || b === 'decline' ? 'danger' : '',
            'data-answer': b,
            onClick: () =>
              answer(
                b === 'accept' && schema
                  ? { answer: b, content: content as ApprovalAnswerRequest['content'] }
                  : b === 'deny' && why.trim()
                    ? { answer: b, reason: why.trim() }
                    : { answer: b },
              ),
          },
          b,
        ),
      ),
    ),
  )
}

export function Approvals(props: { snap: Snapshot }) {
  const [, setSeen] = useState(0)
  const pending = props.snap.approvals
  const done = (id: string, text: string) => {
    outcomes.set(id, text)
    setSeen((n) => n + 1)
  }
  const past = [...new Set([...outcomes.keys(), ...ended.keys()])].filter(
    (id) => !pending.some((a) => a.id === id),
  )
  return h(
    Section,
    { title: 'Approvals', id: 'approvals' },
    pending.length
      ? h(
          'ul',
          { class: 'approvals' },
          pending.map((a) => h(Pending, { a, key: a.id, onDone: done })),
        )
      : h(Empty, null, 'Nothing waits for an answer.'),
    past.length
      ? h(
          'ul',
          { class: 'answered' },
          past
            .reverse()
            .map((id) =>
              h(
                'li',
                { key: id, 'data-approval': id },
                h('code', null, id.slice(0, 8)),
                ' ',
                outcomes.get(id) ?? describe(id),
              ),
            ),
        )
      : null,
  )
}
