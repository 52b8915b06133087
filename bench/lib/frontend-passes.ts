import type { MemoryFigures } from './extra-frontend.ts';
import { INSPECTED, OAUTH_SHARE, type FrontendContenders } from './frontend-contenders.ts';
import type { FrontendBenchSettings } from './frontend-settings.ts';
import { request } from './http.ts';
import { fixedRateRounds, measure, type Latency, type Measured, type Target } from './measure.ts';
import { pairedRounds, pinTargets, type PairedRounds } from './paired.ts';
import { memoryKiB } from './processes.ts';
import type { LatencyLayout } from './report.ts';

/** One fixed-rate pass: every contender at one rate, with the processes laid out on the cores as `layout` says. */
export interface LatencySet {
  readonly latencies: readonly Latency[];
  readonly layout: LatencyLayout;
  /** The rate as a fraction of the frontend OAuth share's saturation (absent with `--rate`). */
  readonly fraction?: number;
}

/** The deployed frontend's memory around the saturation pass: /proc figures and its JS heap in use (MiB). */
export interface FrontendMemory {
  readonly before: MemoryFigures;
  readonly after: MemoryFigures;
  readonly heapBefore?: number | undefined;
  readonly heapAfter?: number | undefined;
}

/** The frontend's JS heap in use (MiB), from its own Prometheus metrics. */
async function heapUsedMiB(metricsPort: number): Promise<number | undefined> {
  const reply = await request(new URL(`http://127.0.0.1:${metricsPort}/metrics`)).catch(() => undefined);
  const match = /^svc_frontend_nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(reply?.body ?? '');
  return match ? Number(match[1]) / 1024 / 1024 : undefined;
}

/** Every contender at saturation, one after the other, with the deployed frontend's memory before and after. */
export async function saturationPass(
  s: FrontendBenchSettings,
  c: FrontendContenders,
): Promise<{ results: Measured[]; memory: FrontendMemory }> {
  const heapBefore = await heapUsedMiB(c.metricsPort);
  const before = memoryKiB(c.frontend.pid);
  const results: Measured[] = [];
  for (const target of c.targets) {
    process.stderr.write(
      `${target.name}: ${s.warmupSeconds}s warm-up, ${s.durationSeconds}s measured, ${s.connections} connections (${s.tool})\n`,
    );
    results.push(await measure(s, target, c.backend.pid));
  }
  const after = memoryKiB(c.frontend.pid);
  const heapAfter = await heapUsedMiB(c.metricsPort);
  return { results, memory: { before, after, heapBefore, heapAfter } };
}

/**
 * The OAuth share's saturation rates: its run of the pass, then more samples up to
 * `--saturation-samples` when the fixed rates are fractions of it (the highest is used).
 */
export async function saturationSamples(
  s: FrontendBenchSettings,
  results: readonly Measured[],
  backendPid: number,
): Promise<number[]> {
  const frontendOAuth = results.find((r) => r.target.name === OAUTH_SHARE);
  const samples = frontendOAuth ? [frontendOAuth.load.requestsPerSecond] : [];
  for (let i = 1; frontendOAuth && s.latency && s.rate === undefined && i < s.saturationSamples; i += 1) {
    process.stderr.write(`${OAUTH_SHARE}: saturation sample ${i + 1} of ${s.saturationSamples}\n`);
    samples.push((await measure(s, frontendOAuth.target, backendPid)).load.requestsPerSecond);
  }
  return samples;
}

/** The fixed arrival rates: `--rate`, or each `--latency-at` fraction of the highest saturation sample. */
function fixedRates(s: FrontendBenchSettings, samples: readonly number[]): { rate: number; fraction?: number }[] {
  const saturation = samples.length > 0 ? Math.max(...samples) : 2000;
  return s.rate !== undefined
    ? [{ rate: s.rate }]
    : s.latencyAt.map((fraction) => ({ rate: Math.max(1, Math.floor(saturation * fraction)), fraction }));
}

/** The fixed-rate latency passes (none with `--latency no`): per rate, one per `--latency-pin` layout. */
export async function latencyPasses(
  s: FrontendBenchSettings,
  targets: readonly Target[],
  backendPid: number,
  samples: readonly number[],
): Promise<LatencySet[]> {
  const sets: LatencySet[] = [];
  for (const { rate, fraction } of s.latency ? fixedRates(s, samples) : []) {
    for (const pin of s.latencyPin) {
      const pinned = pin ? pinTargets(targets, backendPid) : undefined;
      if (pin && !pinned) continue; // one core, or no taskset: the unpinned pass is all there is
      sets.push({
        latencies: await fixedRateRounds({ ...s, backendPid }, targets, rate, s.latencyRounds),
        layout: pinned
          ? { name: 'proxies pinned', text: pinned.text }
          : { name: 'unpinned', text: 'not pinned: every process may run on any core' },
        ...(fraction === undefined ? {} : { fraction }),
      });
      pinned?.restore();
    }
  }
  return sets;
}

/** The bare pipes and the frontend's shares in short alternating rounds (none with `--pair-rounds 0`). */
export async function pairedPass(
  s: FrontendBenchSettings,
  targets: readonly Target[],
  backendPid: number,
): Promise<PairedRounds | undefined> {
  if (s.pairRounds === 0) return undefined;
  const pipeTargets = [
    'bare http.request proxy',
    'bare pipe with header lists',
    'frontend, open share',
    INSPECTED,
    OAUTH_SHARE,
  ].map((prefix) => targets.find((t) => t.name.startsWith(prefix)) as Target);
  const settings = { ...s, warmupSeconds: 0, durationSeconds: s.pairSeconds };
  return pairedRounds(settings, pipeTargets, s.pairRounds, backendPid, s.pairPin);
}
