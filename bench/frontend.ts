/**
 * `npm run bench:frontend` — requests/s and latency of an authenticated GET through the svc frontend
 * versus the same backend directly, a non-OAuth share, and nginx as a reference proxy, in one run.
 *
 * Every server runs in its own process: the backend (bench/lib/fixed-backend.ts), the development
 * OIDC provider (sidecar/dev-idp.ts), the frontend exactly as deployed (`node bin/svc.js frontend
 * --config <generated yaml>`), nginx (generated config in a scratch dir), and the load generator
 * (autocannon in a child process, or wrk). The session cookie comes from a real login through the
 * provider's login form. Exits non-zero when any configuration saw a non-2xx response or an error.
 *
 *   npm run bench:frontend -- [--duration 10] [--warmup 2] [--connections 32] [--load auto|autocannon|wrk]
 *
 * `--load auto` (default) uses wrk when it is installed: written in C, it takes far less of a small
 * machine's CPU from the servers being measured, and reports latency in µs (autocannon: 1 ms steps).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { devInteractionsLogin } from './lib/dev-login.ts';
import type { FixedBackend } from './lib/fixed-backend.ts';
import { CookieJar, request } from './lib/http.ts';
import { runLoad, type LoadResult, type LoadTool } from './lib/load.ts';
import { startNginxProxy } from './lib/nginx.ts';
import { freePort } from './lib/ports.ts';
import {
  commandExists,
  cpuSeconds,
  installCleanup,
  memoryKiB,
  removeScratchDir,
  scratchDir,
  startModule,
  startProcess,
  stopAll,
  type BenchProcess,
} from './lib/processes.ts';
import { fixed, markdownTable, mib, ratio } from './lib/report.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOMAIN = 'bench.localhost';
const BODY_BYTES = 64;
const BODY_START = 'hello from the benchmark backend';

interface Settings {
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
  readonly connections: number;
  readonly tool: LoadTool;
}

interface Target {
  readonly name: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Processes whose CPU time is charged to this configuration's proxy (none for direct). */
  readonly proxyPids: () => number[];
}

interface Measured {
  readonly target: Target;
  readonly load: LoadResult;
  readonly proxyCpuSeconds?: number;
  readonly backendCpuSeconds?: number;
}

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '32' },
      load: { type: 'string', default: 'auto' },
    },
  });
  const int = (name: string, text: string, min: number, max: number): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer ${min}–${max}`);
    return n;
  };
  const load = values.load === 'auto' ? (commandExists('wrk') ? 'wrk' : 'autocannon') : values.load;
  if (load !== 'autocannon' && load !== 'wrk') throw new Error('--load must be auto, autocannon or wrk');
  return {
    durationSeconds: int('duration', values.duration, 1, 60),
    warmupSeconds: int('warmup', values.warmup, 0, 30),
    connections: int('connections', values.connections, 1, 1024),
    tool: load,
  };
}

async function main(): Promise<number> {
  const s = settings();
  installCleanup();
  const dir = scratchDir('svc-bench-frontend-');
  const loadBefore = loadavg();
  try {
    // Servers, each in its own process.
    const [backend, idp, frontendPort, metricsPort, nginxPort] = await Promise.all([
      startModule<FixedBackend>('backend', join(ROOT, 'bench/lib/fixed-backend.ts'), 'startFixedBackend', {
        bodyBytes: BODY_BYTES,
      }),
      startModule<{ issuer: string; clientId: string; clientSecret: string }>(
        'dev-idp',
        join(ROOT, 'sidecar/dev-idp.ts'),
        'startDevIdentityProvider',
        {},
      ),
      freePort(),
      freePort(),
      freePort(),
    ]);
    const backendUrl = new URL(backend.ready.url);
    const frontend = await startFrontendProcess(dir, frontendPort, metricsPort, backendUrl, idp.ready);
    const nginx = await startNginxProxy({ dir: join(dir, 'nginx'), port: nginxPort, upstream: backendUrl });

    // A real login through the provider's form gives the session cookie of the OAuth share.
    const shareUrl = (token: string): URL => new URL(`http://${token}.${DOMAIN}:${frontendPort}/`);
    const jar = new CookieJar();
    const unauthenticated = await request(shareUrl('login'));
    if (unauthenticated.status !== 302 || !unauthenticated.headers.location?.startsWith(idp.ready.issuer))
      throw new Error(`the OAuth share did not redirect to the provider (status ${unauthenticated.status})`);
    const login = await devInteractionsLogin({ start: shareUrl('login'), jar, login: 'bench@example.com' });
    const cookie = jar.header(shareUrl('login'));
    if (login.reply.status !== 200 || !login.reply.body.startsWith(BODY_START) || !cookie)
      throw new Error(`login did not end on the backend's page (status ${login.reply.status})`);

    const frontendPids = (): number[] => [frontend.pid];
    const nginxPids = (): number[] => [nginx.process.pid, nginx.workerPid()].filter((p) => p !== undefined);
    const targets: Target[] = [
      { name: 'direct (backend)', url: backendUrl.href, headers: {}, proxyPids: () => [] },
      {
        name: 'nginx → backend',
        url: `http://127.0.0.1:${nginxPort}/`,
        headers: { host: `open.${DOMAIN}` },
        proxyPids: nginxPids,
      },
      {
        name: 'frontend, open share',
        url: `http://127.0.0.1:${frontendPort}/`,
        headers: { host: shareUrl('open').host },
        proxyPids: frontendPids,
      },
      {
        name: 'frontend, OAuth share (authenticated)',
        url: `http://127.0.0.1:${frontendPort}/`,
        headers: { host: shareUrl('login').host, cookie },
        proxyPids: frontendPids,
      },
    ];
    for (const t of targets) await checkTarget(t);

    const heapBefore = await heapUsedMiB(metricsPort);
    const memoryBefore = memoryKiB(frontend.pid);
    const results: Measured[] = [];
    for (const target of targets) {
      process.stderr.write(
        `${target.name}: ${s.warmupSeconds}s warm-up, ${s.durationSeconds}s measured, ${s.connections} connections (${s.tool})\n`,
      );
      results.push(await measure(s, target, backend));
    }
    const memoryAfter = memoryKiB(frontend.pid);
    const heapAfter = await heapUsedMiB(metricsPort);
    const nginxWorker = nginx.workerPid();
    const nginxMemory = nginxWorker !== undefined ? memoryKiB(nginxWorker) : {};

    printReport(
      s,
      results,
      { before: memoryBefore, after: memoryAfter, nginx: nginxMemory, heapBefore, heapAfter },
      loadBefore,
    );
    const bad = results.filter((r) => r.load.non2xx > 0 || r.load.errors > 0 || r.load.requests === 0);
    for (const r of bad)
      process.stderr.write(`FAILED: ${r.target.name}: ${r.load.non2xx} non-2xx, ${r.load.errors} errors\n`);
    return bad.length > 0 ? 1 : 0;
  } finally {
    await stopAll();
    removeScratchDir(dir);
  }
}

