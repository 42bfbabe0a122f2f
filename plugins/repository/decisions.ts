/**
 * @module repository/decisions
 * What a run of a version decides before and after it starts, as pure functions over a plugin's
 * record: whether it may activate (approved in this session, not stopped while its approval
 * waited), and what activating it is (a first run, an update, a rollback to an older version, a
 * restart of the same one). The Repository applies them; unit tests call them on plain records.
 */
import type { DynamicState } from './api.ts'

/** What the approval before a run decided: why not (refused), and the stops it had seen. */
export interface RunDecision {
  refusal?: string
  since: number
}

/** A stop as asked (the version it targets, if one), for the runs that waited meanwhile. */
export interface StopAsked {
  seq: number
  version?: number
  by: string
  why?: string
}

/** The part of a plugin's record the decisions read. */
export interface RunState {
  name: string
  /** `<scope>\0<version>`: approved to run from that scope */
  approved: ReadonlySet<string>
  stops: readonly StopAsked[]
  stopSeq: number
  state: DynamicState
  current?: number
}

/**
 * Why version `n` may not activate from `scope`, or undefined when it may: it must have been
 * approved there (`rejected`, with the person's refusal when there was one), and no stop of this
 * plugin (of `n`, or of whatever runs) may have been asked since the approval began (`failed`: a
 * stop is not held back by a person's answer).
 */
export function runRefusal(
  record: RunState,
  n: number,
  scope: string,
  decided?: RunDecision,
): { outcome: 'rejected' | 'failed'; reason: string } | undefined {
  if (!record.approved.has(`${scope}\0${n}`))
    return {
      outcome: 'rejected',
      reason:
        decided?.refusal ??
        'it was not approved in this session before the run (run it again to be asked)',
    }
  const stop = record.stops.find(
    (s) => s.seq > (decided?.since ?? record.stopSeq) && (s.version ?? n) === n,
  )
  if (stop)
    return {
      outcome: 'failed',
      reason: `${record.name} was stopped by ${stop.by}${stop.why ? ` (${stop.why})` : ''} while this run waited for its approval`,
    }
  return undefined
}

/** What activating version `n` is, given what runs now. */
export interface Activation {
  /** `run` when nothing ran, `update` when it replaces a running version */
  action: 'run' | 'update'
  /** the version it replaces (running until `n` is active) */
  from?: number
  /** `n` is older than the version it replaces */
  rollback: boolean
  /** `n` is the version already running: it starts again */
  restart: boolean
}

export function activation(record: Pick<RunState, 'state' | 'current'>, n: number): Activation {
  const from = record.state === 'running' ? record.current : undefined
  return {
    action: from === undefined ? 'run' : 'update',
    ...(from !== undefined && { from }),
    rollback: from !== undefined && n < from,
    restart: from === n,
  }
}

/** How a run that started reads for the model: running, restarted, or which version it replaced (an older one: a rollback). */
export function activatedText(from: number | undefined, n: number): string {
  if (from === undefined) return 'running'
  if (from === n) return 'restarted'
  return `running (was version ${from})`
}

/** What a run that did not start leaves: the current version running, or the plugin as it was. */
export function keptText(record: Pick<RunState, 'name' | 'state' | 'current'>): string {
  return record.state === 'running'
    ? `version ${record.current} keeps running`
    : `${record.name} stays ${record.state}`
}
