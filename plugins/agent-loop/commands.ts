/**
 * @module agent-loop/commands
 * The agent's commands: `yoke run "TASK"`, `yoke chat`, and `yoke runs list|show` for the
 * transcripts runs leave behind.
 */
import { agentChat, agentRun } from './cli/agent.ts'
import { runsList, runsShow } from './cli/runs.ts'

export const commands = [agentRun, agentChat, runsList, runsShow]
