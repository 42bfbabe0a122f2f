/**
 * `yoke reload`: asks the running `yoke dev` of this project to reload now, with the reload
 * contract's options (`--hold`: holdOnCacheImpact; `--refuse-if-busy`), and says what it did:
 * held (until which runs end, and what it would change in the cached prompt), refused (by what),
 * or what changed. With no dev running it says so and exits 1. Light: it composes nothing.
 */
import { defineCommand, printJson } from 'yoke/cli'

interface Answer {
  ok: boolean
  held?: boolean
  busy?: string[]
  cacheImpact?: Array<{ instance: string; change: string; why: string }>
  added: string[]
  removed: string[]
  restarted: string[]
  capabilities?: string[]
}

const reloadCommand = defineCommand({
  name: 'reload',
  summary:
    'reload the running yoke dev now; --hold holds what would alter the cached prompt until the turn ends',
  usage: 'yoke reload [--hold] [--refuse-if-busy] [--json] [common flags]',
  flags: {
    hold: {
      type: 'boolean',
      description: "hold a change that would alter the model's cached prompt until the runs end",
    },
    'refuse-if-busy': {
      type: 'boolean',
      description: 'refuse (RELOAD_BUSY) while an agent run is in flight',
    },
  },
  examples: ['yoke reload', 'yoke reload --hold', 'yoke reload --refuse-if-busy --json'],
  async run(args, _, cli) {
    const request = {
      ...(args.hold && { holdOnCacheImpact: true }),
      ...(args['refuse-if-busy'] && { refuseIfBusy: true }),
    }
    const answer = (await cli.live('reload', request)) as Answer | undefined
    if (!answer) {
      const why = 'no yoke dev runs this project: there is nothing to reload (start `yoke dev`)'
      if (cli.json) printJson({ ok: false, why })
      else process.stderr.write(`${why}\n`)
      return 1
    }
    if (cli.json) printJson(answer)
    else process.stdout.write(`${describe(answer)}\n`)
    return answer.ok ? 0 : 1
  },
})

function describe(a: Answer): string {
  if (a.held) {
    const impact = (a.cacheImpact ?? []).map((i) => `${i.instance} (${i.why})`).join(', ')
    return `held until ${a.busy?.join(', ') || 'the runs in flight'} end: it would alter the model's cached prompt: ${impact}`
  }
  const parts = [
    a.added.length && `added ${a.added.join(', ')}`,
    a.removed.length && `removed ${a.removed.join(', ')}`,
    a.restarted.length && `restarted ${a.restarted.join(', ')}`,
  ].filter(Boolean)
  return `reloaded: ${parts.join(' · ') || 'nothing changed'}`
}

export const commands = [reloadCommand]
