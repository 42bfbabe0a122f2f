/**
 * The public face of claude-hooks: its config's shape (claude-plugins composes one child instance
 * by name per Claude Code plugin's hooks/hooks.json), the events yoke fires, and the matcher as
 * Claude Code reads it.
 */
export { compileMatcher, FIRED_EVENTS, type FiredEvent } from './format.ts'
export { WAITING_EVENTS } from './events.ts'

export { claudeHooksConfig, type ClaudeHooksConfig } from './config.ts'
