// The hook-adapter conformance suite (test/conformance/hooks.ts), run by every hook format yoke
// reads. Each adapter is one entry of ADAPTERS: it runs a real composition over a temporary project,
// and installing a hook is an edit of yoke.config.yaml and a reload (disposing it, the reverse).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { stringify } from 'yaml'
import {
  composedProject,
  HANG_MS,
  hookProgram,
  runHookConformance,
  shQuote,
  type HookAdapter,
  type HookBehaviour,
  type HookRun,
} from '../../conformance/hooks.ts'
import { tempProject } from '../../helpers/project.ts'

/** Each behaviour as an octos hook program: exit 0 allows, 1 denies (stdout: the reason), 2 rewrites (stdout: the arguments). */
function octosBody(behaviour: HookBehaviour): string | undefined {
  switch (behaviour.kind) {
    case 'allow':
    case 'observe':
      return 'exit 0'
    case 'deny':
      return `printf '%s' ${shQuote(behaviour.reason)}; exit 1`
    case 'rewrite':
      return `printf '%s' ${shQuote(JSON.stringify(behaviour.args))}; exit 2`
    case 'hang':
      return `exec sleep ${HANG_MS / 1000}`
    case 'crash':
      return "echo 'the hook crashed' >&2; exit 7" // an exit code octos gives no meaning to
    case 'garbage':
      return "printf 'this is {not json'; exit 2" // a rewrite whose arguments do not parse
    case 'missing':
      return undefined
  }
}

/** octos's payload (`tool_name`, and `arguments` before the call or `result` after it). */
const octosRun = (payload: Record<string, unknown>): HookRun => ({
  tool: String(payload.tool_name),
  args: payload.arguments,
  result: payload.result as string | undefined,
})

/**
 * octos-style shell hooks, declared in the project config (one shell-hooks instance per hook) or
 * in a package manifest's `hooks` (one package per hook, in a directory of its own that the one
 * exec-tools instance lists in `dirs`).
 */
async function octosHooks(declaredIn: 'config' | 'manifest'): Promise<HookAdapter> {
  const project = tempProject()
  const instances: Record<string, unknown> = {}
  const packageDirs = new Map<string, string>()
  const writeConfig = () => {
    const dirs = [...packageDirs.values()]
    const packages = dirs.length && { use: 'exec-tools', config: { dirs, watch: false } }
    project.write(
      'yoke.config.yaml',
      stringify({ preset: 'minimal', plugins: { ...instances, ...(packages && { packages }) } }),
    )
  }
  const { composition, logs, reload } = await composedProject(project, writeConfig)
  let count = 0
  return {
    runtime: composition.runtime!,
    logs,
    // octos: "errors never block" (plugins/exec-tools/README.md, Shell hooks)
    failures: { hang: 'open', crash: 'open', garbage: 'open', missing: 'open' },
    async install(tool, behaviour, { timeoutMs = 5000 } = {}) {
      const key = `hook${++count}`
      const file = `${key}-${behaviour.kind}.sh`
      const dir = project.path(declaredIn === 'config' ? 'hooks' : `packages/${key}/${key}`)
      const program = hookProgram(dir, file, octosBody(behaviour))
      const entry = (command: string) => ({
        event: behaviour.kind === 'observe' ? 'after_tool_call' : 'before_tool_call',
        command: [command],
        timeout_ms: timeoutMs,
        tool_filter: [tool],
      })
      let command: string
      if (declaredIn === 'config') {
        command = program.file
        instances[key] = { use: 'shell-hooks', config: { hooks: [entry(command)] } }
      } else {
        command = `./${file}` // resolved from the package's directory
        mkdirSync(dir, { recursive: true })
        writeFileSync(
          join(dir, 'manifest.json'),
          JSON.stringify({ name: key, version: '1', tools: [], hooks: [entry(command)] }),
        )
        packageDirs.set(key, project.path(`packages/${key}`))
      }
      const remove = () => {
        delete instances[key]
        packageDirs.delete(key)
      }
      try {
        await reload()
      } catch (err) {
        remove() // the next case starts from a config that loads
        await reload().catch(() => {})
        throw err
      }
      return {
        name: command,
        runs: () => program.payloads().map(octosRun),
        pids: program.pids,
        async dispose() {
          if (!(key in instances) && !packageDirs.has(key)) return
          remove()
          await reload()
        },
      }
    },
    async close() {
      await composition.close()
      project.cleanup()
    },
  }
}

/** Every hook format yoke reads; Claude Code's hooks.json is one more entry. */
const ADAPTERS: Array<[name: string, open: () => Promise<HookAdapter>]> = [
  ['octos shell hooks in the project config (shell-hooks)', () => octosHooks('config')],
  ['octos shell hooks in a package manifest (exec-tools)', () => octosHooks('manifest')],
]

for (const [name, open] of ADAPTERS) runHookConformance(name, open)
