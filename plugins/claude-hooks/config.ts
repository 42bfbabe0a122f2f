/**
 * @module claude-hooks/config
 * An instance's config schema (its own module: api.ts and index.ts both read it, neither through the other).
 */
import { z } from 'zod'

/** An instance's config: inline hooks and/or hooks files, and how its handlers run. */
export const claudeHooksConfig = z
  .object({
    /** the object under "hooks" in a hooks.json or settings.json */
    hooks: z.record(z.string(), z.unknown()).optional(),
    /** hooks.json or settings.json files (relative: to the project); each is read, watched, and its "hooks" used */
    files: z.array(z.string().min(1)).default([]),
    /** CLAUDE_PLUGIN_ROOT for the handlers (a Claude Code plugin's directory) */
    pluginRoot: z.string().min(1).optional(),
    /** a label for logs (which plugin or settings file the hooks came from) */
    source: z.string().min(1).optional(),
    /** variables passed on to handlers beyond the essentials (Claude Code passes its whole environment) */
    env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/)).default([]),
    /** Claude Code tool names → the yoke tools a matcher naming them also matches */
    toolNames: z
      .record(z.string(), z.array(z.string().min(1)))
      .default({ Task: ['spawn'], Agent: ['spawn'] }),
  })
  .strict()
export type ClaudeHooksConfig = z.input<typeof claudeHooksConfig>
