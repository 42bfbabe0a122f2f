/**
 * claude-hooks: Claude Code's hooks (a hooks.json, a settings.json's "hooks", or the same object
 * inline) run on yoke's hooks. Tool events tap the runtime (PreToolUse: preExecute; PostToolUse:
 * postExecute), so they apply to every tool source; the session events tap the agent loop's hooks
 * from a child instance that waits for `agent` (SessionStart: runStart, UserPromptSubmit:
 * userPrompt, Stop and SubagentStop: stop, SessionEnd: runEnd). Files are watched: an edit takes
 * effect at the next event, and a broken edit is reported at its line and keeps that file's last
 * good hooks. The format is Claude Code's by source (never guessed from what a program answers).
 */
import type {} from '../models/api.ts'
import {
  definePlugin,
  type InjectedContext,
  type PostDecision,
  type PreDecision,
  type ToolCall,
  type ToolResult,
} from 'yoke'
import { tapAgent } from './agent.ts'
import { approvalBridge } from './approvals.ts'
import { claudeHooksConfig as config } from './config.ts'
import { ClaudeHooks } from './claude-hooks.ts'

export type { Hooks, Replies } from './claude-hooks.ts'

export default definePlugin({
  name: 'claude-hooks',
  inject: ['runtime', 'project'],
  config,
  runsProjectCode: true, // its hook commands: from a project's config, after `yoke trust`
  apply(ctx, cfg) {
    const hooks = new ClaudeHooks(cfg, {
      logger: ctx.logger,
      projectDir: ctx.project.dir,
      watch: (files, handler) => ctx.watch(files, handler),
    }).start()
    ctx.effect('claude-hooks FileChanged watch', () => hooks.close())
    const { hooks: runtime } = ctx.runtime
    ctx.tap(
      runtime.preExecute,
      'claude-hooks PreToolUse',
      hooks.nonBlocking('PreToolUse', (d: PreDecision, call: ToolCall) =>
        hooks.preExecute(d, call),
      ),
    )
    ctx.tap(
      runtime.postExecute,
      'claude-hooks PostToolUse',
      hooks.nonBlocking('PostToolUse', (d: PostDecision, call: ToolCall, result: ToolResult) =>
        hooks.postExecute(d, call, result),
      ),
    )
    ctx.tap(runtime.result, 'claude-hooks PostToolUseFailure', async (call, result) =>
      hooks.nonBlocking(
        'PostToolUseFailure',
        async () => void (await hooks.ended(call, result)),
      )(undefined),
    )
    hooks.services.runtime = ctx.runtime
    ctx.effect('claude-hooks runtime', () => void delete hooks.services.runtime)
    // the session events and agent handlers: a child instance that waits for the agent loop
    ctx.plugin(
      {
        name: 'claude-hooks-agent',
        inject: ['agent'],
        apply: (child: InjectedContext<['agent']>) => {
          hooks.services.agent = child.agent
          child.effect('agent handlers', () => void delete hooks.services.agent)
          tapAgent(child, hooks)
        },
      },
      {},
      { key: 'agent-events' },
    )
    // prompt handlers ask the main model, when one is composed (read at each call: it may be reloaded)
    hooks.services.model = () => ctx.get('model')
    // PermissionRequest, Notification and Elicitation: a racing approval bridge
    ctx.plugin(
      {
        name: 'claude-hooks-approval',
        inject: ['approval'],
        apply: (child: InjectedContext<['approval']>) =>
          void child.approval.register(approvalBridge(hooks)),
      },
      {},
      { key: 'approval' },
    )
  },
})
