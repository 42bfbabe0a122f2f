/**
 * What yoke declares and how it negotiates the era, per entry: `protocol` as the SDK's
 * `versionNegotiation`, the capabilities every connection declares, and how a failed negotiation
 * reads in the entry's terms (a pin the server cannot speak; a server that ended on the probe).
 */
import {
  Client,
  ProtocolError,
  SdkError,
  SdkErrorCode,
  type ClientCapabilities,
} from '@modelcontextprotocol/client'
import { messageOf } from 'yoke'
import { probeResultsOnce } from '../mcp/api.ts'
import type { McpClientConfig } from './config.ts'
import type { SessionHost } from './session.ts'
import { ProcessTransport } from './stdio.ts'
import { tolerantValidator } from './validator.ts'

/** The longest the era probe waits: a 2025 server that ignores unknown requests costs this once. */
export const PROBE_MS = 10_000

/** The 2026-07-28 tasks extension, as yoke declares it. */
const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** What every connection declares. */
export function capabilitiesOf(host: SessionHost): ClientCapabilities {
  return {
    // roots only when the entry lists some: a server such as server-filesystem replaces the
    // directories it was started with by whatever roots/list answers
    ...(host.roots.length ? { roots: {} } : {}),
    ...(host.sample ? { sampling: {} } : {}),
    // a server's questions go to whoever answers for yoke (plugins/mcp's ask); none: cancelled
    elicitation: { form: {}, url: {} },
    // 2026-07-28 tasks: a call the server makes a task is followed to its end (wire.ts, tasks.ts)
    extensions: { [TASKS_EXTENSION]: {} },
  }
}

/** A Client negotiating the era as the entry's `protocol` says, on yoke's validator, its result lookups made once. */
export function makeClient(
  cfg: McpClientConfig,
  host: SessionHost,
  capabilities: ClientCapabilities,
): Client {
  const mode =
    cfg.protocol === 'auto' || cfg.protocol === 'legacy'
      ? cfg.protocol
      : { pin: cfg.protocol as string }
  // the SDK would otherwise fail a parse and format its error on every request (plugins/mcp/sdk.ts)
  return probeResultsOnce(
    new Client(
      { name: 'yoke', version: host.version },
      {
        capabilities,
        jsonSchemaValidator: tolerantValidator,
        versionNegotiation: {
          mode,
          probe: { timeoutMs: Math.min(PROBE_MS, Math.floor(cfg.startupMs / 2)) },
        },
        // the bridge answers input_required itself, per call, so it knows which call asks
        inputRequired: { autoFulfill: false },
      },
    ),
  )
}

/** The probe was the server's last message: it closed the pipe on `server/discover`. */
export function exitedOnProbe(err: unknown, transport: unknown): boolean {
  return (
    err instanceof SdkError &&
    err.code === SdkErrorCode.EraNegotiationFailed &&
    /closed during the server\/discover probe/.test(err.message) &&
    transport instanceof ProcessTransport &&
    !transport.fatal
  )
}

/** A pinned era the server does not speak, said in the entry's terms. */
export function eraProblem(err: unknown, cfg: McpClientConfig): string | undefined {
  const message = messageOf(err)
  if (cfg.protocol === '2026-07-28' && err instanceof SdkError) {
    if (err.code === SdkErrorCode.EraNegotiationFailed || err.code === SdkErrorCode.RequestTimeout)
      return `it does not speak MCP 2026-07-28, which its entry pins (protocol: 2026-07-28; protocol: auto falls back to the 2025 era): ${message}`
  }
  if (cfg.protocol === 'legacy' && err instanceof ProtocolError)
    return `it refused the 2025-era handshake, which its entry pins (protocol: legacy; it may speak only 2026-07-28: try protocol: auto): ${message}`
  return undefined
}
