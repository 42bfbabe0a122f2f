/**
 * The README's commands, and the CLI's own description of its commands, for the docs check in
 * test/readme.test.ts. Commands come from three places: the ```sh blocks, the inline code spans of
 * the prose that start with `yoke ` or `npx yoke ` (or `npm `), and the synopsis lines of the
 * "CLI" section's table (plus the MCP client snippet's `npx` args in a ```json block). What a
 * command may be is read from `yoke --help` and `yoke help COMMAND`: its name, owner, usage line
 * and flags, so the check follows the CLI without importing its modules.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { parseArgs } from 'node:util'
import { ROOT, YOKE } from './project.ts'

export type Source = 'sh' | 'prose' | 'cli table' | 'json'

export interface Snippet {
  source: Source
  /** the README line it starts on */
  line: number
  /** as written (a ```sh line with its `\` continuations joined) */
  text: string
  /** a CLI table line: among the kernel's commands, or below "from plugins" */
  half?: 'kernel' | 'plugins'
}

/** Every command-like snippet of the README, in order. */
export function readmeSnippets(markdown: string): Snippet[] {
  const lines = markdown.split('\n')
  const snippets: Snippet[] = []
  const prose: string[] = []
  let fence: { lang: string; start: number; body: string[] } | undefined
  for (const [i, line] of lines.entries()) {
    const opening = /^```(\w*)\s*$/.exec(line)
    if (!fence && opening) {
      fence = { lang: opening[1]!, start: i + 1, body: [] }
      prose.push('')
    } else if (fence && /^```\s*$/.test(line)) {
      snippets.push(...fencedSnippets(fence.lang, fence.start, fence.body))
      fence = undefined
      prose.push('')
    } else if (fence) {
      fence.body.push(line)
      prose.push('') // blank, so prose offsets keep their line numbers
    } else prose.push(line)
  }
  const text = prose.join('\n')
  for (const span of text.matchAll(/`([^`]+)`/g)) {
    const code = span[1]!.replace(/\s*\n\s*/g, ' ')
    if (/^(npx )?yoke \S|^npm (start|test|install|run)\b/.test(code) && !code.includes('\n'))
      snippets.push({ source: 'prose', line: lineOf(text, span.index), text: code })
  }
  return snippets.sort((a, b) => a.line - b.line)
}

function fencedSnippets(lang: string, start: number, body: string[]): Snippet[] {
  const found: Snippet[] = []
  if (lang === 'sh') {
    for (let i = 0; i < body.length; i++) {
      let text = body[i]!
      const line = start + i + 1
      while (text.endsWith('\\') && i + 1 < body.length) text = text.slice(0, -1) + body[++i]
      if (text.trim()) found.push({ source: 'sh', line, text: text.trim() })
    }
  } else if (lang === 'json') {
    // an MCP client's entry: the command line it spawns
    const servers = tryJson(body.join('\n'))?.mcpServers ?? {}
    for (const server of Object.values<any>(servers)) {
      if (typeof server?.command === 'string' && Array.isArray(server.args)) {
        const text = [server.command, ...server.args].map(quoted).join(' ')
        found.push({ source: 'json', line: start + 1, text })
      }
    }
  } else if (lang === '') {
    // the CLI section's table: `yoke dev [--events json]      run with hot reload; …`
    let half: 'kernel' | 'plugins' = 'kernel'
    for (const [i, text] of body.entries()) {
      if (/^from plugins\b/.test(text)) half = 'plugins'
      if (/^yoke \S/.test(text))
        found.push({ source: 'cli table', line: start + i + 1, text, half })
    }
  }
  return found
}

/** A word as sh reads it back. */
export const quoted = (word: string) =>
  /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`

function tryJson(text: string): any {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length

/**
 * A shell line as words, split into its simple commands (at `&&`, `||`, `|` and `;`), the way sh
 * reads quotes, backslashes and comments. `$(…)` and `<id>` stay literal text: nothing runs.
 */
export function shellCommands(line: string): string[][] {
  const commands: string[][] = [[]]
  let word: string | undefined
  const end = () => {
    if (word !== undefined) commands.at(-1)!.push(word)
    word = undefined
  }
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (c === "'") {
      const close = line.indexOf("'", i + 1)
      if (close < 0) throw new Error(`unbalanced ' in: ${line}`)
      word = (word ?? '') + line.slice(i + 1, close)
      i = close
    } else if (c === '"') {
      let text = ''
      for (i++; i < line.length && line[i] !== '"'; i++) {
        if (line[i] === '\\' && '"\\$`'.includes(line[i + 1] ?? '')) i++
        text += line[i]
      }
      if (i >= line.length) throw new Error(`unbalanced " in: ${line}`)
      word = (word ?? '') + text
    } else if (c === '\\') {
      word = (word ?? '') + (line[++i] ?? '')
    } else if (/\s/.test(c)) {
      end()
    } else if (c === '#' && word === undefined) {
      break // a comment
    } else if ('&|;'.includes(c)) {
      end()
      if (line[i + 1] === c) i++
      commands.push([])
    } else word = (word ?? '') + c
  }
  end()
  return commands.filter((c) => c.length)
}

