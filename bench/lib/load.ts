import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeScratchDir, scratchDir, startModule, startProcess } from './processes.ts';

/** One fixed-duration, fixed-concurrency HTTP load run against one URL. */
export interface LoadOptions {
  /** Where to connect (e.g. http://127.0.0.1:8080/); the Host header can differ (see `headers`). */
  readonly url: string;
  /** Extra request headers, e.g. `host` to pick a virtual host, `cookie`. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly durationSeconds: number;
  /** An unmeasured run with the same settings first (0 = none). */
  readonly warmupSeconds: number;
}

export interface LoadResult {
  readonly tool: string;
  readonly requests: number;
  readonly durationSeconds: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses with a status outside 200–299. */
  readonly non2xx: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
}

export type LoadTool = 'autocannon' | 'wrk';

/**
 * Runs the load generator in its own process (never in the process that hosts a measured
 * server): autocannon through `run-module.ts`, or wrk (C, much lighter on the CPU) as is.
 */
export async function runLoad(tool: LoadTool, options: LoadOptions): Promise<LoadResult> {
  if (tool === 'wrk') return runWrk(options);
  const timeoutMs = (options.warmupSeconds + options.durationSeconds + 30) * 1000;
  const child = await startModule<LoadResult>(
    'autocannon',
    fileURLToPath(import.meta.url),
    'runAutocannon',
    options,
    timeoutMs,
  );
  await child.exited;
  return child.ready;
}

interface AutocannonResult {
  readonly duration: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly latency: { readonly p50: number; readonly p99: number };
  readonly requests: { readonly total: number };
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>;

/** autocannon's programmatic API, in the current process: call it through `runLoad`, in a child. */
export async function runAutocannon(options: LoadOptions): Promise<LoadResult> {
  const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
  const base = { url: options.url, headers: { ...options.headers }, connections: options.connections };
  if (options.warmupSeconds > 0) await autocannon({ ...base, duration: options.warmupSeconds });
  const r = await autocannon({ ...base, duration: options.durationSeconds });
  return {
    tool: 'autocannon',
    requests: r.requests.total,
    durationSeconds: r.duration,
    requestsPerSecond: r.requests.total / r.duration,
    // autocannon's latency histogram has 1 ms resolution.
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

/**
 * wrk counts only connection-level errors and lumps 3xx with 2xx, so a Lua script counts every
 * status outside 2xx per thread and prints one JSON line with wrk's own latency percentiles (µs).
 */
const WRK_SCRIPT = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) non2xx = 0 end
function response(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end
function done(summary, latency, requests)
  local bad = 0
  for _, t in ipairs(threads) do bad = bad + t:get("non2xx") end
  local e = summary.errors
  io.write(string.format('WRK_RESULT {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"non2xx":%d,"errors":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), bad,
    e.connect + e.read + e.write + e.timeout))
end
`;

export async function runWrk(options: LoadOptions): Promise<LoadResult> {
  const dir = scratchDir('bench-wrk-');
  try {
    const script = join(dir, 'count.lua');
    writeFileSync(script, WRK_SCRIPT);
    // wrk adds its own `Host` unless one is given with exactly that spelling: canonical names.
    const headerArgs = Object.entries(options.headers ?? {}).flatMap(([k, v]) => ['-H', `${canonical(k)}: ${v}`]);
    const args = (seconds: number): string[] => [
      '-t',
      '1',
      '-c',
      String(options.connections),
      '-d',
      `${seconds}s`,
      '--timeout',
      '10s',
      '-s',
      script,
      ...headerArgs,
      options.url,
    ];
    if (options.warmupSeconds > 0) await wrkOnce(args(options.warmupSeconds), options.warmupSeconds);
    const r = await wrkOnce(args(options.durationSeconds), options.durationSeconds);
    const durationSeconds = r.duration_us / 1e6;
    return {
      tool: 'wrk',
      requests: r.requests,
      durationSeconds,
      requestsPerSecond: r.requests / durationSeconds,
      p50Ms: r.p50_us / 1000,
      p99Ms: r.p99_us / 1000,
      non2xx: r.non2xx,
      errors: r.errors,
    };
  } finally {
    removeScratchDir(dir);
  }
}

interface WrkSummary {
  requests: number;
  duration_us: number;
  p50_us: number;
  p99_us: number;
  non2xx: number;
  errors: number;
}

async function wrkOnce(args: string[], seconds: number): Promise<WrkSummary> {
  const child = await startProcess<WrkSummary>({
    name: 'wrk',
    command: process.env.WRK ?? 'wrk',
    args,
    timeoutMs: (seconds + 30) * 1000,
    ready: (line) =>
      line.startsWith('WRK_RESULT ') ? (JSON.parse(line.slice('WRK_RESULT '.length)) as WrkSummary) : undefined,
  });
  await child.exited;
  return child.ready;
}

/** `content-type` → `Content-Type`. */
function canonical(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => `${dash}${c.toUpperCase()}`);
}
