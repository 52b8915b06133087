import { fileURLToPath } from 'node:url';
import { FIXED_BODY_START } from './fixed-backend.ts';
import { longestRunMs, type FixedRateOptions, type FixedRateResult } from './fixed-rate.ts';
import { request } from './http.ts';
import { runLoad, type LoadResult, type LoadTool } from './load.ts';
import {
  coreWait,
  cpuOfEveryProcess,
  cpuSeconds,
  exitedChildrenCpuSeconds,
  helperThreadsCpuSeconds,
  machineCpu,
  majorFaults,
  memoryKiB,
  softirqThreadPids,
  startModule,
  type CoreWait,
  type MachineCpu,
  type ProcessCpu,
} from './processes.ts';

/**
 * Measuring one contender of a benchmark: the same load in the same way for each, with the CPU
 * time of the processes that do the proxying, of the backend and of the load generator taken
 * around the measured run. Shared by bench/frontend.ts and bench/tunnel.ts.
 */
export interface Target {
  readonly name: string;
  /** Where to connect; `headers.host` can name another host (name-based routing on loopback). */
  readonly url: string;
  readonly headers: Record<string, string>;
  /** Processes whose CPU time is charged to this contender's proxying (none for direct). */
  readonly proxyPids: () => number[];
  /** Processes whose peak RSS is reported (the proxy's, or nginx's worker). */
  readonly memoryPids?: () => number[];
}

export interface Measured {
  readonly target: Target;
  readonly load: LoadResult;
  /** CPU seconds of all proxy processes together, and of each in `proxyPids` order. */
  readonly proxyCpuSeconds?: number;
  readonly proxyCpuSecondsEach?: readonly number[];
  readonly backendCpuSeconds?: number;
  readonly loadCpuSeconds?: number;
  /** The proxy's core waits over the run; `slices` per request is how often it was put on a core for each. */
  readonly proxyWait?: CoreWait;
  /** VmHWM of the memory processes together, and of each in `memoryPids` order. */
  readonly peakRssKiB?: number;
  readonly peakRssKiBEach?: readonly number[];
}

/** A contender's fixed-rate latency runs: `rounds`, and the round of median p99 as `result`. */
export interface Latency {
  readonly target: Target;
  readonly result: FixedRateRun;
  readonly rounds: readonly FixedRateRun[];
}

/**
 * One fixed-rate run with the CPU the contender's proxy and the generator used during it, and the
 * time the proxy's and the backend's threads waited for a core (run queue).
 */
export interface FixedRateRun extends FixedRateResult {
  readonly proxyCpuSeconds?: number;
  readonly generatorCpuSeconds?: number;
  readonly proxyWait?: CoreWait;
  readonly backendWait?: CoreWait;
  /** The kernel's softirq threads, all cores together. */
  readonly softirqWait?: CoreWait;
  /** Page faults of the proxy's processes that waited for a read from disk. */
  readonly proxyMajorFaults?: number;
  /** CPU seconds of the proxy's threads other than each process's main one (V8's helpers, libuv's pool). */
  readonly proxyHelperCpuSeconds?: number;
  /** The processes that used the most CPU during the run (`seconds`: used during it), most first. */
  readonly busiest?: readonly ProcessCpu[];
  /** The machine's CPU time by kind during the run. */
  readonly machine?: MachineCpu;
}

const BUSIEST_LISTED = 5;

/** Who used the cores between two readings of every process's CPU time, most first. */
function busiestBetween(before: Map<number, ProcessCpu>, after: Map<number, ProcessCpu>): ProcessCpu[] {
  return [...after.values()]
    .map((p) => ({ ...p, seconds: p.seconds - (before.get(p.pid)?.seconds ?? 0) }))
    .filter((p) => p.seconds > 0)
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, BUSIEST_LISTED);
}

/** What a fixed-rate pass needs: the load's shape, the generator, and the backend whose core waits are read. */
export type FixedRateSettings = Pick<LoadSettings, 'connections' | 'durationSeconds'> & {
  readonly backendPid?: number;
};

export interface LoadSettings {
  readonly tool: LoadTool;
  readonly connections: number;
  readonly durationSeconds: number;
  readonly warmupSeconds: number;
}

const FIXED_RATE_MODULE = fileURLToPath(new URL('./fixed-rate.ts', import.meta.url));

/** The socket generator's nice value: ahead of the backend and the kernel's work on its core: it stalls less, so fewer requests leave in bursts. */
const GENERATOR_PRIORITY = -10;

/** One request before the load: a broken setup must fail here, not be reported as fast. */
export async function checkTarget(t: Target): Promise<void> {
  const reply = await request(new URL(t.url), { headers: t.headers });
  if (reply.status !== 200 || !reply.body.startsWith(FIXED_BODY_START))
    throw new Error(`${t.name}: expected the backend's 200, got ${reply.status}: ${reply.body.slice(0, 200)}`);
}

