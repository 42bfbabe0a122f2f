/**
 * @module cli/completion
 * Shell completion. `yoke completion bash|zsh|fish` prints a script that asks yoke itself for the
 * candidates (`yoke __complete -- WORDS… CURRENT`), so the commands a project's plugins add are
 * completed too, with their own flags.
 */
import { YokeError } from '../errors.ts'
import { COMMON_OPTIONS } from './args.ts'
import { defineCommand } from './command.ts'
import type { Contributed } from './discover.ts'

const SCRIPTS = {
  bash: `# yoke completion for bash: eval "$(yoke completion bash)" in ~/.bashrc
_yoke() {
  local IFS=$'\\n'
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  COMPREPLY=($(compgen -W "$(yoke __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _yoke yoke
`,
  zsh: `#compdef yoke
# yoke completion for zsh: eval "$(yoke completion zsh)" in ~/.zshrc (after compinit)
_yoke() {
  local -a candidates
  candidates=("\${(@f)$(yoke __complete -- "\${(@)words[2,CURRENT-1]}" "\${words[CURRENT]}" 2>/dev/null)}")
  compadd -a candidates
}
compdef _yoke yoke
`,
  fish: `# yoke completion for fish: yoke completion fish > ~/.config/fish/completions/yoke.fish
function __yoke_complete
  set -l tokens (commandline -opc)
  set -e tokens[1]
  yoke __complete -- $tokens (commandline -ct) 2>/dev/null
end
complete -c yoke -f -a '(__yoke_complete)'
`,
}

export const completion = defineCommand({
  name: 'completion',
  summary: 'print a shell completion script (bash, zsh or fish) for commands and their flags',
  usage: 'yoke completion bash|zsh|fish',
  positionals: 1,
  examples: [
    'eval "$(yoke completion bash)"',
    'yoke completion fish > ~/.config/fish/completions/yoke.fish',
  ],
  async run(_, [shell]) {
    const script = SCRIPTS[shell as keyof typeof SCRIPTS]
    if (!script)
      throw new YokeError('USAGE', {
        reason: `yoke completion takes ${Object.keys(SCRIPTS).join(', ')}${shell ? `, not "${shell}"` : ''}`,
      })
    process.stdout.write(script)
    return 0
  },
})

/**
 * What may come next after `words` (the finished words, flags included) when the word being typed
 * is `current`: the next command word, or, for a flag, the flags of the command the words name.
 */
export function candidates(commands: Contributed[], words: string[], current: string): string[] {
  const typed = words.filter((w) => !w.startsWith('-'))
  if (current.startsWith('-')) {
    const command = [...commands]
      .sort((a, b) => b.command.name.length - a.command.name.length)
      .find((c) => c.command.name.split(' ').every((w, i) => typed[i] === w))?.command
    const flags = Object.keys({ ...COMMON_OPTIONS, ...command?.flags })
    return flags.map((f) => `--${f}`).filter((f) => f.startsWith(current))
  }
  const next = new Set<string>()
  if (!typed.length) next.add('help')
  for (const { command } of commands) {
    const name = command.name.split(' ')
    const head = typed[0] === 'help' ? typed.slice(1) : typed
    if (name.length > head.length && head.every((w, i) => name[i] === w))
      next.add(name[head.length]!)
  }
  return [...next].filter((w) => w.startsWith(current)).sort()
}
