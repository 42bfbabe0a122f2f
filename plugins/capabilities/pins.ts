/**
 * @module capabilities/pins
 * `yoke pin ID` records what a capability is now (its version, its content hash) in the
 * capabilities instance's `pins`, so a later change of it is refused until it is reviewed and pinned
 * again; `yoke pin --list` shows each pin and whether it holds; `yoke unpin ID` removes one. Each
 * is an edit of the project config that keeps its comments (a running yoke dev reloads it).
 */
import { color, defineCommand, printJson, YokeError, type CommandContext } from 'yoke/cli'
import { versionOf, type Capability } from './api.ts'
import { auditPath, configured, listNow } from './configured.ts'

export type Pin = { id: string; version?: string; hash?: string }

/** Every capability now (the running dev's, else a composition's): `capabilities/list`. */
async function capabilities(cli: CommandContext): Promise<Capability[] | number> {
  const reply = await cli.control('capabilities/list')
  if (typeof reply === 'number') return reply
  return reply.answer.capabilities
}

/** The one of `id`'s capabilities a pin records: the running version of a dynamic plugin, else the usable one. */
export function current(all: Capability[], id: string): Capability | undefined {
  const same = all.filter((c) => c.id === id)
  return same.find((c) => c.state === 'running') ?? same.find((c) => !c.refused) ?? same.at(-1)
}

/**
 * What `yoke pin ID` records: the version and hash `id` has now (of `all`, the running dev's or a
 * composition's capabilities). Not there: CAPABILITY_UNKNOWN; a server between connections shows
 * no version and no tools, so a pin then would never hold: USAGE.
 */
export function pinFor(all: Capability[], id: string): { pin: Pin; found: Capability } {
  const found = current(all, id)
  if (!found) throw new YokeError('CAPABILITY_UNKNOWN', { id })
  if (found.kind === 'server' && found.state !== 'connected' && !found.refused)
    throw new YokeError('USAGE', {
      reason: `${id} is ${found.state ?? 'not connected'} now: pin it once it is connected (yoke mcp list)`,
    })
  const pin = {
    id,
    ...(found.version !== undefined && { version: found.version }),
    hash: found.hash,
  }
  return { pin, found }
}

const describe = (p: { version?: string; hash?: string }) =>
  [p.version && `version ${p.version}`, p.hash].filter(Boolean).join(' ')

/** The pins as the project config holds them under the edit's lock, changed by `change`. */
async function editPins(
  cli: CommandContext,
  key: string,
  effective: Pin[] | undefined,
  change: (pins: Pin[]) => Pin[],
) {
  return cli.editConfig((doc) => {
    const path = ['plugins', key, 'config', 'pins']
    // none left is written as `[]`: removing the key would let the other layers' pins (or a list
    // read before this edit) come back
    doc.setIn(path, doc.createNode(change(listNow(doc, path, effective))))
  })
}

export const pin = defineCommand({
  name: 'pin',
  summary: 'pin a capability at the version and content it has now; a later change is refused',
  usage: 'yoke pin [ID] [--list] [--json] [common flags]',
  positionals: 1,
  flags: {
    list: { type: 'boolean', description: 'the pins, and whether each holds now' },
  },
  examples: [
    'yoke pin mcp:github',
    'yoke pin note_clear --json',
    'yoke pin repo:weather',
    'yoke pin --list',
  ],
  async run(args, [id], cli) {
    if (args.list) {
      if (id) throw new YokeError('USAGE', { reason: 'yoke pin --list takes no ID' })
      return list(cli, Boolean(args.json))
    }
    if (!id)
      throw new YokeError('USAGE', {
        reason: 'yoke pin takes the ID to pin (yoke stats --all lists them), or --list',
      })
    const all = await capabilities(cli)
    if (typeof all === 'number') return all
    const { pin: next, found } = pinFor(all, id)
    const { key, config } = await configured(cli)
    let before = undefined as Pin | undefined
    const { file } = await editPins(cli, key, config.pins, (pins) => {
      before = pins.find((p) => p.id === id)
      return [...pins.filter((p) => p.id !== id), next]
    })
    const auditFile = await auditPath(cli, config.audit)
    if (auditFile) {
      const { appendAuditOrSay } = await import('./audit.ts')
      appendAuditOrSay(auditFile, [
        {
          at: new Date().toISOString(),
          who: 'pin',
          id,
          from: before ? (before.version ?? before.hash ?? null) : null,
          to: versionOf(found),
          why: `pinned at ${describe(next)} by yoke pin`,
        },
      ])
    }
    if (args.json) printJson({ ok: true, file, pin: next, ...(before && { was: before }) })
    else
      process.stdout.write(
        `${file}: pinned ${id} at ${describe(next)}${before ? color.dim(` (was ${describe(before)})`) : ''}\n  a change of its version or content is refused until you pin it again; \`yoke unpin ${id}\` removes the pin\n`,
      )
    return 0
  },
})

async function list(cli: CommandContext, json: boolean): Promise<number> {
  const { config } = await configured(cli)
  const pins = config.pins ?? []
  const all = pins.length ? await capabilities(cli) : []
  if (typeof all === 'number') return all
  // the rules pull in zod: loaded here, not when yoke --help lists the commands
  const { Governance } = await import('./governance.ts')
  const rows = pins.map((p) => {
    const found = current(all, p.id)
    const rules = new Governance({ withdrawn: [], rollout: [], pins: [p] })
    const holds = found !== undefined && !rules.refusal(found, [], found.scope ?? 'global')
    return {
      ...p,
      holds,
      ...(found && { found: { version: found.version, hash: found.hash } }),
    }
  })
  if (json) printJson({ ok: true, pins: rows })
  else if (!rows.length) process.stdout.write('no pins (yoke pin ID adds one)\n')
  else
    process.stdout.write(
      rows
        .map(
          (r) =>
            `${color.bold(r.id)}  ${describe(r)}  ${
              r.holds
                ? color.green('holds')
                : r.found
                  ? color.red(
                      `differs: it is ${describe(r.found)} now (yoke pin ${r.id} accepts it)`,
                    )
                  : color.yellow('not present now')
            }`,
        )
        .join('\n') + '\n',
    )
  return 0
}

export const unpin = defineCommand({
  name: 'unpin',
  summary: 'remove the pin of a capability',
  usage: 'yoke unpin ID [--json] [common flags]',
  positionals: 1,
  examples: ['yoke unpin mcp:github', 'yoke unpin repo:weather --json'],
  async run(args, [id], cli) {
    if (!id)
      throw new YokeError('USAGE', { reason: 'yoke unpin takes the ID of a pin (yoke pin --list)' })
    const { key, config } = await configured(cli)
    const { file } = await editPins(cli, key, config.pins, (pins) => {
      if (!pins.some((p) => p.id === id))
        throw new YokeError('USAGE', {
          reason: `${id} is not pinned${pins.length ? ` (pinned: ${pins.map((p) => p.id).join(', ')})` : ''}; yoke pin --list shows the pins`,
        })
      return pins.filter((p) => p.id !== id)
    })
    if (args.json) printJson({ ok: true, file, id })
    else process.stdout.write(`${file}: unpinned ${id}\n`)
    return 0
  },
})
