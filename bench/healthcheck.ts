/**
 * `npm run bench:healthcheck`: latency of an agent health check against a direct request to the same
 * backend, measured in one run (docs/benchmarks.md, "Health check"). The backend runs in its own
 * process. Three ways of asking the same question "does GET /health answer 200?":
 *   direct        http.request on a fresh connection, status read, body drained (the baseline)
 *   function      agent/healthcheck.ts httpHealthCheck (fresh connection, body never read)
 *   local API     `svc serve` (real process) asked over its Unix socket, as the CLI does, minus Node start-up
 *   CLI           the whole `svc agent share http-healthcheck` command (Node start-up included), fewer runs
 * Rounds interleave the variants so drift on a shared machine hits all of them alike.
 */
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { LocalApiClient } from '../agent/client.ts';
import type { ShareEntry } from '../agent/agent.ts';
import { httpHealthCheck, type HealthCheckResult } from '../agent/healthcheck.ts';

const ROOT = resolve(import.meta.dirname, '..');
const NODE = join(ROOT, 'node_modules/.bin/node');
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const PER_ROUND = Number(process.env.PER_ROUND ?? 200);
const CLI_RUNS = Number(process.env.CLI_RUNS ?? 10);

const BACKEND = `
const http = require('node:http');
const s = http.createServer((req, res) => { res.setHeader('content-type', 'text/plain'); res.end('ok'); });
s.listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));
`;

function startBackend(): Promise<{ port: number; stop(): void }> {
  const child = spawn(NODE, ['-e', BACKEND], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((done) => {
    child.stdout.once('data', (c: Buffer) => done({ port: Number(c.toString().trim()), stop: () => child.kill() }));
  });
}

function startServe(dataDir: string): Promise<{ stop(): Promise<void> }> {
  const child = spawn(NODE, [join(ROOT, 'bin/svc.js'), 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0'], {
    cwd: ROOT,
    env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  return new Promise((done) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('svc serve is ready'))
        done({
          stop: () => {
            child.kill('SIGTERM');
            return exited;
          },
        });
    });
  });
}

function direct(port: number): Promise<number> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/health', method: 'GET', agent: false }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode ?? 0));
    });
    req.on('error', fail);
    req.end();
  });
}

async function time(fn: () => Promise<unknown>, samples: number[]): Promise<void> {
  const start = process.hrtime.bigint();
  await fn();
  samples.push(Number(process.hrtime.bigint() - start) / 1e6);
}

function summary(samples: number[]): { p50: number; p90: number; p99: number; mean: number; n: number } {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return {
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    mean: samples.reduce((a, b) => a + b, 0) / samples.length,
    n: samples.length,
  };
}

const backend = await startBackend();
const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
const serve = await startServe(dataDir);
try {
  const client = new LocalApiClient(dataDir);
  const share = await client.post<ShareEntry>('/v1/shares', { target: `http://127.0.0.1:${backend.port}` });
  const target = new URL(`http://127.0.0.1:${backend.port}/`);
  const request = { target, verb: 'GET', path: '/health', expectedStatus: 200, timeoutMs: 5000 };
  const viaApi = () =>
    client.post<HealthCheckResult>(`/v1/shares/${share.token}/http-healthcheck`, {
      verb: 'GET',
      path: '/health',
      expectedStatus: 200,
    });

  for (let i = 0; i < 200; i++) {
    await direct(backend.port);
    await httpHealthCheck(request);
    await viaApi();
  }
  const samples = { direct: [] as number[], function: [] as number[], 'local API': [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < PER_ROUND; i++) await time(() => direct(backend.port), samples.direct);
    for (let i = 0; i < PER_ROUND; i++) {
      await time(async () => {
        const r = await httpHealthCheck(request);
        if (!r.healthy) throw new Error(r.error);
      }, samples.function);
    }
    for (let i = 0; i < PER_ROUND; i++) await time(viaApi, samples['local API']);
  }
  const cli: number[] = [];
  for (let i = 0; i < CLI_RUNS; i++) {
    const start = process.hrtime.bigint();
    const run = spawnSync(NODE, [
      join(ROOT, 'bin/svc.js'),
      'agent',
      'share',
      'http-healthcheck',
      share.token,
      'GET',
      '/health',
      '200',
      '--data-dir',
      dataDir,
    ]);
    cli.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (run.stdout.toString() !== 'healthy\n')
      throw new Error(`CLI said ${run.stdout.toString()}${run.stderr.toString()}`);
  }

  const base = summary(samples.direct);
  const rows = [...Object.entries(samples), ['CLI (whole command)', cli] as const].map(([name, s]) => {
    const r = summary(s);
    return `| ${name} | ${r.n} | ${r.p50.toFixed(3)} | ${r.p90.toFixed(3)} | ${r.p99.toFixed(3)} | ${r.mean.toFixed(3)} | ${(r.p50 / base.p50).toFixed(2)}x |`;
  });
  process.stdout.write(
    [
      `health check latency, ${new Date().toISOString()}, node ${process.version}, ${ROUNDS}x${PER_ROUND} interleaved samples per variant`,
      '',
      '| variant | samples | p50 ms | p90 ms | p99 ms | mean ms | p50 vs direct |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n'),
  );
} finally {
  await serve.stop();
  backend.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
