/**
 * @module repository/approval
 * Running a version asks the approval service directly, in the scope of the `repository_run`
 * call, so the question goes to whichever bridge answers that scope's calls (the terminal, `yoke
 * chat`, the gateway's client for its session). It is asked before that call's body (tools.ts),
 * outside every concurrency gate and the plugin's own queue: a run waiting for a person holds
 * nothing other calls need. The request names a call of its own
 * (`run_repo_<s>_<name>_v<n>`, critical risk, never registered) whose arguments carry the whole
 * source: the terminal prints it whole, numbered; the MCP bridge refuses what it cannot show
 * whole. "Allow for this session" is remembered by the approval service for exactly that version
 * in that scope (each version has its own grant id), never for the run tool as a whole. No policy
 * rule is consulted for the question itself: policy and capability rules judge the
 * `repository_run` call, and can only refuse it (decisions only tighten).
 */
import type { ApprovalApi, InjectedContext, ToolCall } from 'yoke'
import type { DynamicVersion } from './api.ts'

/** A person has this long to answer. */
const APPROVAL_MS = 10 * 60_000

export class RunApprovals {
  /** version id + session → the grant id of its approval (negative: never a registered tool's) */
  readonly #grants = new Map<string, number>()
  #nextGrant = 0

  constructor(readonly ctx: InjectedContext<['runtime', 'approval']>) {}

  /** Asks; undefined when approved, else why not. */
  async ask(
    version: DynamicVersion,
    tag: string,
    call: ToolCall,
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const key = version.id + version.session
    let grant = this.#grants.get(key)
    if (grant === undefined) this.#grants.set(key, (grant = --this.#nextGrant))
    const name = `run_repo_${tag}_${version.name}_v${version.version}`
      .replace(/-/g, '_')
      .slice(0, 64)
    const asked: ToolCall = Object.freeze({
      id: `${call.id}/approval`,
      name,
      args: Object.freeze({
        id: version.id,
        hash: version.hash,
        purpose: version.purpose,
        kind: version.kind,
        language: version.language,
        config: version.config,
        source: version.source,
      }),
      scope: call.scope,
      caller: call.caller,
      asker: call.asker, // who answers for the call answers for what it runs
      tool: Object.freeze({
        ...call.tool!,
        name,
        id: grant,
        description: `the approval of running ${version.id} (internal to the repository plugin)`,
        risk: 'critical' as const,
      }),
    })
    const outcome = await (this.ctx.approval as ApprovalApi).request({
      call: asked,
      reason: `${version.id} (${version.hash.slice(0, 19)}) is code a model wrote: approving runs it with your rights, in this process`,
      signal: AbortSignal.any([signal, AbortSignal.timeout(APPROVAL_MS)]),
    })
    return outcome.allowed ? undefined : outcome.why
  }

  /** Forgets a version's grant id: a later version of the same name is asked about afresh. */
  forget(version: DynamicVersion): void {
    this.#grants.delete(version.id + version.session)
  }
}
