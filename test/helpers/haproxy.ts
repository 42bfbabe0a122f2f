/**
 * A real HAProxy (Debian's) in front of `yoke serve` replicas, for the replicas test and the
 * cluster soak: its binary (undefined where it is not installed), a configuration that
 * health-checks each replica on /readyz, and the process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'

export const HAPROXY = ['haproxy', '/usr/sbin/haproxy'].find(
  (bin) => spawnSync(bin, ['-v'], { stdio: 'ignore' }).status === 0,
)
export const NO_HAPROXY = 'haproxy is not installed (Debian: apt-get install haproxy)'

export interface Frontend {
  /** the loopback port it listens on */
  port: number
  /** the replicas' names and loopback ports, balanced round robin */
  servers: Array<{ name: string; port: number }>
  /** keep a 2025-era session on the replica that minted its Mcp-Session-Id */
  stickToSession?: boolean
}

/** One frontend and backend per entry; a check every 200 ms, three misses to fall (a busy machine). */
export function haproxyConfig(frontends: Frontend[]): string {
  const block = ({ port, servers, stickToSession }: Frontend, i: number) => `frontend f${i}
  bind 127.0.0.1:${port}
  default_backend b${i}
backend b${i}
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
${
  stickToSession
    ? `  stick-table type string len 512 size 10k expire 30m
  stick store-response res.hdr(mcp-session-id)
  stick match req.hdr(mcp-session-id)
`
    : ''
}${servers.map((s) => `  server ${s.name} 127.0.0.1:${s.port} check inter 200ms fall 3 rise 1`).join('\n')}
`
  return `global
  maxconn 1024
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout check 2s
  option redispatch 1
  retry-on conn-failure 503
  retries 3
${frontends.map(block).join('')}`
}

/** HAProxy in the foreground on `frontends` (its config written to `file`); kill it when done. */
export function startHaproxy(file: string, frontends: Frontend[]): ChildProcess {
  writeFileSync(file, haproxyConfig(frontends))
  return spawn(HAPROXY!, ['-f', file, '-db'], { stdio: ['ignore', 'ignore', 'pipe'] })
}
