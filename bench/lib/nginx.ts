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

/**
 * nginx as a reference reverse proxy: a generated config in a scratch directory (`-p dir -c file`,
 * `daemon off`, errors logged there, no access log), HTTP/1.1 keep-alive to the upstream.
 */
export async function startNginxProxy(options: NginxProxyOptions): Promise<NginxProxy> {
  const { dir } = options;
  for (const sub of ['logs', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((kind) => `  ${kind}_temp_path ${join(dir, 'tmp', kind)};`)
    .join('\n');
  const config = `daemon off;
master_process on;
worker_processes ${options.workerProcesses ?? 1};
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'logs', 'error.log')} warn;
events { worker_connections 4096; }
http {
  access_log off;
${temp}
  upstream backend {
    server ${options.upstream.host};
    keepalive ${options.upstreamKeepalive ?? 64};
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
  }
}
`;
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, config);
  const binary = options.binary ?? (existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx');
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

function workerOf(masterPid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${masterPid}/task/${masterPid}/children`, 'utf8').trim().split(/\s+/);
    return children[0] ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}
