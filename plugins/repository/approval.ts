/**
 * @module repository/approval
 * Running a version asks the approval service, as any call that needs approval does: the run's
 * body makes a nested call to a hidden tool of that one version (`run_repo_<s>_<name>_v<n>`),
 * which this plugin's preExecute tap always marks `ask`. So the question goes to whichever bridge
 * answers the session's calls (the terminal, `yoke chat`, the gateway's client), shows the whole
 * source, and "allow for this session" is remembered for exactly that version in that scope, never
 * for the run tool as a whole. No policy rule can turn the ask into an allow (decisions only tighten).
 */
import type { CallContext, Disposer, InjectedContext, PreDecision, ToolCall } from 'yoke'
import type { DynamicVersion } from './api.ts'

/** A person has this long to answer. */
const APPROVAL_MS = 10 * 60_000

export class RunApprovals {
  readonly #tools = new Map<string, { name: string; dispose: Disposer }>()
  readonly #names = new Set<string>()

  constructor(readonly ctx: InjectedContext<['runtime']>) {
    ctx.tap(
      ctx.runtime.hooks.preExecute,
      'repository run approval',
      (decision: PreDecision, call: ToolCall): PreDecision =>
        this.#names.has(call.name)
          ? {
              kind: 'ask',
              reason: `${String(call.args.id)} (${String(call.args.hash).slice(0, 19)}) is code a model wrote: approving runs it with your rights, in this process`,
            }
          : decision,
    )
  }

  /** True for the hidden approval tools: never listed. */
  isApprovalTool(name: string): boolean {
    return this.#names.has(name)
  }

  /** Asks; undefined when approved, else why not. */
  async ask(
    version: DynamicVersion,
    tag: string,
    call: ToolCall,
    callCtx: CallContext,
  ): Promise<string | undefined> {
    const name = this.#toolFor(version, tag)
    const result = await this.ctx.runtime.call(
      name,
      {
        id: version.id,
        hash: version.hash,
        purpose: version.purpose,
        kind: version.kind,
        language: version.language,
        source: version.source,
        config: version.config,
      },
      { scope: call.scope, caller: call.caller, parent: call, signal: callCtx.signal },
    )
    return result.ok ? undefined : (result.error?.message ?? result.status)
  }

  /** Drops a version's approval tool (and with it any session grant of it). */
  forget(version: DynamicVersion): void {
    const entry = this.#tools.get(version.id + version.session)
    if (!entry) return
    this.#tools.delete(version.id + version.session)
    this.#names.delete(entry.name)
    void entry.dispose()
  }

  #toolFor(version: DynamicVersion, tag: string): string {
    const known = this.#tools.get(version.id + version.session)
    if (known) return known.name
    const name = `run_repo_${tag}_${version.name}_v${version.version}`
      .replace(/-/g, '_')
      .slice(0, 64)
    this.#names.add(name)
    const dispose = this.ctx.runtime.register({
      name,
      description: `the approval of running ${version.id} (internal to the repository plugin)`,
      source: 'repository',
      risk: 'critical',
      timeoutMs: APPROVAL_MS,
      inputSchema: { type: 'object' },
      execute: () => 'approved',
    })
    this.#tools.set(version.id + version.session, { name, dispose })
    return name
  }
}