/** One command of the CLI, as its --help describes it. */
export interface CommandSpec {
  name: string
  /** `yoke` for the kernel's own commands, else the contributing plugin */
  owner: string
  usage: string
  /** the command's own flags and the common ones: does each take a value */
  flags: Record<string, FlagSpec>
  /** how many positional arguments its usage line allows */
  positionals: { min: number; max: number }
}

export interface FlagSpec {
  takesValue: boolean
  short?: string
  multiple: boolean
}

export interface Cli {
  commands: CommandSpec[]
  /** the flags `yoke --help` lists for every command */
  common: Record<string, FlagSpec>
}

export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** `node bin/yoke.js ARGS` from the repository, with a bounded wait. */
export function yoke(args: string[], env: Record<string, string> = {}, cwd = ROOT): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [YOKE, ...args],
      { cwd, timeout: 30_000, env: { ...process.env, NO_COLOR: '1', ...env } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : null) : 0
        resolve({ code, stdout, stderr: err?.killed ? `timed out after 30 s\n${stderr}` : stderr })
      },
    )
  })
}

/** The CLI as `yoke --help` and `yoke help COMMAND` describe it. */
export async function readCli(env: Record<string, string> = {}): Promise<Cli> {
  const top = await yoke(['--help'], env)
  if (top.code !== 0) throw new Error(`yoke --help failed (${top.code}):\n${top.stderr}`)
  const listed = [...top.stdout.matchAll(/^ {2}([a-z][a-z0-9-]*(?: [a-z][a-z0-9-]*)?) {2,}(.*)$/gm)]
    .map(([, name, summary]) => ({ name: name!, owner: /\(([\w-]+)\)$/.exec(summary!)?.[1] }))
    .filter(({ name }) => !name.startsWith('-'))
  // eight at a time: all of them at once (some 50 yoke processes) starved each other on a loaded
  // 2-core machine until one missed the CLI's 5 s bound for loading a plugin's commands module
  const commands: CommandSpec[] = []
  let next = 0
  const worker = async () => {
    for (let i = next++; i < listed.length; i = next++) {
      const { name, owner } = listed[i]!
      const help = await yoke(['help', ...name.split(' ')], env)
      if (help.code !== 0) throw new Error(`yoke help ${name} failed:\n${help.stderr}`)
      commands[i] = commandSpec(name, owner ?? 'yoke', help.stdout)
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  return { commands, common: flagsOf(section(top.stdout, 'Common flags')) }
}

function section(help: string, title: string): string {
  return help.split(new RegExp(`^${title}:$`, 'm'))[1]?.split(/^\S/m)[0] ?? ''
}

/** `  -f, --follow  …`, `  --args JSON  …`, `  --header "NAME: VALUE"  …` */
function flagsOf(text: string): Record<string, FlagSpec> {
  const flags: Record<string, FlagSpec> = {}
  for (const m of text.matchAll(/^ {2}(?:-(\w), )?--([a-z][\w-]*)( (?:"[^"]*"|\S+))? {2,}(.*)$/gm))
    flags[m[2]!] = { takesValue: Boolean(m[3]), short: m[1], multiple: /repeatable/.test(m[4]!) }
  return flags
}

function commandSpec(name: string, owner: string, help: string): CommandSpec {
  const usage = /^Usage: (.*)$/m.exec(help)?.[1] ?? ''
  const flags = { ...flagsOf(section(help, 'Common flags')), ...flagsOf(section(help, 'Flags')) }
  return { name, owner, usage, flags, positionals: usagePositionals(usage, name) }
}

/**
 * What a usage line allows: `yoke tools call NAME [--args JSON]` one, `yoke init [DIR]` at most
 * one, `yoke mcp add NAME [-- COMMAND [ARGS…]]` one or more. Bracketed flag groups are skipped.
 */
export function usagePositionals(usage: string, name: string): { min: number; max: number } {
  const rest = usage.replace(`yoke ${name}`, '')
  let min = 0
  let max = 0
  for (const [part] of rest.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]…?|"[^"]*"|\S+/g)) {
    if (part.startsWith('[')) {
      const inner = part.replace(/^\[|\]…?$/g, '').trim()
      if (inner.startsWith('-- ') || /…|\.\.\./.test(inner)) max = Infinity
      else if (!inner.startsWith('-') && inner !== 'common flags') max += inner.split(/\s+/).length
    } else if (part === '--' || part.endsWith('…')) max = Infinity
    else if (!part.startsWith('-')) {
      min++
      max++
    }
  }
  return { min, max }
}

/**
 * The words of a README command after `npx yoke`, `yoke` or `node …/bin/yoke.js`, or undefined
 * for another program.
 */
export function yokeArgs(words: string[]): string[] | undefined {
  const rest = words[0] === 'npx' ? words.slice(1) : words
  if (rest[0] === 'yoke') return rest.slice(1)
  if (/(^|\/)node$/.test(rest[0] ?? '') && /(^|\/)bin\/yoke\.js$/.test(rest[1] ?? ''))
    return rest.slice(2)
  return undefined
}

/** The words before the first flag: the command's name (and its positionals, unless flags come first). */
export function commandWords(args: string[]): string[] {
  const flag = args.findIndex((a) => a.startsWith('-'))
  return flag < 0 ? args : args.slice(0, flag)
}

/** The command the leading words name (the longest name first, as the CLI matches). */
export function commandOf(cli: Cli, args: string[]): CommandSpec | undefined {
  const words = commandWords(args)
  return [...cli.commands]
    .sort((a, b) => b.name.length - a.name.length)
    .find((c) => c.name.split(' ').every((w, i) => words[i] === w))
}

/**
 * What is wrong with `yoke ARGS` as the README writes it: an unknown command, an unknown flag, a
 * flag without its value, more positional arguments than the usage line allows, or (`complete`:
 * a command to type, not a mention of one in prose) fewer.
 */
export function commandProblems(cli: Cli, args: string[], complete = true): string[] {
  if (!args.length || args[0]!.startsWith('-')) return flagProblems(args, topFlags(cli))
  const words = args[0] === 'help' ? args.slice(1) : args
  const command = commandOf(cli, words)
  if (!command)
    return [`"yoke ${words.filter((w) => !w.startsWith('-')).join(' ')}" names no command`]
  const rest = words.slice(command.name.split(' ').length)
  const problems = flagProblems(rest, command.flags)
  if (problems.length || args[0] === 'help') return problems
  const { positionals } = parseArgs({ args: rest, ...parseOptions(command.flags), strict: false })
  const { min, max } = command.positionals
  if ((complete && positionals.length < min) || positionals.length > max)
    return [
      `yoke ${command.name} takes ${min === max ? min : `${min} to ${max}`} positional argument(s) (${command.usage}), the README gives ${positionals.length}: ${positionals.join(' ')}`,
    ]
  return []
}

/** How many positional arguments `yoke ARGS` gives its command (undefined: no command, or bad flags). */
export function positionalCount(cli: Cli, args: string[]): number | undefined {
  const command = commandOf(cli, args)
  if (!command) return undefined
  const rest = args.slice(command.name.split(' ').length)
  try {
    return parseArgs({ args: rest, ...parseOptions(command.flags), strict: false }).positionals
      .length
  } catch {
    return undefined
  }
}

const topFlags = (cli: Cli): Record<string, FlagSpec> => ({
  ...cli.common,
  version: { takesValue: false, short: 'v', multiple: false },
})

function parseOptions(flags: Record<string, FlagSpec>) {
  const options = Object.fromEntries(
    Object.entries(flags).map(([name, f]) => [
      name,
      {
        type: f.takesValue ? ('string' as const) : ('boolean' as const),
        multiple: f.multiple,
        ...(f.short ? { short: f.short } : {}),
      },
    ]),
  )
  return { options, allowPositionals: true }
}

function flagProblems(args: string[], flags: Record<string, FlagSpec>): string[] {
  try {
    parseArgs({ args, ...parseOptions(flags), strict: true })
    return []
  } catch (err) {
    return [(err as Error).message]
  }
}

/**
 * A synopsis (a line of the CLI table, `yoke skills list|show NAME|check    (skills) …`, or a prose
 * span with alternatives, `yoke mcp add|remove|import --write`): the commands it names, the flags
 * it shows (with or without a value) and the ones its description mentions, and, in the table,
 * the owner it names in parentheses (`half`: which half of the table the line is in).
 */
export function synopsisProblems(cli: Cli, line: string, half?: 'kernel' | 'plugins'): string[] {
  const [synopsis, description = ''] = line.split(/ {2,}/, 2) as [string, string?]
  // each token with its group: a bracketed group, or the run of bare tokens between two of them
  const tokens: Array<{ text: string; group: string }> = []
  let run = 0
  for (const [i, [part]] of [
    ...synopsis.slice('yoke '.length).matchAll(/\[[^\]]*\]|"[^"]*"|\S+/g),
  ].entries()) {
    if (!part.startsWith('[')) tokens.push({ text: part, group: `run ${run}` })
    else {
      run++
      for (const text of part.slice(1, -1).trim().split(/\s+/))
        tokens.push({ text, group: `[${i}]` })
    }
  }
  const words: string[] = []
  for (const { text } of tokens) {
    if (!/^[a-z][a-z0-9|-]*$/.test(text)) break
    words.push(text)
  }
  if (words[0] === 'help') return [] // `yoke help [COMMAND]`: the CLI's own word
  const alternatives = (words[1] ?? '').split('|').map((w) => [words[0]!, ...(w ? [w] : [])])
  const problems: string[] = []
  const known: CommandSpec[] = []
  for (const a of alternatives) {
    const command = commandOf(cli, a)
    if (command) known.push(command)
    else problems.push(`"yoke ${a.join(' ')}" names no command`)
  }
  if (!known.length) return problems
  const names = known.map((c) => `yoke ${c.name}`).join(', ')
  const flagNamed = (spelled: string) =>
    spelled.startsWith('--')
      ? spelled.slice(2)
      : known
          .flatMap((c) => Object.entries(c.flags))
          .find(([, f]) => `-${f.short}` === spelled)?.[0]
  for (const [i, { text, group }] of tokens.entries()) {
    if (!text.startsWith('-') || text === '--') continue
    const next = tokens[i + 1]
    const valued = next !== undefined && next.group === group && !next.text.startsWith('-')
    const spelled = text.split('|')
    for (const [j, flag] of spelled.entries()) {
      const name = flagNamed(flag)
      const spec = name ? known.map((c) => c.flags[name]).find(Boolean) : undefined
      if (!spec) problems.push(`${flag}: no such flag for ${names}`)
      // in `--stdio|--http H:P` the value is the last alternative's
      else if (j === spelled.length - 1 && spec.takesValue !== valued)
        problems.push(
          `${flag} ${spec.takesValue ? 'takes a value' : 'takes no value'}: ${synopsis}`,
        )
    }
  }
  for (const [, name] of description.matchAll(/(?<![\w-])--([a-z][a-z0-9-]*)/g))
    if (!known.some((c) => c.flags[name!]))
      problems.push(`--${name} (in the description): no such flag for ${names}`)
  const owner = /^\(([\w-]+)\)/.exec(description)?.[1]
  for (const c of known) {
    if (half === 'plugins' && owner !== c.owner)
      problems.push(`yoke ${c.name} is from ${c.owner}; the table says (${owner ?? 'nothing'})`)
    if (half === 'kernel' && c.owner !== 'yoke')
      problems.push(`yoke ${c.name} is from ${c.owner}, among the kernel's own commands`)
  }
  return problems
}

export interface Started {
  child: ChildProcess
  /** what `ready` matched */
  match: RegExpExecArray
  stdout(): string
  stderr(): string
  /** SIGINT, as Ctrl-C; SIGKILL after 10 s. Resolves to the exit code. */
  stop(): Promise<number | null>
}

/**
 * Starts a long-running command (`yoke dev`, `yoke serve`) and waits until `ready` matches what it
 * printed on `on`; fails after `timeoutMs`, or as soon as it exits, with all it printed.
 */
export function startUntil(
  command: string,
  args: string[],
  options: { cwd: string; env: Record<string, string> },
  ready: RegExp,
  on: 'stdout' | 'stderr' = 'stdout',
  timeoutMs = 30_000,
): Promise<Started> {
  const child = spawn(command, args, { cwd: options.cwd, env: { ...process.env, ...options.env } })
  const out = { stdout: '', stderr: '' }
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode
    child.kill('SIGINT')
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
    const code = await exited
    clearTimeout(timer)
    return code
  }
  return new Promise((resolve, reject) => {
    const said = () => `${[command, ...args].join(' ')}\n${out.stdout}\n${out.stderr}`
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`not ready within ${timeoutMs} ms (${ready}): ${said()}`))
    }, timeoutMs)
    for (const stream of ['stdout', 'stderr'] as const)
      child[stream].on('data', (d) => {
        out[stream] += d
        const match = stream === on ? ready.exec(out[stream]) : null
        if (!match) return
        clearTimeout(timer)
        resolve({ child, match, stdout: () => out.stdout, stderr: () => out.stderr, stop })
      })
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`exited (${code}) before it was ready: ${said()}`))
    })
  })
}
