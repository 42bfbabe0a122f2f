/**
 * @module cli/waiting
 * Nothing silent (DESIGN §10): which instances of a composition wait and why, in the words every
 * entry point prints — one-shot commands and `yoke serve` on stderr, `createYoke` through `onLog`
 * (or stderr). Those waiting for the project's trust make one line that names `yoke trust`; each
 * other wait (a variable not set, a plugin that said PLUGIN_WAITING) one line with its fix.
 * Instances pending on a service nobody provides are left to `yoke doctor` and `yoke inspect`:
 * a preset may hold such an instance on purpose (it starts when the service comes).
 */
import type { Composition } from '../config/composer.ts'
import type { YokeError } from '../errors.ts'
import type { Fiber } from '../kernel/fiber.ts'
import { codeOf } from '../config/trust.ts'

export interface WaitingInstance {
  /** the instance key (a child's own key) */
  instance: string
  plugin: string
  /** true when it waits for `yoke trust` */
  trust: boolean
  /** what it would run, for one waiting for trust */
  runs?: string
  error: YokeError
}

/** The instances (configured, and the children plugins spawned) that wait with PLUGIN_WAITING. */
export function waitingInstances(composition: Composition): WaitingInstance[] {
  const found: WaitingInstance[] = []
  const seen = new Set<Fiber>()
  const projectDir = composition.current?.stack.projectDir ?? composition.project.dir
  for (const [key, { spec, fiber }] of composition.reconciler.running) {
    if (fiber) seen.add(fiber)
    if (!spec.enabled || !fiber || !waits(fiber)) continue
    const trust = spec.untrusted === true || namesTrust(fiber.error!)
    found.push({
      instance: key,
      plugin: spec.module?.plugin.name ?? spec.use,
      trust,
      ...(trust && { runs: codeOf(spec, projectDir) }),
      error: fiber.error!,
    })
  }
  // the children plugins spawn (an MCP server per .mcp.json entry) wait on their own
  for (const fiber of composition.kernel.fibers) {
    if (seen.has(fiber) || !fiber.parent || !waits(fiber)) continue
    found.push({
      instance: fiber.key,
      plugin: fiber.plugin.name,
      trust: namesTrust(fiber.error!),
      error: fiber.error!,
    })
  }
  return found
}

const waits = (fiber: Fiber) => fiber.state === 'pending' && fiber.error?.code === 'PLUGIN_WAITING'

/** A wait whose fix is `yoke trust` (src/config/trust.ts words its hint so). */
const namesTrust = (error: YokeError) => error.hint.includes('`yoke trust`')

/**
 * The lines to print: one for everything that waits for trust, one per other wait. Empty when
 * nothing waits.
 *
 * @example
 * waiting: 2 instances wait for trust: local (the local module ./plugin.mjs), echo (project code (mcp-client)); the project /p is not trusted yet: review its config, then run `yoke trust` in /p (--trust or YOKE_TRUST=1 trusts one run)
 */
export function waitingLines(composition: Composition, waiting = waitingInstances(composition)) {
  const lines: string[] = []
  const trust = waiting.filter((w) => w.trust)
  if (trust.length) {
    const verdict = composition.project.trusted?.()
    const why = typeof verdict === 'string' ? verdict : 'the project is not trusted'
    const dir = composition.current?.stack.projectDir ?? composition.project.dir
    const names = trust.map((w) => `${w.instance}${w.runs ? ` (${w.runs})` : ''}`).join(', ')
    lines.push(
      `${trust.length === 1 ? '1 instance waits' : `${trust.length} instances wait`} for trust: ${names}; ${why}: review the project's config, then run \`yoke trust\` in ${dir} (--trust or YOKE_TRUST=1 trusts one run)`,
    )
  }
  for (const w of waiting.filter((w) => !w.trust))
    lines.push(
      `${w.error.message}${w.error.location ? ` (at ${w.error.location})` : ''}; ${w.error.hint}`,
    )
  return lines
}

/** The JSON form of what waits, for `--json` outputs. */
export function waitingJson(waiting: WaitingInstance[]) {
  return waiting.map((w) => ({
    instance: w.instance,
    plugin: w.plugin,
    trust: w.trust,
    ...(w.runs && { runs: w.runs }),
    message: w.error.message,
    hint: w.error.hint,
    location: w.error.location,
  }))
}
