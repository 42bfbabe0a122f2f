/**
 * policy: permission rules for every tool call, in the manner of Claude Code's permission rules.
 * `deny`, `ask` and `allow` hold rules; a rule is a tool-name glob (`mcp__github__*`) or an object
 * with a `tool` glob and conditions on `source` (glob) and `risk`. Rules are evaluated deny → ask
 * → allow, the first match wins; a tool no rule matches asks when its risk is in `askRisks`
 * (high and critical by default) and is allowed otherwise. A bare deny (a plain glob) also hides
 * the tool from listings, so a model never sees it. `claudeSettings` adds the permission rules of Claude
 * Code settings files, read live (see claude.ts for what carries over).
 */
import { join } from 'node:path'
import { z } from 'zod'
import { definePlugin, GLOBAL, notify } from 'yoke'
import { Policy } from './policy.ts'
import { risk, rule } from './rules.ts'
import './errors.ts'

export default definePlugin({
  name: 'policy',
  inject: ['runtime'],
  config: z
    .object({
      allow: z.array(rule).default([]),
      ask: z.array(rule).default([]),
      deny: z.array(rule).default([]),
      /** risks that ask unless an allow rule matches */
      askRisks: z.array(risk).default(['high', 'critical']),
      /** Claude Code settings files whose permission rules apply too (relative: to the project), watched */
      claudeSettings: z.array(z.string().min(1)).default([]),
    })
    .strict(),
  // a cloned project may tighten the policy (ask, deny) but not loosen it before `yoke trust`
  ignoredUntilTrusted: () => ['allow', 'askRisks', 'claudeSettings'],
  apply(ctx, config) {
    const project = ctx.get('project')
    const policy = new Policy(config, {
      projectDir: project?.dir ?? process.cwd(),
      trusted: () => project?.trusted?.() ?? true,
      logger: ctx.logger,
    })
    if (policy.files.length) {
      policy.read()
      // and the trust store: `yoke trust` applies the project's allow rules, --revoke drops them
      const store = project && policy.files.some((f) => policy.inProject(f))
      const watched = [...policy.files, ...(store ? [join(project.home, 'trust.json')] : [])]
      // a re-read may hide or show tools with no tool changing: listings made from it look again
      ctx.watch(watched, () => {
        policy.read()
        notify(ctx.runtime.hooks.visibility, [GLOBAL], (message) => ctx.logger.warn(message))
      })
    }
    // first of the pre-execute taps, so other plugins see (and may tighten) the policy's decision
    ctx.tap(
      ctx.runtime.hooks.preExecute,
      'policy',
      (decision, call) => (call.tool ? policy.decide(call.tool) : decision),
      { stage: -100 },
    )
    ctx.tap(ctx.runtime.hooks.visible, 'policy', (tools) => policy.visible(tools))
  },
})