/** `svc frontend --config <file>` exactly as a sidecar runs it, with one open and one OAuth share. */
async function startFrontendProcess(
  dir: string,
  port: number,
  metricsPort: number,
  backend: URL,
  idp: { issuer: string; clientId: string; clientSecret: string },
): Promise<BenchProcess<true>> {
  const config = {
    oauth: {
      bind_address: `127.0.0.1:${port}`,
      endpoint_url: `http://auth.${DOMAIN}:${port}`,
      cookie_name: 'svc-bench',
      cookie_domain: DOMAIN,
      session_lifetime: '6h',
      intermediate_lifetime: '5m',
      signing_key: randomBytes(32).toString('base64url'),
      encryption_key: randomBytes(24).toString('base64url'),
      providers: [
        {
          name: 'dev',
          type: 'oidc',
          client_id: idp.clientId,
          client_secret: idp.clientSecret,
          scopes: ['openid', 'email', 'profile'],
          issuer: idp.issuer,
          supports_pkce: true,
        },
      ],
    },
    metrics_address: `127.0.0.1:${metricsPort}`,
    shares: [
      { token: 'open', target: backend.href },
      { token: 'login', target: backend.href, oauth_provider: 'dev', oauth_email_address_patterns: ['*@example.com'] },
    ],
  };
  const file = join(dir, 'frontend.yaml');
  writeFileSync(file, stringify(config), { mode: 0o600 });
  const frontend = await startProcess<true>({
    name: 'frontend',
    command: process.execPath,
    args: [join(ROOT, 'bin/svc.js'), 'frontend', '--config', file],
    cwd: ROOT,
    ready: (line) => (line.includes('"msg":"frontend listening"') ? true : undefined),
  });
  // Ready for logins once the provider's discovery has succeeded.
  for (let i = 0; i < 100; i += 1) {
    const ready = await request(new URL(`http://127.0.0.1:${port}/readyz`)).catch(() => undefined);
    if (ready?.status === 200) return frontend;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the frontend did not become ready:\n${frontend.output().slice(-2000)}`);
}

/** The frontend's JS heap in use (MiB), from its own Prometheus metrics. */
async function heapUsedMiB(metricsPort: number): Promise<number | undefined> {
  const reply = await request(new URL(`http://127.0.0.1:${metricsPort}/metrics`)).catch(() => undefined);
  const match = /^svc_frontend_nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(reply?.body ?? '');
  return match ? Number(match[1]) / 1024 / 1024 : undefined;
}

/** One request before the load: a broken setup must fail here, not be reported as fast. */
async function checkTarget(t: Target): Promise<void> {
  const url = new URL(t.url);
  const reply = await request(url, { headers: t.headers });
  if (reply.status !== 200 || !reply.body.startsWith(BODY_START))
    throw new Error(`${t.name}: expected the backend's 200, got ${reply.status}: ${reply.body.slice(0, 200)}`);
}

async function measure(s: Settings, target: Target, backend: BenchProcess<FixedBackend>): Promise<Measured> {
  const base = { url: target.url, headers: target.headers, connections: s.connections, warmupSeconds: 0 };
  if (s.warmupSeconds > 0) await runLoad(s.tool, { ...base, durationSeconds: s.warmupSeconds });
  const cpu = (pids: number[]): number | undefined =>
    pids.reduce<number | undefined>((sum, pid) => {
      const c = cpuSeconds(pid);
      return sum === undefined || c === undefined ? undefined : sum + c;
    }, 0);
  const pids = target.proxyPids();
  const proxyBefore = pids.length > 0 ? cpu(pids) : undefined;
  const backendBefore = cpuSeconds(backend.pid);
  const load = await runLoad(s.tool, { ...base, durationSeconds: s.durationSeconds });
  const proxyAfter = pids.length > 0 ? cpu(pids) : undefined;
  const backendAfter = cpuSeconds(backend.pid);
  return {
    target,
    load,
    ...(proxyBefore !== undefined && proxyAfter !== undefined ? { proxyCpuSeconds: proxyAfter - proxyBefore } : {}),
    ...(backendBefore !== undefined && backendAfter !== undefined
      ? { backendCpuSeconds: backendAfter - backendBefore }
      : {}),
  };
}

function printReport(
  s: Settings,
  results: Measured[],
  memory: {
    before: { rss?: number };
    after: { rss?: number; peak?: number };
    nginx: { rss?: number };
    heapBefore?: number;
    heapAfter?: number;
  },
  loadBefore: number[],
): void {
  const direct = results[0]?.load;
  const perRequestUs = (seconds: number | undefined, r: LoadResult): number | undefined =>
    seconds === undefined || r.requests === 0 ? undefined : (seconds / r.requests) * 1e6;
  const rows = results.map(({ target, load, proxyCpuSeconds, backendCpuSeconds }) => [
    target.name,
    fixed(load.requestsPerSecond, 0),
    fixed(load.p50Ms, load.tool === 'wrk' ? 2 : 0),
    fixed(load.p99Ms, load.tool === 'wrk' ? 2 : 0),
    `${load.non2xx} / ${load.errors}`,
    ratio(load.requestsPerSecond, direct?.requestsPerSecond),
    ratio(load.p50Ms, direct?.p50Ms),
    fixed(perRequestUs(proxyCpuSeconds, load), 0),
    fixed(perRequestUs(backendCpuSeconds, load), 0),
  ]);
  const cpu = cpus();
  const out = [
    '',
    `date: ${new Date().toISOString()}  node: ${process.version}  cpus: ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown'}`,
    `load generator: ${s.tool}, ${s.connections} connections, ${s.warmupSeconds}s warm-up + ${s.durationSeconds}s per configuration, 127.0.0.1, ${BODY_BYTES}-byte body`,
    `load average before: ${loadBefore.map((l) => l.toFixed(2)).join(' ')}  after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
    markdownTable(
      [
        'configuration',
        'req/s',
        'p50 ms',
        'p99 ms',
        'non-2xx / errors',
        'req/s vs direct',
        'p50 vs direct',
        'proxy CPU µs/req',
        'backend CPU µs/req',
      ],
      rows,
    ),
    '',
    `frontend RSS: ${mib(memory.before.rss)} before load, ${mib(memory.after.rss)} after, peak ${mib(memory.after.peak)}` +
      `; JS heap used ${fixed(memory.heapBefore, 1)} MiB before, ${fixed(memory.heapAfter, 1)} MiB after` +
      `  (nginx worker RSS after: ${mib(memory.nginx.rss)})`,
    '',
  ];
  process.stdout.write(out.join('\n'));
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`bench:frontend failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1000);
    process.exit(1);
  },
);
