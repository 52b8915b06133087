/**
 * WebSocket echo benchmark (not a test): messages per second and round-trip latency of a WebSocket
 * echo backend reached directly and through the frontend of `svc serve` (a public share of the
 * backend, picked by the Host header), in one run with interleaved rounds.
 *
 * Every server is its own process on 127.0.0.1: the echo backend (`bench/lib/ws-echo-backend.ts`,
 * the `ws` package), `svc serve` (`node bin/svc.js serve`, share made with `svc share public`).
 * The load runs in this process (the `ws` client): `--connections` sockets, each keeping
 * `--window` messages of `--size` bytes in flight; an echo is counted and answered with the next
 * message. Latency: one socket, one message at a time. CPU per message is each process's
 * user+system time over the measured seconds divided by the echoes (one echo = the message both
 * ways through the proxy).
 *
 *   npm run bench:websocket
 *   npm run bench:websocket -- --connections 4 --window 8 --duration 3 --rounds 2
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';
import { intArg } from './lib/load-args.ts';
import { cpuSeconds, installCleanup, memoryKiB, scratchDir, startModule, stopAll } from './lib/processes.ts';
import { fixed, machineLines, markdownTable, mib, ratio, writeMarkdown } from './lib/report.ts';
import { sharePublic, startSvcServe } from './lib/svc.ts';
import type { WsEchoBackend } from './lib/ws-echo-backend.ts';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '8' },
    window: { type: 'string', default: '16' },
    size: { type: 'string', default: '64' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    'latency-samples': { type: 'string', default: '2000' },
  },
});
const CONNECTIONS = intArg('connections', values.connections, 1, 1000);
const WINDOW = intArg('window', values.window, 1, 1000);
const SIZE = intArg('size', values.size, 1, 16 * 1024 * 1024);
const DURATION_S = intArg('duration', values.duration, 1, 600);
const WARMUP_S = intArg('warmup', values.warmup, 0, 60);
const ROUNDS = intArg('rounds', values.rounds, 1, 20);
const LATENCY_SAMPLES = intArg('latency-samples', values['latency-samples'], 10, 1_000_000);
const REPORT = fileURLToPath(new URL('../docs/benchmarks/websocket.md', import.meta.url));
const BACKEND_MODULE = fileURLToPath(new URL('./lib/ws-echo-backend.ts', import.meta.url));

interface Contender {
  readonly name: string;
  readonly url: string;
  readonly host?: string;
  /** The proxy's processes (none for direct). */
  readonly proxyPids: readonly number[];
}

function open(c: Contender): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(c.url, { perMessageDeflate: false, ...(c.host ? { headers: { host: c.host } } : {}) });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`${c.name}: upgrade answered ${res.statusCode}`)));
  });
}

const seconds = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? NaN), 0);
const selfSeconds = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

interface Throughput {
  readonly echoes: number;
  readonly perSecond: number;
  readonly proxyUsPerEcho: number | undefined;
  readonly backendUsPerEcho: number;
  readonly clientUsPerEcho: number;
}

/** `--connections` sockets with `--window` messages in flight each; echoes counted after the warm-up. */
async function throughput(c: Contender, backendPid: number): Promise<Throughput> {
  const sockets = await Promise.all(Array.from({ length: CONNECTIONS }, () => open(c)));
  const payload = Buffer.alloc(SIZE, 'x');
  let counting = false;
  let running = true;
  let echoes = 0;
  for (const ws of sockets) {
    ws.on('message', () => {
      if (counting) echoes++;
      if (running) ws.send(payload);
    });
    for (let i = 0; i < WINDOW; i++) ws.send(payload);
  }
  await new Promise((r) => setTimeout(r, WARMUP_S * 1000));
  const before = { proxy: seconds(c.proxyPids), backend: seconds([backendPid]), client: selfSeconds() };
  const started = performance.now();
  counting = true;
  await new Promise((r) => setTimeout(r, DURATION_S * 1000));
  counting = false;
  const elapsed = (performance.now() - started) / 1000;
  const counted = echoes;
  const per = (after: number, b: number): number => ((after - b) / counted) * 1e6;
  const result: Throughput = {
    echoes: counted,
    perSecond: counted / elapsed,
    proxyUsPerEcho: c.proxyPids.length ? per(seconds(c.proxyPids), before.proxy) : undefined,
    backendUsPerEcho: per(seconds([backendPid]), before.backend),
    clientUsPerEcho: per(selfSeconds(), before.client),
  };
  running = false;
  await Promise.all(
    sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          ws.once('close', () => resolve());
          ws.close();
        }),
    ),
  );
  if (counted === 0) throw new Error(`${c.name}: no echo in ${DURATION_S} s`);
  return result;
}

