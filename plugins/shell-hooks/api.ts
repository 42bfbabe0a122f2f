/**
 * The public face of shell-hooks: the events a hook may name (a package manifest's `hooks` names
 * the same ones, so exec-tools reads them from here), and the config of an instance and of one
 * hook. The plugin itself is composed by name (`ctx.plugin('shell-hooks', config, { key })`).
 */
import { z } from 'zod'
import { envNameProblem } from '../process/api.ts'

/** The events a hook may name (octos's names): shell-hooks' config and package manifests share them. */
export const HOOK_EVENT_NAMES = [
  'before_tool_call',
  'after_tool_call',
  'before_llm_call',
  'after_llm_call',
  'on_resume',
  'on_turn_end',
  'before_spawn_verify',
  'on_spawn_verify',
  'on_spawn_complete',
  'on_spawn_failure',
  'user_prompt_submit',
] as const
export type HookEvent = (typeof HOOK_EVENT_NAMES)[number]

/** One hook: an argv run on an event, with the payload on stdin. */
export const hookConfig = z
  .object({
    event: z.enum(HOOK_EVENT_NAMES),
    /** argv: the program and its arguments; `./` and `../` resolve from baseDir */
    command: z.array(z.string().min(1)).min(1),
    timeout_ms: z.number().int().positive().max(600_000).default(5000),
    /** exact tool names (tool events only); empty: every tool */
    tool_filter: z.array(z.string().min(1)).default([]),
    /** variables passed on beyond the essentials, as a package tool's `env` (the same rules) */
    env: z
      .array(z.string())
      .default([])
      .superRefine((names, issues) =>
        names.forEach((name, i) => {
          const problem = envNameProblem(name)
          if (problem)
            issues.addIssue({
              code: 'custom',
              message: `${JSON.stringify(name)}: ${problem}`,
              path: [i],
            })
        }),
      ),
  })
  .strict()
/** One hook as a config writes it. */
export type ShellHook = z.input<typeof hookConfig>

/** A shell-hooks instance's config. */
export const shellHooksConfig = z
  .object({
    hooks: z.array(hookConfig).default([]),
    /** where relative commands resolve (a package directory); default the project directory */
    baseDir: z.string().optional(),
  })
  .strict()
export type ShellHooksConfig = z.input<typeof shellHooksConfig>
