/**
 * turn-guard: tells a reload when an agent's turn is in flight, and which changes would alter
 * the model's cached prompt (guard.ts), so that `holdOnCacheImpact` holds them until the turn
 * ends and `refuseIfBusy` refuses. It taps the agent loop's public hooks from a child that waits
 * for `agent`; its config gives the options a reload that names none gets.
 */
import type {} from '../agent-loop/api.ts'
import { definePlugin, type DoctorCheck, type InjectedContext, type ReloadNotice } from 'yoke'
import type {} from './api.ts'
import { turnGuardConfig as config } from './config.ts'
import './errors.ts'
import { TurnGuard, type TurnState } from './guard.ts'

export default definePlugin({
  name: 'turn-guard',
  config,
  apply(ctx, cfg) {
    const state = ctx.keep('state', (): TurnState => ({ runs: new Map() }))
    const guard = new TurnGuard(`instance "${ctx.key}"`, cfg, state)
    ctx.effect('turn-guard', () => guard.close())
    ctx.reloadGate(guard)
    ctx.tap(ctx.hooks.reload, 'turn-guard', (event: ReloadNotice) => guard.noticed(event))
    ctx.control('turn-guard/status', () => guard.status())
    ctx.control('turn-guard/doctor', () => doctorChecks(guard))
    ctx.plugin(
      {
        name: 'turn-guard-agent',
        inject: ['agent'],
        apply: (child: InjectedContext<['agent']>) => tapAgent(child, guard),
      },
      {},
      { key: 'agent-turns' },
    )
  },
})

/** A run is in flight from runStart (or its first model request) to runEnd (or each turn's end). */
function tapAgent(ctx: InjectedContext<['agent']>, guard: TurnGuard) {
  const { hooks } = ctx.agent
  const what = (info: { runId: string; scope: string }) => `run ${info.runId} (${info.scope})`
  if (hooks.runStart)
    ctx.tap(hooks.runStart, 'turn-guard', (context, info) => {
      guard.begin(info.runId, what(info))
      return context
    })
  ctx.tap(hooks.beforeModel, 'turn-guard', (request, info) => {
    guard.begin(info.runId, what(info))
    return request
  })
  if (hooks.runEnd) ctx.tap(hooks.runEnd, 'turn-guard', (_result, info) => guard.end(info.runId))
  else ctx.tap(hooks.turnEnd, 'turn-guard', (info) => guard.end(info.runId))
  ctx.effect('turn-guard runs', () => guard.close())
}

function doctorChecks(guard: TurnGuard): DoctorCheck[] {
  const { held, inFlight } = guard.status()
  if (!held) return [{ level: 'ok', message: `no reload held (${inFlight.length} runs in flight)` }]
  const impact = held.cacheImpact.map((i) => `${i.instance} (${i.change}: ${i.why})`).join('; ')
  return [
    {
      level: 'warn',
      message: `a reload is held since ${held.since} until ${inFlight.join(', ') || 'the turns in flight'} end: it would alter the model's cached prompt: ${impact}`,
      hint: "It applies when the turn ends; a reload without holdOnCacheImpact (createYoke().reload(), the dev's reload control) applies it at once.",
    },
  ]
}
