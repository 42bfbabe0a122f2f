/**
 * What the console reads of the composition beyond a plugin's context, when the host offers it:
 * the effective config with each value's origin (as `yoke config print --explain`), and the
 * contributed `<plugin>/doctor` controls (as `yoke doctor` asks them). A plugin cannot reach the
 * composition today; these are the shapes asked of the kernel (the `project` service's
 * `config()`, and `ctx.ask`/`ctx.controls()`), read only when present, so the sections fill in
 * the day they exist and say why not until then.
 */
import type { Context } from 'yoke'
import type { ConfigSection, DoctorCheck } from './protocol.ts'

interface ConfigExplained {
  preset?: string
  layers: Array<{ kind: string; file: string }>
  value: unknown
  origins: Record<string, string>
}

type Host = Context & {
  project?: { config?(): ConfigExplained }
  ask?(name: string, request: unknown, timeoutMs?: number): Promise<unknown>
  controls?(): string[]
}

export function configSection(ctx: Context): ConfigSection {
  const explain = (ctx as Host).project?.config
  if (typeof explain !== 'function')
    return {
      layers: [],
      value: undefined,
      origins: {},
      unavailable:
        'the config with its origins is not offered to plugins by this yoke: run `yoke config print --explain`',
    }
  const { layers, value, origins } = explain()
  return { layers, value, origins }
}

/** Every `<plugin>/doctor` control's checks, each plugin's failure its own error check. */
export async function contributedChecks(ctx: Context): Promise<DoctorCheck[] | undefined> {
  const host = ctx as Host
  if (typeof host.ask !== 'function' || typeof host.controls !== 'function') return undefined
  const names = host.controls().filter((n) => n.endsWith('/doctor') && n !== 'console/doctor')
  const answers = await Promise.all(
    names.map(async (name): Promise<DoctorCheck[]> => {
      const topic = name.slice(0, -'/doctor'.length)
      try {
        const checks = (await host.ask!(name, {}, 2000)) as DoctorCheck[]
        return Array.isArray(checks) ? checks.map((c) => ({ topic, ...c })) : []
      } catch (err) {
        return [{ level: 'error', topic, message: `${name} failed: ${(err as Error).message}` }]
      }
    }),
  )
  return answers.flat()
}
