import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startProcess, type BenchProcess } from './processes.ts';
import { portOpen } from './ports.ts';

export interface NginxProxyOptions {
  /** Scratch directory (config, pid, logs, temp paths); the caller removes it. */
  readonly dir: string;
  /** Port nginx listens on at 127.0.0.1 (pick one with `freePort`). */
  readonly port: number;
  /** The backend, e.g. http://127.0.0.1:9000 */
  readonly upstream: URL;
  readonly workerProcesses?: number;
  /** Idle keep-alive connections nginx keeps to the upstream (default 64). */
  readonly upstreamKeepalive?: number;
  readonly binary?: string;
}

export interface NginxProxy {
  readonly port: number;
  readonly process: BenchProcess<true>;
  /** The pid of the (single) worker, whose memory is comparable to a one-process proxy. */
  workerPid(): number | undefined;
}

export interface NginxBackendOptions {
  /** Scratch directory (config, pid, logs, temp paths); the caller removes it. */
  readonly dir: string;
  /** Port nginx listens on at 127.0.0.1 (pick one with `freePort`). */
  readonly port: number;
  /** The body every request is answered with (text: it is written into the config). */
  readonly body: string;
  readonly binary?: string;
}

/**
 * A connection stays open for as many requests as a client sends on it. nginx's default (1,000
 * requests, since 1.19.10; likewise to an upstream since 1.15.3) would close every keep-alive
 * connection after 1,000 requests: a reconnect the Node proxies and Go's oauth2-proxy never make,
 * so it is lifted for nginx as a proxy and as a backend alike.
 */
const KEEPALIVE_REQUESTS = 1_000_000_000;

/**
 * nginx as a reference reverse proxy: a generated config in a scratch directory (`-p dir -c file`,
 * `daemon off`, errors logged there, no access log), HTTP/1.1 keep-alive to the upstream.
 */
export async function startNginxProxy(options: NginxProxyOptions): Promise<NginxProxy> {
  return startNginx(
    options,
    `  upstream backend {
    server ${options.upstream.host};
    keepalive ${options.upstreamKeepalive ?? 64};
    keepalive_requests ${KEEPALIVE_REQUESTS};
  }
  server {
    listen 127.0.0.1:${options.port};
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }
  }`,
    options.workerProcesses ?? 1,
  );
}

/**
 * nginx as the benchmark's backend: one worker answering every request with the same body from
 * its config (`return 200`), keep-alive. It costs a quarter of the CPU per request of
 * bench/lib/fixed-backend.ts's node:http server at a fixed rate (6–8 against 18–26 µs, measured
 * side by side), which on a 2-core machine is CPU left to the proxy being measured.
 */
export async function startNginxBackend(options: NginxBackendOptions): Promise<NginxProxy & { url: string }> {
  // Written into a double-quoted config string: a quote, a backslash or a `$` would be read as syntax.
  if (/["\\$]|[^\n\x20-\x7e]/.test(options.body)) throw new Error('nginx backend: the body must be plain ASCII text');
  const body = options.body.replaceAll('\n', '\\n');
  const nginx = await startNginx(
    options,
    `  server {
    listen 127.0.0.1:${options.port};
    location / {
      default_type "text/plain; charset=utf-8";
      return 200 "${body}";
    }
  }`,
    1,
  );
  return { ...nginx, url: `http://127.0.0.1:${options.port}/` };
}

/** nginx with `server` (its server and upstream blocks) in a generated config in `dir`, ready once its port accepts. */
async function startNginx(
  options: { readonly dir: string; readonly port: number; readonly binary?: string },
  server: string,
  workerProcesses: number,
): Promise<NginxProxy> {
  const { dir } = options;
  for (const sub of ['logs', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((kind) => `  ${kind}_temp_path ${join(dir, 'tmp', kind)};`)
    .join('\n');
  const config = `daemon off;
master_process on;
worker_processes ${workerProcesses};
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'logs', 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests ${KEEPALIVE_REQUESTS};
${temp}
${server}
}
`;
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, config);
  const binary = options.binary ?? nginxBinary();
  const proc = await startProcess<true>({
    name: 'nginx',
    command: binary,
    args: ['-p', dir, '-c', file, '-e', join(dir, 'logs', 'error.log')],
    // nginx prints nothing when it starts well: ready once its port accepts connections.
    probe: async () => ((await portOpen(options.port)) ? true : undefined),
    timeoutMs: 10_000,
  });
  return { port: options.port, process: proc, workerPid: () => workerOf(proc.pid) };
}

/** Debian's nginx, or the one on PATH. */
function nginxBinary(): string {
  return existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx';
}

/** `nginx/1.22.1`, as `nginx -v` says it (on stderr). */
export function nginxVersion(): string {
  const { stderr } = spawnSync(nginxBinary(), ['-v'], { encoding: 'utf8' });
  return /nginx\/[\d.]+/.exec(stderr)?.[0] ?? 'nginx';
}

function workerOf(masterPid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${masterPid}/task/${masterPid}/children`, 'utf8').trim().split(/\s+/);
    return children[0] ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}
