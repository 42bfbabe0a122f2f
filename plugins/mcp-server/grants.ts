/**
 * "Allow for this session" across replicas: a 2025-era session resumed on another replica (its
 * sealed id, sealed.ts) keeps the grants its person gave on the first. The runtime keeps a grant
 * per scope and tool registration, in one process; the gateway, which is asked before the person
 * is (Exchange.ask), also writes each grant to the shared store under the session's caller base
 * and the tool's identity (name, source, owner and a hash of what it is: description, schema,
 * risk), and reads it there first. A tool changed since is asked about again, as a reloaded one
 * is; registrations of the same tool on other replicas share the grant. Grants live as long as a
 * sealed session can be resumed. A store that does not answer grants nothing: the person is asked.
 */
import { createHash } from 'node:crypto'
import type { ToolCall } from 'yoke'
import type { Store } from '../store/api.ts'
import { SEALED_MAX_AGE_MS } from './sealed.ts'

/** The grants of one session (its caller base), as an exchange of it consults them. */
export interface SessionGrants {
  has(call: ToolCall): Promise<boolean>
  add(call: ToolCall): Promise<void>
}

/** The store's grants for the session `connection`; each failure is `warn`ed and grants nothing. */
export function sharedGrants(
  store: Store,
  connection: string,
  warn: (message: string) => void,
): SessionGrants {
  const session = createHash('sha256').update(connection).digest('hex').slice(0, 24)
  const keyOf = (call: ToolCall) => `mcp:grant:${session}:${toolIdentity(call)}`
  return {
    async has(call) {
      try {
        return (await store.get(keyOf(call))) !== undefined
      } catch (err) {
        warn(
          `an "allow for this session" grant could not be read from the shared store (${(err as Error).message}): the person is asked`,
        )
        return false
      }
    },
    async add(call) {
      try {
        await store.put(
          keyOf(call),
          { tool: call.name, at: Date.now() },
          { ttlMs: SEALED_MAX_AGE_MS },
        )
      } catch (err) {
        warn(
          `an "allow for this session" grant was kept on this replica only: the shared store did not take it (${(err as Error).message})`,
        )
      }
    },
  }
}

/** A tool as grants know it: the same tool on every replica, another once it changed. */
function toolIdentity(call: ToolCall): string {
  const tool = call.tool
  const what = JSON.stringify([
    call.name,
    tool?.source,
    tool?.owner,
    tool?.description,
    tool?.inputSchema,
    tool?.risk,
  ])
  return createHash('sha256').update(what).digest('hex').slice(0, 32)
}