/** Saturation: a warm-up, then the measured closed-loop run at `connections` keep-alive connections. */
export async function measure(s: LoadSettings, target: Target, backendPid: number): Promise<Measured> {
  const base = { url: target.url, headers: target.headers, connections: s.connections, warmupSeconds: 0 };
  if (s.warmupSeconds > 0) await runLoad(s.tool, { ...base, durationSeconds: s.warmupSeconds });
  const pids = target.proxyPids();
  const proxyBefore = pids.map(cpuSeconds);
  const waitBefore = coreWaitOf(pids);
  const backendBefore = cpuSeconds(backendPid);
  const loadBefore = exitedChildrenCpuSeconds();
  const load = await runLoad(s.tool, { ...base, durationSeconds: s.durationSeconds });
  const loadAfter = exitedChildrenCpuSeconds();
  const proxyEach = pids.map((pid, i) => difference(proxyBefore[i], cpuSeconds(pid)));
  const proxyWait = waitDifference(waitBefore, coreWaitOf(pids));
  const backendAfter = cpuSeconds(backendPid);
  const peaks = (target.memoryPids?.() ?? []).map((pid) => memoryKiB(pid).peak);
  const known = <T>(values: (T | undefined)[]): values is T[] => values.every((v) => v !== undefined);
  const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
  const loadCpu = difference(loadBefore, loadAfter);
  const backendCpu = difference(backendBefore, backendAfter);
  return {
    target,
    load,
    ...(pids.length > 0 && known(proxyEach) ? { proxyCpuSeconds: sum(proxyEach), proxyCpuSecondsEach: proxyEach } : {}),
    ...(pids.length > 0 && proxyWait ? { proxyWait } : {}),
    ...(peaks.length > 0 && known(peaks) ? { peakRssKiB: sum(peaks), peakRssKiBEach: peaks } : {}),
    ...(loadCpu !== undefined ? { loadCpuSeconds: loadCpu } : {}),
    ...(backendCpu !== undefined ? { backendCpuSeconds: backendCpu } : {}),
  };
}

/**
 * Every contender at one fixed arrival rate, `rounds` times, the rounds interleaved (contender 1,
 * 2, …, then again) so that a burst of other load on a shared machine falls on one round of each
 * rather than on all rounds of one. A tail percentile from one short run swings by several
 * milliseconds on 2 shared cores; the median round's is what the report compares.
 */
export async function fixedRateRounds(
  s: FixedRateSettings,
  targets: readonly Target[],
  rate: number,
  rounds: number,
): Promise<Latency[]> {
  const runs = targets.map((): FixedRateRun[] => []);
  for (let round = 1; round <= rounds; round += 1) {
    for (const [i, target] of targets.entries()) {
      process.stderr.write(
        `${target.name}: ${s.durationSeconds}s at ${rate} req/s (fixed rate, round ${round}/${rounds})\n`,
      );
      runs[i]?.push(await fixedRate(s, target, rate));
    }
  }
  return targets.map((target, i) => {
    const each = runs[i] ?? [];
    const byP99 = [...each].sort((a, b) => a.p99Ms - b.p99Ms);
    const median = byP99[Math.floor((byP99.length - 1) / 2)];
    if (!median) throw new Error(`${target.name}: no fixed-rate run`);
    return { target, result: median, rounds: each };
  });
}

