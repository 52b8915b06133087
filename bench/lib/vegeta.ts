import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FixedRateOptions, FixedRateResult } from './fixed-rate.ts';
import { GO_TOOLS_DIR } from './oauth2-proxy.ts';

const VEGETA = join(GO_TOOLS_DIR, 'vegeta');

/** The fixed-rate generators: vegeta, or bench/lib/fixed-rate.ts's Node client. */
export type RateTool = 'vegeta' | 'node';

/** vegeta, when bench/provide-go-tools.sh has built it. */
export function vegetaBinary(): string | undefined {
  return existsSync(VEGETA) ? VEGETA : undefined;
}

/** The part of `vegeta report -type=json` read here (latencies in ns). */
interface VegetaReport {
  readonly latencies: Readonly<Record<'50th' | '90th' | '99th' | 'max', number>>;
  readonly requests: number;
  readonly status_codes: Readonly<Record<string, number>>;
  readonly errors: readonly string[] | null;
}

/**
 * Latency at a fixed arrival rate with vegeta (Go): its pacer hands each scheduled request to a
 * free worker and starts another worker when none is free, so a slow server cannot slow the
 * arrivals; each request's latency runs from its start, including any wait for one of the
 * `connections` keep-alive connections. Go's client costs a fraction of Node's per request, which
 * on a 2-core machine leaves the servers being measured most of the CPU (its CPU is reported).
 */
export async function runVegeta(options: FixedRateOptions): Promise<FixedRateResult> {
  const binary = vegetaBinary();
  if (!binary) throw new Error('vegeta is not built: run bench/provide-go-tools.sh');
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-vegeta-'));
  try {
    const targets = join(dir, 'targets.http');
    // vegeta reads the Host line of a target only in this spelling (Go's canonical header form).
    const headerLines = Object.entries(options.headers ?? {}).map(([name, value]) => `${canonical(name)}: ${value}`);
    writeFileSync(targets, [`GET ${options.url}`, ...headerLines, ''].join('\n'));
    const results = join(dir, 'results.bin');
    const args = [
      'attack',
      `-targets=${targets}`,
      `-rate=${options.rate}/1s`,
      `-duration=${options.durationSeconds}s`,
      `-max-connections=${options.connections}`,
      '-timeout=30s',
      `-output=${results}`,
    ];
    await run(binary, args, GENERATOR_ENV);
    const { stdout } = await promisify(execFile)(binary, ['report', '-type=json', results], { maxBuffer: 16 << 20 });
    const report = JSON.parse(stdout) as VegetaReport;
    const codes = Object.entries(report.status_codes);
    const ok = codes.filter(([code]) => code.startsWith('2')).reduce((n, [, count]) => n + count, 0);
    const failed = report.status_codes['0'] ?? 0;
    const ms = (ns: number): number => ns / 1e6;
    return {
      rate: options.rate,
      sent: report.requests,
      completed: report.requests - failed,
      p50Ms: ms(report.latencies['50th']),
      p90Ms: ms(report.latencies['90th']),
      p99Ms: ms(report.latencies['99th']),
      maxMs: ms(report.latencies.max),
      non2xx: report.requests - failed - ok,
      errors: failed,
      errorKinds: report.errors ?? [],
      tool: 'vegeta',
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `host` → `Host`, `x-forwarded-for` → `X-Forwarded-For`. */
function canonical(name: string): string {
  return name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());
}

/**
 * The attack runs without Go's garbage collector until it holds 2 GiB (a 5 s run at 5,000 req/s
 * allocates about 0.5 GiB): a collection pauses the goroutines that time the replies, and with it on,
 * the backend's own p99 at 5,553 req/s was 1.0–1.6 ms against 0.5–0.7 without, six alternating
 * rounds each (docs/benchmarks-history.md, "The generator's own tail"). That was the generator's tail, not the servers'.
 */
const GENERATOR_ENV = { GOGC: 'off', GOMEMLIMIT: '2GiB' };

/** Runs a command to completion (its stderr in the error when it fails). */
function run(command: string, args: readonly string[], env: Readonly<Record<string, string>>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`${command} ${args[0] ?? ''} exited with ${code ?? 'a signal'}: ${stderr.slice(-2000)}`));
    });
  });
}
