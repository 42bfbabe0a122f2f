/**
 * @module yoke/cli
 * What a plugin's CLI commands use: `defineCommand`, the context their `run` gets, and the
 * CLI's output conventions (colour only on a terminal, errors as code / where / hint, JSON lines,
 * progress on stderr, approvals asked on the terminal).
 */
export { defineCommand } from './command.ts'
export type {
  Command,
  CommandContext,
  ConfiguredInstance,
  Flag,
  Flags,
  LiveOptions,
  ParsedArgs,
  SummarySection,
} from './command.ts'
export { color, displayPath, errorJson, formatError, on, printJson, progress } from './output.ts'
export { LineReader, promptBridge } from './approval-prompt.ts'
export { stopSignal, type StopSignal } from './signals.ts'
// the errors API again, so that a commands module can stay light (importing 'yoke' loads the
// whole runtime): the same class and catalogue as 'yoke' exports
export { defineErrors, YokeError } from '../errors.ts'
export type { ErrorCode } from '../errors.ts'
