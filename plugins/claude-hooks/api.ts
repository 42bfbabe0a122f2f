/**
 * The public face of claude-hooks: the plugin (claude-plugins runs one child instance per Claude
 * Code plugin's hooks/hooks.json), its config's shape, the events yoke fires, and the matcher as
 * Claude Code reads it.
 */
export { default as claudeHooks, type ClaudeHooksConfig } from './index.ts'
export { compileMatcher, FIRED_EVENTS, type FiredEvent } from './format.ts'
