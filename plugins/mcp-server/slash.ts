/**
 * Claude Code plugin commands as MCP prompts: one per command (`plugin:command`), with one
 * argument, `arguments`, put into the command's text as the chat's `/plugin:command …` does.
 */
import {
  ProtocolError,
  ProtocolErrorCode,
  type GetPromptResult,
  type Prompt,
} from '@modelcontextprotocol/server'
import { expandCommand, type ClaudePluginsApi } from '../claude-plugins/api.ts'

export function listCommandPrompts(plugins: ClaudePluginsApi | undefined): Prompt[] {
  return (plugins?.commands() ?? []).map((c) => ({
    name: c.name,
    description: c.description,
    arguments: [
      {
        name: 'arguments',
        description: c.argumentHint
          ? `the command's arguments: ${c.argumentHint}`
          : "the command's arguments",
        required: false,
      },
    ],
  }))
}

export const isCommandPrompt = (plugins: ClaudePluginsApi | undefined, name: string) =>
  !!plugins?.commands().some((c) => c.name === name)

export function getCommandPrompt(
  plugins: ClaudePluginsApi | undefined,
  name: string,
  args: Record<string, string> = {},
): GetPromptResult {
  const command = plugins?.commands().find((c) => c.name === name)
  if (!command)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `no command named "${name}"; prompts/list shows the names`,
    )
  return {
    description: command.description,
    messages: [
      {
        role: 'user',
        content: { type: 'text', text: expandCommand(command, args.arguments ?? '') },
      },
    ],
  }
}
