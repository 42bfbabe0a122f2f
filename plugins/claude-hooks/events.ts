/**
 * @module claude-hooks/events
 * Claude Code's 34 hook events (SDK 0.3.333's HOOK_EVENTS): those yoke fires, with the moment in
 * yoke each runs at, and those with no counterpart, each with why (one warning at load, and the
 * README's table). Which handler types each event takes, and which events read a tool call (`if`).
 */

/** The events yoke fires, and where (README "Events"). */
export const FIRED_EVENTS = [
  'PreToolUse',
  'PostToolUse',
  'PostToolUseFailure',
  'PostToolBatch',
  'PermissionRequest',
  'Notification',
  'Elicitation',
  'UserPromptSubmit',
  'Stop',
  'SubagentStart',
  'SubagentStop',
  'StopFailure',
  'SessionStart',
  'SessionEnd',
  'ConfigChange',
  'FileChanged',
] as const
export type FiredEvent = (typeof FIRED_EVENTS)[number]

/** Claude Code's other events: accepted, reported once, with why yoke has no such moment. */
export const WAITING_EVENTS: Record<string, string> = {
  Setup: 'yoke has no one-time setup run (claude --init-only / --maintenance)',
  UserPromptExpansion: 'yoke has no user-typed slash commands that expand into a prompt',
  PermissionDenied:
    "yoke has no auto-mode classifier; a denial by policy or a hook is PreToolUse's and the approval service's",
  MessageDisplay:
    'yoke has no display layer a hook could rewrite (the CLI and the console print the run’s text events)',
  TaskCreated:
    "yoke has no TaskCreate task list (its background tasks are tool calls: PreToolUse's)",
  TaskCompleted: 'yoke has no TaskCreate task list',
  TeammateIdle: 'yoke has no agent teams',
  InstructionsLoaded: 'yoke loads no CLAUDE.md or .claude/rules files into the context',
  CwdChanged: "a yoke run's working directory is the project's and does not change",
  DirectoryAdded: 'yoke has no /add-dir',
  WorktreeCreate: 'yoke creates no git worktrees',
  WorktreeRemove: 'yoke creates no git worktrees',
  PreCompact: 'the agent loop does not compact its context',
  PostCompact: 'the agent loop does not compact its context',
  ElicitationResult:
    "the approval service has no moment after a person's answer, before it goes back to the server",
  PreSkillShellCommand: "yoke's skills run no shell commands embedded in SKILL.md",
  PreModelSwitch: "a yoke run's model is fixed: there is no model switch (/model) within a run",
  PostModelSwitch: "a yoke run's model is fixed: there is no model switch (/model) within a run",
}

/** Tool events: the only ones whose handlers may carry `if` (elsewhere such a handler never runs). */
export const TOOL_EVENTS: ReadonlySet<string> = new Set([
  'PreToolUse',
  'PostToolUse',
  'PostToolUseFailure',
  'PermissionRequest',
  'PermissionDenied',
])

/** Events that take `prompt` and `agent` handlers (Claude Code's list); the rest take command, http, mcp_tool. */
const MODEL_EVENTS = new Set([
  'PermissionDenied',
  'PermissionRequest',
  'PostToolBatch',
  'PostToolUse',
  'PostToolUseFailure',
  'PreToolUse',
  'Stop',
  'SubagentStop',
  'TaskCompleted',
  'TaskCreated',
  'TeammateIdle',
  'UserPromptExpansion',
  'UserPromptSubmit',
])

/** Whether `event` takes handlers of `type`, as Claude Code documents; else why not. */
export function takesType(event: string, type: string): true | string {
  if (event === 'SessionStart' || event === 'Setup')
    return type === 'command' || type === 'mcp_tool'
      ? true
      : `${event} takes command and mcp_tool handlers only`
  if ((type === 'prompt' || type === 'agent') && !MODEL_EVENTS.has(event))
    return `${event} takes command, http and mcp_tool handlers (prompt and agent are for decision events)`
  return true
}

/** Default timeouts in seconds by handler type, then the events that lower them (Claude Code's). */
export function defaultTimeout(event: string, type: string): number {
  if (type === 'prompt') return 30
  if (type === 'agent') return 60
  if (event === 'UserPromptSubmit') return 30
  if (event === 'SessionEnd') return 1.5
  return 600
}
