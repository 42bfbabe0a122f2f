/**
 * @module cli/command
 * A CLI command is a contribution: the kernel's own commands and every plugin's are the same
 * `defineCommand` objects. A plugin declares its commands statically, in its commands module, so
 * `yoke --help` lists them without composing anything; `run` gets the parsed flags and a
 * CommandContext that composes, asks the running `yoke dev`, and edits the project config.
 */
import type { ParseArgsConfig } from 'node:util'
import type { Document } from 'yaml'
import type { ComposeOptions, Composition } from '../config/composer.ts'
import type { ControlAnswer, ControlName, ControlRequest } from '../kernel/types.ts'

/** One flag: node:util parseArgs' option, with what `--help` says about it. */
export type Flag = NonNullable<ParseArgsConfig['options']>[string] & {
  /** one line for the command's --help */
  description?: string
  /** the value's placeholder in --help (default: VALUE) */
  value?: string
}

export type Flags = Record<string, Flag>

export type ParsedArgs = {
  cwd?: string
  preset?: string
  config?: string
  patch?: string[]
  set?: string[]
  json?: boolean
  help?: boolean
  [flag: string]: string | boolean | string[] | boolean[] | undefined
}

/** An instance as the project's layers configure it (merged, not composed). */
export interface ConfiguredInstance {
  key: string
  use: string
  enabled: boolean
  config: unknown
  /** the module `use` resolves to, when it resolves */
  file?: string
  /** a local module of the project's own config, which waits until the project is trusted */
  untrusted?: boolean
}

/** A conversation with the running dev while it works on one request. */
export interface LiveOptions {
  /** answers the dev's questions (an approval asked while the request runs) */
  /** `withdrawn` aborts when the dev takes the question back (someone else answered first) */
  onAsk?(question: unknown, withdrawn: AbortSignal): Promise<unknown>
  /** hears the dev's notes on the way (progress) */
  onTell?(note: unknown): void
  /** ends the request early: the dev's handler sees its signal abort */
  signal?: AbortSignal
  /** how long the answer may take once the dev accepted (default 40 s; Infinity for work bounded by its own timeouts) */
  answerMs?: number
}

export interface CommandContext {
  /** the directory the command runs in (`--cwd`, else the process's) */
  readonly cwd: string
  /** `--json`: print one JSON object on stdout */
  readonly json: boolean
  /** what the common flags ask to compose */
  readonly options: ComposeOptions
  /**
   * Composes the config once (run mode `once`), runs `work` with it and closes it. A config that
   * does not compose is printed (with --json, as JSON) and ends the command with exit code 2.
   */
  compose(
    work: (composition: Composition) => Promise<number>,
    /**
     * strict: an instance that failed to start, or one that waits for `yoke trust`, makes the
     * command exit 1 (its result is partial). Whatever waits is said on stderr either way.
     */
    options?: { quiet?: boolean; sets?: string[]; strict?: boolean },
  ): Promise<number>
  /**
   * Asks the `yoke dev` running in this project for the control `name`; undefined when none
   * answers, or when a flag (--preset, --patch, --set) asks for other layers than it runs.
   */
  live<K extends ControlName>(
    name: K,
    request?: ControlRequest<K>,
    options?: LiveOptions,
  ): Promise<ControlAnswer<K> | undefined>
  /**
   * The running dev's answer to the control `name` (`<plugin>/<verb>`, typed by `Controls`), else
   * the answer of a composition made for it; a number is the exit code of a config that failed.
   */
  control<K extends ControlName>(
    name: K,
    request?: ControlRequest<K>,
    options?: { fresh?: boolean },
  ): Promise<{ answer: ControlAnswer<K>; source: 'live from yoke dev' | 'composed now' } | number>
  /** The project's directory: where the project config was found (else `cwd`). */
  projectDir(): Promise<string>
  /**
   * The instances the project's layers configure, merged, with the module each `use` names. The
   * layers are read, not checked: what composing would refuse may be listed.
   */
  instances(): Promise<ConfiguredInstance[]>
  /**
   * Edits the project config (created as yoke.config.yaml when there is none) through yaml's
   * document model, so comments and layout stay, and writes it atomically, under a lock, keeping
   * its mode and owner, through a symlink; a change made meanwhile fails the edit (EDIT_CONFLICT).
   * `edit` may run more than once (once on a plain copy, to check the result reads back the same):
   * it should only change the document. It is told the file and that file's project directory
   * (where a stdio server of the config runs).
   */
  editConfig<T>(
    edit: (doc: Document, file: string, projectDir: string) => T,
  ): Promise<{ file: string } & T>
}

export interface Command {
  /** one or two words: `tools list`, `serve` */
  name: string
  /** one line for `yoke --help` */
  summary: string
  usage: string
  /** node:util parseArgs options, on top of the common flags */
  flags?: Flags
  /** how many positional arguments the command takes (default none) */
  positionals?: number
  /** command lines shown under "Examples" in the command's --help */
  examples?: string[]
  run(args: ParsedArgs, positionals: string[], cli: CommandContext): Promise<number>
}

/**
 * Declares a CLI command; a plugin exports a list of them from its commands module.
 * @example
 * export const commands = [
 *   defineCommand({
 *     name: 'notes count',
 *     summary: 'how many notes the running dev holds',
 *     usage: 'yoke notes count [--json]',
 *     async run(args, _, cli) {
 *       const reply = await cli.control('notes/count')
 *       if (typeof reply === 'number') return reply
 *       console.log(reply.answer)
 *       return 0
 *     },
 *   }),
 * ]
 */
export function defineCommand(command: Command): Command {
  return command
}

export type { SummarySection } from '../kernel/types.ts'
