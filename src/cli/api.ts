/**
 * @module yoke/cli
 * What a plugin's CLI commands use: `defineCommand`, the context their `run` gets, and the
 * CLI's output conventions (colour only on a terminal, errors as code / where / hint, JSON lines,
 * progress on stderr, approvals asked on the terminal).
 */
import type { keepingTrust as KeepingTrust, offerTrust as OfferTrust } from './trust.ts'
import type { waitingLines as WaitingLines } from './waiting.ts'
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
// project trust (src/cli/trust.ts loads the config readers): imported when one is called
export const offerTrust = async (...args: Parameters<typeof OfferTrust>) =>
  (await import('./trust.ts')).offerTrust(...args)
export const keepingTrust = async <T>(...args: Parameters<typeof KeepingTrust<T>>) =>
  (await import('./trust.ts')).keepingTrust(...args)
/**
 * What waits in a composition, as the lines one-shot commands print on stderr (cli/waiting): one
 * for everything that waits for `yoke trust`, one per other wait. A command that composes on its
 * own (not through `cli.compose`) prints them after `composition.start()`.
 */
export const waitingLines = async (...args: Parameters<typeof WaitingLines>) =>
  (await import('./waiting.ts')).waitingLines(...args)
// the errors API again, so that a commands module can stay light (importing 'yoke' loads the
// whole runtime): the same class and catalogue as 'yoke' exports
export { defineErrors, messageOf, YokeError } from '../errors.ts'
export type { ErrorCode } from '../errors.ts'
