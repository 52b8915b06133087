import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { measure, type LoadSettings, type Measured, type Target } from './measure.ts';
import { cpuPerRequestUs, fixed, markdownTable, median } from './report.ts';

/**
 * Contenders measured in short alternating runs (A, B, C, A, B, C, …) rather than one long run
 * each: on a shared machine a contender's CPU per request moves by ±30 % between runs minutes
 * apart, more than the gaps the benchmark is after. Interleaved, a burst of other load falls on
 * one round of each, and the median of the per-round ratios is what is compared.
 */
export interface PairedRounds {
  readonly names: readonly string[];
  /** `runs[round][contender]`. */
  readonly runs: readonly (readonly Measured[])[];
  /** How the processes were pinned to cores, when they were. */
  readonly pinned?: string;
}

export async function pairedRounds(
  s: LoadSettings,
  targets: readonly Target[],
  rounds: number,
  backendPid: number,
  pin: boolean,
): Promise<PairedRounds> {
  // Pinned, each proxy has the last core to itself and the load generator and backend share the
  // others: the proxy's CPU per request then depends far less on how the scheduler interleaves
  // three busy processes on two cores (which changes how many requests each wake-up handles).
  const pinned = pin ? pinTargets(targets, backendPid) : undefined;
  const runs: Measured[][] = [];
  for (let round = 1; round <= rounds; round += 1) {
    const row: Measured[] = [];
    for (const target of targets) {
      process.stderr.write(`${target.name}: ${s.durationSeconds}s (paired round ${round}/${rounds})\n`);
      row.push(await measure(s, target, backendPid));
    }
    runs.push(row);
  }
  pinned?.restore();
  return { names: targets.map((t) => t.name), runs, ...(pinned ? { pinned: pinned.text } : {}) };
}

/** Every contender's proxy processes on the last core, the backend and this process on the others (pinProcesses). */
export function pinTargets(targets: readonly Target[], backendPid: number): ReturnType<typeof pinProcesses> {
  return pinProcesses([...new Set(targets.flatMap((t) => t.proxyPids()))], [backendPid]);
}

/**
 * Every thread of the proxies on the last core; this process (so the load generator it spawns) and
 * `others` on the rest. Undefined on one core or without taskset.
 */
export function pinProcesses(
  proxies: readonly number[],
  others: readonly number[],
): { text: string; restore(): void } | undefined {
  const cores = availableParallelism();
  if (cores < 2) return undefined;
  const last = String(cores - 1);
  const rest = cores === 2 ? '0' : `0-${cores - 2}`;
  const all = `0-${cores - 1}`;
  const rested = [process.pid, ...others];
  const set = (cpus: string, pids: readonly number[]): void => {
    for (const pid of pids) execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
  };
  try {
    set(last, proxies);
    set(rest, rested);
  } catch {
    return undefined;
  }
  return {
    text: `each proxy pinned to CPU ${last}, the load generator and the backend to CPU ${rest} (taskset)`,
    restore: () => set(all, [...proxies, ...rested]),
  };
}

/** Per round, a contender's CPU per request over a reference contender's. */
export function roundRatios(paired: PairedRounds, contender: number, referenceIndex = 0): number[] {
  const ratios: number[] = [];
  for (const row of paired.runs) {
    const reference = row[referenceIndex] && cpuPerRequestUs(row[referenceIndex]);
    const other = row[contender] && cpuPerRequestUs(row[contender]);
    if (reference !== undefined && other !== undefined && reference > 0) ratios.push(other / reference);
  }
  return ratios;
}

/**
 * A Markdown section: every run's req/s and CPU per request, the medians, and each other
 * contender's median per-round ratio to each of the `references` (contender indexes).
 */
export function pairedSection(
  title: string,
  paired: PairedRounds,
  durationSeconds: number,
  references: readonly number[] = [0],
): string {
  const header = ['round', ...paired.names.flatMap((n) => [`${n} req/s`, `${n} µs CPU/req`])];
  const rows = paired.runs.map((row, i) => [
    String(i + 1),
    ...row.flatMap((m) => [fixed(m.load.requestsPerSecond, 0), fixed(cpuPerRequestUs(m), 0)]),
  ]);
  const column = (i: number, pick: (m: Measured) => number | undefined): number[] =>
    paired.runs.map((row) => (row[i] ? pick(row[i]) : undefined)).filter((v): v is number => v !== undefined);
  rows.push([
    'median',
    ...paired.names.flatMap((_, i) => [
      fixed(median(column(i, (m) => m.load.requestsPerSecond)), 0),
      fixed(median(column(i, cpuPerRequestUs)), 0),
    ]),
  ]);
  const verdicts = references.flatMap((r) =>
    paired.names.flatMap((name, c) => {
      if (references.includes(c)) return [];
      const ratios = roundRatios(paired, c, r);
      const range =
        ratios.length > 0 ? ` (rounds ${fixed(Math.min(...ratios), 2)}–${fixed(Math.max(...ratios), 2)})` : '';
      return [
        `- ${name}: **${fixed(median(ratios), 2)}×** the CPU per request of ${paired.names[r]}, median of ${ratios.length} rounds${range}`,
      ];
    }),
  );
  return [
    `### ${title}`,
    '',
    `${paired.runs.length} rounds of ${durationSeconds} s each, the contenders in turn within a round; ${paired.pinned ?? 'not pinned to cores'}.`,
    '',
    markdownTable(header, rows),
    '',
    ...verdicts,
    '',
  ].join('\n');
}