/** One contender at a fixed arrival rate (open loop), bench/lib/fixed-rate.ts's client in its own process. */
export async function fixedRate(s: FixedRateSettings, target: Target, rate: number): Promise<FixedRateRun> {
  const options: FixedRateOptions = {
    url: target.url,
    headers: target.headers,
    rate,
    durationSeconds: s.durationSeconds,
    connections: s.connections,
    priority: GENERATOR_PRIORITY,
  };
  const pids = target.proxyPids();
  const every = cpuOfEveryProcess();
  const softirqPids = softirqThreadPids(every);
  const read = (): Readings => ({
    proxyCpu: cpuSecondsOf(pids),
    proxyWait: coreWaitOf(pids),
    proxyFaults: sumOver(pids, majorFaults),
    proxyHelperCpu: sumOver(pids, helperThreadsCpuSeconds),
    backendWait: s.backendPid === undefined ? undefined : coreWait(s.backendPid),
    softirqWait: softirqPids.length > 0 ? coreWaitOf(softirqPids) : undefined,
    generatorCpu: exitedChildrenCpuSeconds(),
    machine: machineCpu(),
  });
  const before = read();
  const child = await startModule<FixedRateResult>(
    'fixed-rate',
    FIXED_RATE_MODULE,
    'runFixedRate',
    options,
    // Its start-up and connections on top of the run (a proxy far behind the rate keeps it to the end).
    longestRunMs(options) + 15_000,
  );
  await child.exited;
  const result = child.ready;
  const after = read();
  const busiest = busiestBetween(every, cpuOfEveryProcess());
  const proxyCpu = difference(before.proxyCpu, after.proxyCpu);
  const proxyWait = waitDifference(before.proxyWait, after.proxyWait);
  const proxyMajorFaults = difference(before.proxyFaults, after.proxyFaults);
  const proxyHelperCpu = difference(before.proxyHelperCpu, after.proxyHelperCpu);
  const backendWait = waitDifference(before.backendWait, after.backendWait);
  const softirqWait = waitDifference(before.softirqWait, after.softirqWait);
  const generatorCpu = difference(before.generatorCpu, after.generatorCpu);
  return {
    ...result,
    ...(pids.length > 0 && proxyCpu !== undefined ? { proxyCpuSeconds: proxyCpu } : {}),
    ...(pids.length > 0 && proxyWait ? { proxyWait } : {}),
    ...(pids.length > 0 && proxyMajorFaults !== undefined ? { proxyMajorFaults } : {}),
    ...(pids.length > 0 && proxyHelperCpu !== undefined ? { proxyHelperCpuSeconds: proxyHelperCpu } : {}),
    ...(backendWait ? { backendWait } : {}),
    ...(softirqWait ? { softirqWait } : {}),
    ...(generatorCpu !== undefined ? { generatorCpuSeconds: generatorCpu } : {}),
    busiest,
    ...(before.machine && after.machine ? { machine: machineDifference(before.machine, after.machine) } : {}),
  };
}

/** What `fixedRate` reads just before and just after a run; the run's figures are the differences. */
interface Readings {
  readonly proxyCpu: number | undefined;
  readonly proxyWait: CoreWait | undefined;
  readonly proxyFaults: number | undefined;
  readonly proxyHelperCpu: number | undefined;
  readonly backendWait: CoreWait | undefined;
  readonly softirqWait: CoreWait | undefined;
  readonly generatorCpu: number | undefined;
  readonly machine: MachineCpu | undefined;
}

function machineDifference(before: MachineCpu, after: MachineCpu): MachineCpu {
  const kinds = Object.keys(before) as (keyof MachineCpu)[];
  return Object.fromEntries(kinds.map((kind) => [kind, after[kind] - before[kind]])) as unknown as MachineCpu;
}

/** The core waits of several processes together; undefined when any is unknown. */
function coreWaitOf(pids: readonly number[]): CoreWait | undefined {
  let total: CoreWait = { waitSeconds: 0, slices: 0 };
  for (const pid of pids) {
    const w = coreWait(pid);
    if (!w) return undefined;
    total = { waitSeconds: total.waitSeconds + w.waitSeconds, slices: total.slices + w.slices };
  }
  return total;
}

/** A thread that ended between the two readings takes its account with it: no figure then, rather than a wrong one. */
function waitDifference(before: CoreWait | undefined, after: CoreWait | undefined): CoreWait | undefined {
  if (!before || !after || after.waitSeconds < before.waitSeconds || after.slices < before.slices) return undefined;
  return { waitSeconds: after.waitSeconds - before.waitSeconds, slices: after.slices - before.slices };
}

/** CPU seconds of several processes together; undefined when any is unknown. */
export function cpuSecondsOf(pids: readonly number[]): number | undefined {
  return sumOver(pids, cpuSeconds);
}

function sumOver(pids: readonly number[], read: (pid: number) => number | undefined): number | undefined {
  let total = 0;
  for (const pid of pids) {
    const value = read(pid);
    if (value === undefined) return undefined;
    total += value;
  }
  return total;
}

function difference(before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined ? undefined : after - before;
}

/**
 * Prints a FAILED line for every saturation or fixed-rate run that saw a non-2xx answer, an error,
 * or nothing at all; returns how many did (a benchmark exits non-zero then: a broken path is not fast).
 */
export function reportFailures(results: readonly Measured[], latencies: readonly Latency[]): number {
  const bad = [
    ...results.map((r) => ({ name: r.target.name, ...r.load, ok: r.load.requests > 0 })),
    ...latencies.map((l) => ({ name: l.target.name, ...l.result, ok: l.result.completed > 0 })),
  ].filter((r) => r.non2xx > 0 || r.errors > 0 || !r.ok);
  for (const r of bad) {
    const kinds = 'errorKinds' in r && r.errorKinds?.length ? ` (${r.errorKinds.join('; ')})` : '';
    process.stderr.write(`FAILED: ${r.name}: ${r.non2xx} non-2xx, ${r.errors} errors${kinds}\n`);
  }
  return bad.length;
}
