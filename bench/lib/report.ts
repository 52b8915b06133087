import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { FixedRateRun, Latency, Measured } from './measure.ts';
import type { CoreWait } from './processes.ts';

/** Plain-text reporting helpers shared by the benchmarks. */

/** A Markdown table with padded columns (readable in a terminal, pasteable into docs). */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${widths.map((w, i) => (cells[i] ?? '').padEnd(w)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** A number with a fixed count of decimals, or '-' when absent. */
/** The middle value (the mean of the two middle ones for an even count), undefined for none. */
export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** CPU seconds spent over `requests` requests, in µs per request; undefined when either is missing. */
export function perRequestUs(seconds: number | undefined, requests: number): number | undefined {
  return seconds === undefined || requests === 0 ? undefined : (seconds / requests) * 1e6;
}

/** A saturation run's proxy CPU time per request in µs, or undefined when its CPU could not be read. */
export function cpuPerRequestUs(m: Measured): number | undefined {
  return perRequestUs(m.proxyCpuSeconds, m.load.requests);
}

export function fixed(value: number | undefined, decimals: number): string {
  return value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(decimals);
}

/** `value / base` as `0.42×`, or '-' when either is missing or zero. */
export function ratio(value: number | undefined, base: number | undefined): string {
  if (value === undefined || base === undefined || base === 0) return '-';
  return `${(value / base).toFixed(2)}×`;
}

/** KiB as MiB with one decimal. */
export function mib(kib: number | undefined): string {
  return kib === undefined ? '-' : `${(kib / 1024).toFixed(1)} MiB`;
}

/** Writes a Markdown report formatted as the repository's docs are, so a fresh report passes `prettier --check docs`. */
export async function writeMarkdown(file: string, markdown: string): Promise<void> {
  const prettier = await import('prettier');
  const style = await prettier.resolveConfig(file);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, await prettier.format(markdown, { ...style, parser: 'markdown' }));
}

/** The report lines that state when and where a run was made, and how loaded the machine was. */
export function machineLines(loadBefore: readonly number[]): string[] {
  const cpu = cpus();
  const loads = (l: readonly number[]): string => l.map((v) => v.toFixed(2)).join(' ');
  return [
    `- date: ${new Date().toISOString()}`,
    `- machine: ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory, Node ${process.version}`,
    `- load average before: ${loads(loadBefore)}, after: ${loads(loadavg())} (the machine is shared: read ratios, not absolute figures)`,
  ];
}

/** How the fixed-rate runs were made. */
function latencyMethod(
  s: { readonly latencyRounds: number; readonly connections: number },
  latencies: readonly Latency[],
): string {
  const priority = latencies[0]?.result.priority;
  const how =
    "svc's socket client (bench/lib/fixed-rate.ts: each request timed from the tick or reply at which it fell due, queueing for a connection included; sends never wait for replies; due requests leave at each ~1 ms timer tick and after each reply" +
    (priority === undefined ? ')' : `; at nice ${priority})`);
  return (
    `Open loop: ${s.latencyRounds} interleaved rounds (the median round's percentiles reported), ${how}, up to ${s.connections} connections. ` +
    "Waiting for a core: the time the process's threads were runnable but on a run queue (the kernel's schedstat), per second of the run; " +
    'µs per wait: that time over the times they were put on a core (median round); on a core per req: those times per request (a process that sleeps between requests pays a wake-up, and cold caches, for each); ksoftirqd: the kernel threads that take over deferred network work (loopback packets wait for them); major faults: page faults of the proxy that waited for a read from disk; helper threads: CPU of the threads of the proxy other than its main one (the concurrent collector and compiler of V8, the pool of libuv); generator stalls: times the event loop of the socket client came back more than 2 ms after it last sent (the requests due meanwhile then leave together, a burst the proxy queues)'
  );
}

/** A fixed-rate run's generator stalls, `count / longest ms` ('-' when the generator did not report them). */
function stallText(run: FixedRateRun): string {
  return run.stalls === undefined ? '-' : `${run.stalls} / ${fixed(run.longestStallMs, 1)}`;
}

/** How many times a proxy's threads were put on a core per request, from its core waits over a run. */
export function onCorePerRequest(wait: CoreWait | undefined, requests: number): number | undefined {
  return wait === undefined || requests === 0 ? undefined : wait.slices / requests;
}

/**
 * The requests a fixed-rate run sent, its generator's warm-up included: the CPU and core-wait
 * readings around the run cover the warm-up too, so per-request and per-second figures divide by these.
 */
function requestsOf(run: FixedRateRun): number {
  return run.sent + (run.warmupSent ?? 0);
}

/** How long a fixed-rate run lasted, its warm-up included, in seconds. */
function runSeconds(run: FixedRateRun): number {
  return requestsOf(run) / run.rate;
}

/** CPU seconds spent during a fixed-rate run as cores kept busy. */
function coresDuring(cpuSeconds: number | undefined, run: FixedRateRun): number | undefined {
  return cpuSeconds === undefined ? undefined : cpuSeconds / runSeconds(run);
}

/** A run's figure over the first row's (direct, the baseline every fixed-rate pass starts with). */
export function addedOverDirect(
  latencies: readonly Latency[],
  run: FixedRateRun | undefined,
  pick: (run: FixedRateRun) => number,
): number | undefined {
  const base = latencies[0]?.result;
  return base && run ? pick(run) - pick(base) : undefined;
}

/** How the processes of a fixed-rate pass sat on the cores: a short name for the title, a sentence for the method. */
export interface LatencyLayout {
  readonly name: string;
  readonly text: string;
}

/** The fixed-rate latency section: the first row is the baseline (direct) that added latency is measured against. */
export function latencySection(
  latencies: readonly Latency[],
  firstColumn: string,
  s: { readonly latencyRounds: number; readonly connections: number },
  layout?: LatencyLayout,
): string[] {
  const base = latencies[0]?.result;
  const cores = (cpuSeconds: number | undefined, run: FixedRateRun): string => fixed(coresDuring(cpuSeconds, run), 2);
  const msPerSecond = (seconds: number | undefined, run: FixedRateRun): string =>
    seconds === undefined ? '-' : fixed((seconds * 1000) / runSeconds(run), 1);
  const waitPerSecond = (wait: CoreWait | undefined, run: FixedRateRun): string => msPerSecond(wait?.waitSeconds, run);
  const waitEach = (wait: CoreWait | undefined): string =>
    wait === undefined || wait.slices === 0 ? '-' : fixed((wait.waitSeconds * 1e6) / wait.slices, 0);
  const table = markdownTable(
    [
      firstColumn,
      'completed / sent',
      'p50 ms',
      'p90 ms',
      'p99 ms',
      'p99 of each round ms',
      'non-2xx / errors',
      'p50 added over direct ms',
      'p99 added over direct ms',
      'proxy cores',
      'proxy CPU µs/req',
      'proxy on a core per req',
      'proxy waiting for a core ms/s, each round',
      'µs per wait',
      'backend waiting ms/s',
      'ksoftirqd waiting ms/s, each round',
      'proxy major faults, each round',
      'proxy helper threads ms/s, each round',
      'generator cores',
      'generator stalls > 2 ms, each round (count / longest ms)',
    ],
    latencies.map(({ target, result, rounds }) => [
      target.name,
      `${result.completed} / ${result.sent}`,
      fixed(result.p50Ms, 2),
      fixed(result.p90Ms, 2),
      fixed(result.p99Ms, 2),
      rounds.map((r) => fixed(r.p99Ms, 2)).join(', '),
      `${result.non2xx} / ${result.errors}`,
      fixed(
        addedOverDirect(latencies, result, (r) => r.p50Ms),
        2,
      ),
      fixed(
        addedOverDirect(latencies, result, (r) => r.p99Ms),
        2,
      ),
      cores(result.proxyCpuSeconds, result),
      fixed(perRequestUs(result.proxyCpuSeconds, requestsOf(result)), 0),
      fixed(onCorePerRequest(result.proxyWait, requestsOf(result)), 2),
      rounds.map((r) => waitPerSecond(r.proxyWait, r)).join(', '),
      waitEach(result.proxyWait),
      waitPerSecond(result.backendWait, result),
      rounds.map((r) => waitPerSecond(r.softirqWait, r)).join(', '),
      rounds.map((r) => (r.proxyMajorFaults === undefined ? '-' : String(r.proxyMajorFaults))).join(', '),
      rounds.map((r) => msPerSecond(r.proxyHelperCpuSeconds, r)).join(', '),
      cores(result.generatorCpuSeconds, result),
      rounds.map(stallText).join(', '),
    ]),
  );
  const title = `## Latency at a fixed rate (${base?.rate ?? '-'} req/s${layout ? `, ${layout.name}` : ''})`;
  return [
    title,
    '',
    `${latencyMethod(s, latencies)}${layout ? `; ${layout.text}` : ''}.`,
    '',
    table,
    ...outlierRounds(latencies),
  ];
}

/**
 * The rounds whose p99 stands out (over three times the contender's median round, and over 5 ms),
 * each with the processes that used the most CPU during it and during the median round: what else
 * had the cores when a tail went wrong.
 */
function outlierRounds(latencies: readonly Latency[]): string[] {
  const busiest = (run: FixedRateRun): string =>
    (run.busiest ?? []).map((p) => `${p.name} [${p.pid}] ${fixed(p.seconds / runSeconds(run), 2)}`).join(', ') || '-';
  const machine = (run: FixedRateRun): string => {
    const m = run.machine;
    if (!m) return '';
    const seconds = runSeconds(run);
    const kinds = ['user', 'system', 'softirq', 'irq', 'steal', 'iowait', 'idle'] as const;
    return ` (machine: ${kinds.map((kind) => `${kind} ${fixed(m[kind] / seconds, 2)}`).join(', ')})`;
  };
  const lines = latencies.flatMap(({ target, result, rounds }) =>
    rounds.flatMap((run, i) =>
      run.p99Ms > Math.max(3 * result.p99Ms, 5)
        ? [
            `- ${target.name}, round ${i + 1}: p99 ${fixed(run.p99Ms, 2)} ms: ${busiest(run)}${machine(run)}; ` +
              `median round (${fixed(result.p99Ms, 2)} ms): ${busiest(result)}${machine(result)}`,
          ]
        : [],
    ),
  );
  if (lines.length === 0) return [];
  return [
    '',
    'Rounds whose p99 was over three times the median round and over 5 ms, with the processes that used the most CPU during them, in cores (the load generator has exited by then: it is the generator column), and the CPU time of the whole machine by kind, in cores:',
    '',
    ...lines,
  ];
}

/** A fixed-rate p99 beyond which the proxy did not keep up with the rate. */
const FELL_BEHIND_MS = 1000;

/** A proxy's CPU per request at saturation and at one fixed rate, and the share of a core that rate keeps busy. */
export interface CostAtRate {
  readonly saturationUs: number;
  readonly fixedUs: number;
  /** fixedUs over saturationUs. */
  readonly ratio: number;
  /** Cores the proxy kept busy during the fixed-rate run (its CPU per request there times the rate). */
  readonly busyCores: number;
}

/** Undefined for a contender without a proxy of its own (direct) or whose CPU could not be read in either run. */
export function costAtRate(saturation: Measured | undefined, run: FixedRateRun | undefined): CostAtRate | undefined {
  const saturationUs = saturation && cpuPerRequestUs(saturation);
  const fixedUs = run && perRequestUs(run.proxyCpuSeconds, requestsOf(run));
  const busyCores = run && coresDuring(run.proxyCpuSeconds, run);
  if (saturationUs === undefined || fixedUs === undefined || busyCores === undefined || saturationUs === 0)
    return undefined;
  return { saturationUs, fixedUs, ratio: fixedUs / saturationUs, busyCores };
}

/**
 * Each proxy's CPU per request at saturation beside its cost at each fixed rate of the run: a
 * proxy whose requests stop sharing wake-ups and system calls when they arrive one at a time
 * pays more for each, so a rate named as a fraction of its saturation keeps more of a core busy
 * than that fraction (at half its saturation rate, half the ratio), and a queue's tail grows with it.
 */
export function costAtRateSection(
  results: readonly Measured[],
  sets: readonly { readonly latencies: readonly Latency[]; readonly layout?: LatencyLayout }[],
): string[] {
  const columns = sets.map(
    (set) => `at ${set.latencies[0]?.result.rate ?? '-'} req/s${set.layout ? `, ${set.layout.name}` : ''}`,
  );
  const rows = results.flatMap((saturation) => {
    const runs = sets.map((set) => set.latencies.find((l) => l.target === saturation.target)?.result);
    const costs = runs.map((run) => costAtRate(saturation, run));
    if (costs.every((c) => c === undefined)) return [];
    const at = (c: CostAtRate | undefined, run: FixedRateRun | undefined): string =>
      c === undefined || run === undefined
        ? '-'
        : `${fixed(c.fixedUs, 0)} µs (${fixed(c.ratio, 2)}×), ${fixed(c.busyCores, 2)} cores${run.p99Ms > FELL_BEHIND_MS ? ' (fell behind)' : ''}`;
    return [[saturation.target.name, fixed(cpuPerRequestUs(saturation), 0), ...costs.map((c, i) => at(c, runs[i]))]];
  });
  if (rows.length === 0) return [];
  return [
    '## CPU per request at a fixed rate against saturation',
    '',
    "Each proxy's CPU per request at saturation, then at each fixed rate: µs per request (over its saturation figure), and the cores the proxy kept busy at that rate. " +
      'At saturation requests share wake-ups of the event loop and its system calls; at a fixed rate below it each pays its own, so a rate named as a fraction of saturation keeps more of a core busy than the fraction says (at half of it, half the ratio), and the tail of the queue grows with that load. ' +
      `A proxy that fell behind the rate (p99 over ${FELL_BEHIND_MS / 1000} s) went on working through its queue after the run: its figures there are not a steady state.`,
    '',
    markdownTable(['configuration', 'CPU µs/req at saturation', ...columns], rows),
  ];
}
