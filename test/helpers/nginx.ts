/**
 * A real nginx (Debian's open-source build) in front of `yoke serve` replicas, for the nginx test:
 * its binary (undefined where it is not installed), the site configuration the README shows
 * (`nginxSite`), the whole file a test runs (everything of nginx's own in one directory: pid, logs,
 * temp paths), and the process, stopped by its pid.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { until } from './until.ts'

export const NGINX = ['nginx', '/usr/sbin/nginx'].find(
  (bin) => spawnSync(bin, ['-v'], { stdio: 'ignore' }).status === 0,
)
export const NO_NGINX = 'nginx is not installed (Debian: apt-get install nginx)'

export interface NginxSite {
  /** what the server listens on: `PORT` or `ADDRESS:PORT` */
  listen: string
  /** the replicas, `HOST:PORT` each, balanced round robin */
  servers: string[]
}

/**
 * The `upstream` and `server` blocks for yoke replicas: round robin with no affinity, keep-alive to
 * the replicas, streams passed as they come, a refused connection (and a GET's 503) tried on the
 * next replica, and a POST that a draining replica refused with 503 asked once more of another.
 * Valid from nginx 1.15.3 (the upstream `keepalive_timeout`); the README shows it as is.
 */
export function nginxSite({ listen, servers }: NginxSite): string {
  const lines = servers.map((s) => `    server ${s} max_fails=2 fail_timeout=5s;`)
  return `upstream yoke {
    zone yoke 64k;                  # the replicas' failures, as every worker sees them
${lines.join('\n')}
    keepalive 16;                   # idle connections kept to the replicas, per worker
    keepalive_timeout 4s;           # below Node's 5 s, so nginx closes an idle one first
}
server {
    listen ${listen};
    client_max_body_size 4m;        # yoke's own bound on a request body
    proxy_http_version 1.1;         # keep-alive to the replicas
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_buffering off;            # SSE passes as it comes (as X-Accel-Buffering: no asks)
    proxy_read_timeout 1h;          # the longest silence of a stream, or of a call before its answer
    proxy_connect_timeout 2s;
    # the next replica when a connection fails, and on a GET's 503; a POST once sent is never
    # sent again (no non_idempotent: its tool may have run)
    proxy_next_upstream error timeout http_503;

    location / {
        proxy_pass http://yoke;
        # a draining replica answers a POST 503 before running anything: ask another, once
        proxy_intercept_errors on;
        error_page 503 = @another_replica;
    }
    location @another_replica {
        proxy_pass http://yoke;
    }
}
`
}

/**
 * The whole nginx.conf for a test: in the foreground, one worker, its pid, logs and temp paths in
 * `dir`, and an access log that names the replicas each request went to (`NginxLogLine`).
 */
export function nginxConfig(dir: string, site: NginxSite): string {
  const indented = nginxSite(site).replace(/^(?=.)/gm, '    ')
  // a worker runs as `nobody` when the master is root, and could not enter the test's temp dir
  const user = process.getuid?.() === 0 ? 'user root;\n' : ''
  return `${user}daemon off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} notice;
events {
    worker_connections 512;
}
http {
    client_body_temp_path ${join(dir, 'body')};
    proxy_temp_path ${join(dir, 'proxy')};
    fastcgi_temp_path ${join(dir, 'fastcgi')};
    uwsgi_temp_path ${join(dir, 'uwsgi')};
    scgi_temp_path ${join(dir, 'scgi')};
    log_format upstreams '$request_method\\t$uri\\t$status\\t$upstream_addr\\t$upstream_status';
    access_log ${join(dir, 'access.log')} upstreams;
${indented}}
`
}

/** One request as the access log has it: each replica it went to, in order, and their answers. */
export interface NginxLogLine {
  method: string
  uri: string
  status: number
  /** `HOST:PORT` of each attempt (a next-upstream try or the error_page's second ask) */
  upstreams: string[]
  /** each attempt's status (502 where the connection failed) */
  statuses: string[]
}

export interface Nginx {
  child: ChildProcess
  /** the requests logged so far */
  log(): NginxLogLine[]
  /** the error log and what nginx printed */
  errors(): string
  /** fast shutdown (SIGTERM to the master, which ends its worker), then waits for its exit */
  stop(): Promise<void>
}

/** nginx on `site` with its files in `dir` (made if missing); resolves once it listens. */
export async function startNginx(dir: string, site: NginxSite): Promise<Nginx> {
  mkdirSync(dir, { recursive: true })
  const conf = join(dir, 'nginx.conf')
  writeFileSync(conf, nginxConfig(dir, site))
  const child = spawn(NGINX!, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let printed = ''
  child.stderr!.on('data', (d) => (printed += d))
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '')
  const nginx: Nginx = {
    child,
    log: () => parseLog(read(join(dir, 'access.log'))),
    errors: () => `${printed}${read(join(dir, 'error.log'))}`,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      // a master that does not stop is killed (its worker would then outlive it, so not at once)
      const bound = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(bound)
    },
  }
  const [host, port] = site.listen.includes(':')
    ? [site.listen.replace(/:\d+$/, ''), site.listen.replace(/^.*:/, '')]
    : ['127.0.0.1', site.listen]
  await until(
    () => `nginx to listen on ${site.listen}: ${nginx.errors()}`,
    async () => {
      if (child.exitCode !== null)
        throw new Error(`nginx exited ${child.exitCode}: ${nginx.errors()}`)
      return accepts(host, Number(port))
    },
    { ms: 10_000 },
  )
  return nginx
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

function parseLog(text: string): NginxLogLine[] {
  // attempts within one upstream group are joined by ", ", an error_page's new ask by " : "
  const attempts = (field: string) => field.split(/, | : /).filter((a) => a && a !== '-')
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [method, uri, status, upstreams, statuses] = line.split('\t')
      return {
        method: method!,
        uri: uri!,
        status: Number(status),
        upstreams: attempts(upstreams ?? ''),
        statuses: attempts(statuses ?? ''),
      }
    })
}
