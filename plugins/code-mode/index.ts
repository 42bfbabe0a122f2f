/**
 * code-mode: `run_code` runs a model-written program in a sandbox (QuickJS by default, behind the
 * `Executor` interface) whose only way out is `tools.…`: each call an ordinary pipeline call in the
 * caller's scope. In the agent loop it offers run_code per `offer` (direct tools, code mode, or
 * both) by tapping `beforeModel`; the gateway serves it as a tool of each view that admits it, and
 * `yoke tools call run_code` runs one from the shell.
 */
import { z } from 'zod'
import { definePlugin, type InjectedContext } from 'yoke'
import { CodeMode } from './code-mode.ts'
import type {} from '../agent-loop/api.ts'
import type { ModelRequest } from '../models/api.ts'
import './errors.ts'

export type * from './api.ts'

const positive = (n: number) => z.number().int().positive().default(n)

export default definePlugin({
  name: 'code-mode',
  inject: ['runtime'],
  provides: ['codeMode'],
  config: z
    .object({
      /** in the agent loop: `direct` tools only, `code` (run_code and tool_search), or `both` */
      offer: z.enum(['direct', 'code', 'both']).default('both'),
      limits: z
        .object({
          memoryMb: positive(64),
          stackKb: positive(256),
          cpuMs: positive(5_000),
          outputBytes: positive(64 * 1024),
          maxCalls: positive(100),
        })
        .strict()
        .prefault({}),
      /** run_code's own timeout, waits for tools and approvals included (default: the runtime's) */
      timeoutMs: z.number().int().positive().optional(),
    })
    .strict(),
  apply(ctx, config) {
    const mode = new CodeMode(ctx.runtime, config, () => ctx.get('codeExecutor'))
    const { hooks } = ctx.runtime
    ctx.tap(hooks.visible, 'code-mode', mode.listed, { stage: Number.MAX_SAFE_INTEGER })
    ctx.tap(hooks.change, 'code-mode', () => mode.changed())
    ctx.tap(hooks.visibility, 'code-mode', () => mode.changed())
    ctx.provide('codeMode', mode)
    ctx.runtime.register(mode.tool())
    // a composition that keeps running has a sandbox worker ready before the first program
    if (ctx.runMode === 'serve') ctx.setTimeout(() => void mode.warm(), 0)
    ctx.effect('sandbox workers', () => mode.close())
    ctx.plugin(offerInLoop(mode), {}, { key: 'agent-offer' })
  },
})

/** A child that taps the agent loop's `beforeModel` while there is one (and again when it is replaced). */
function offerInLoop(mode: CodeMode) {
  return {
    name: 'code-mode-offer',
    inject: ['agent'] as const,
    apply(child: InjectedContext<['agent']>) {
      child.tap(child.agent.hooks.beforeModel, 'code-mode', (request: ModelRequest) =>
        mode.offered(request),
      )
    },
  }
}