/** One socket, one message at a time: round-trip times in ms. */
async function latency(c: Contender): Promise<{ p50: number; p99: number }> {
  const ws = await open(c);
  const payload = Buffer.alloc(SIZE, 'x');
  const times: number[] = [];
  await new Promise<void>((resolve) => {
    let sent = performance.now();
    ws.on('message', () => {
      times.push(performance.now() - sent);
      if (times.length === LATENCY_SAMPLES) return resolve();
      sent = performance.now();
      ws.send(payload);
    });
    ws.send(payload);
  });
  ws.close();
  times.sort((a, b) => a - b);
  const at = (p: number): number => times[Math.min(times.length - 1, Math.floor(times.length * p))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99) };
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  installCleanup();
  const loadBefore = loadavg();
  const dir = scratchDir('svc-bench-websocket-');
  const backend = await startModule<WsEchoBackend>('ws echo backend', BACKEND_MODULE, 'startWsEchoBackend', {});
  const serve = await startSvcServe({ name: 'svc serve', dataDir: join(dir, 'serve') });
  const share = await sharePublic(join(dir, 'serve'), backend.ready.url);
  const contenders: Contender[] = [
    { name: 'direct (backend)', url: `ws://127.0.0.1:${backend.ready.port}/`, proxyPids: [] },
    {
      name: 'frontend (svc serve, public share)',
      url: `ws://127.0.0.1:${share.url.port}/`,
      host: share.url.host,
      proxyPids: [serve.pid],
    },
  ];
  for (const c of contenders) (await open(c)).terminate(); // each must upgrade before it is measured

  const runs = new Map<string, Throughput[]>(contenders.map((c) => [c.name, []]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of contenders) {
      const t = await throughput(c, backend.pid);
      runs.get(c.name)!.push(t);
      console.error(`round ${round} ${c.name}: ${t.perSecond.toFixed(0)} echoes/s`);
    }
  }
  const latencies: { p50: number; p99: number }[] = [];
  for (const c of contenders) latencies.push(await latency(c));

  const direct = median(runs.get(contenders[0]!.name)!.map((t) => t.perSecond));
  const rows = contenders.map((c, i) => {
    const ts = runs.get(c.name)!;
    const rate = median(ts.map((t) => t.perSecond));
    const proxy = ts.map((t) => t.proxyUsPerEcho).filter((v): v is number => v !== undefined);
    const lat = latencies[i]!;
    return [
      c.name,
      ts.map((t) => t.perSecond.toFixed(0)).join(', '),
      fixed(rate, 0),
      ratio(rate, direct),
      proxy.length ? fixed(median(proxy), 1) : '-',
      fixed(median(ts.map((t) => t.backendUsPerEcho)), 1),
      fixed(median(ts.map((t) => t.clientUsPerEcho)), 1),
      fixed(lat.p50, 3),
      fixed(lat.p99, 3),
    ];
  });
  const table = markdownTable(
    [
      'contender',
      'echoes/s per round',
      'median',
      'vs direct',
      'proxy CPU µs/echo',
      'backend CPU µs/echo',
      'client CPU µs/echo',
      'RTT p50 ms',
      'RTT p99 ms',
    ],
    rows,
  );
  const memory = `Peak RSS: svc serve ${mib(memoryKiB(serve.pid).peak)}, backend ${mib(memoryKiB(backend.pid).peak)}.`;
  const settings = `${CONNECTIONS} connections × ${WINDOW} messages in flight, ${SIZE}-byte binary messages, ${WARMUP_S} s warm-up + ${DURATION_S} s per round, ${ROUNDS} interleaved rounds; latency: one socket, ${LATENCY_SAMPLES} sequential echoes.`;
  console.log([table, '', memory].join('\n'));
  await writeMarkdown(
    REPORT,
    [
      '# WebSocket echo benchmark',
      '',
      'Written by `npm run bench:websocket` (`bench/websocket.ts`); see [../benchmarks.md](../benchmarks.md#websocket-echo).',
      '',
      ...machineLines(loadBefore),
      `- ${settings}`,
      '',
      table,
      '',
      memory,
      '',
    ].join('\n'),
  );
  console.error(`wrote ${REPORT}`);
  await stopAll();
}

await main();
