import { barChartSvg } from './chart.ts';
import type { ProfileSummary } from './cpu-profile.ts';
import type { DownloadResult } from './download.ts';
import type { LoadArgs } from './load-args.ts';
import type { Latency, Measured, Target } from './measure.ts';
import {
  cpuPerRequestUs,
  fixed,
  latencySection,
  machineLines,
  markdownTable,
  mib,
  perRequestUs,
  ratio,
} from './report.ts';

/**
 * The plain-Node floors' saturation runs (bench/lib/tunnel-floors.ts): one proxy process, and two
 * processes with HTTP/2 between them (the tunnel's shape).
 */
export interface FloorResults {
  readonly oneProcess: Measured;
  readonly tunnelShape: Measured;
}

/** bench/tunnel.ts's settings; `rate` undefined (`--rate auto`): half of the slowest contender's saturation rate. */
export interface TunnelSettings extends LoadArgs {
  readonly rounds: number;
  readonly mib: number;
  readonly profile: boolean;
  /** Node flags added to every svc process (`--node-flags`). */
  readonly nodeFlags: readonly string[];
}

/** A bulk transfer direction: `/big?mib=N` down, a POST of N MiB up. */
export type Direction = 'download' | 'upload';

/** The rounds of one direction through one contender. */
export interface Transfers {
  readonly target: Target;
  readonly direction: Direction;
  readonly runs: DownloadResult[];
  /** CPU seconds of each proxy process over all rounds, in `proxyPids` order; undefined if unreadable. */
  proxyCpuSecondsEach: number[] | undefined;
  /** Peak RSS of each proxy process during a transfer (VmHWM reset before each round), KiB. */
  peakRssKiBEach: number[];
}

/** The processes that were profiled, and how the report names them. */
export const PROFILED = {
  installation: 'Installation (`svc controller`: frontend + tunnel endpoint)',
  agent: 'Agent on the direct transport (`svc serve`, enabled)',
  agentWs: 'Agent on the WebSocket transport (`SVC_TUNNEL_TRANSPORT=websocket`)',
  serve: '`svc serve`, no tunnel (frontend)',
  floorVisitor: "Floor B, the visitor's side (plain Node: HTTP/1.1 in, HTTP/2 streams out)",
  floorBackend: "Floor B, the backend's side (plain Node: HTTP/2 streams in, HTTP/1.1 pool out)",
  floorOne: 'Floor A (plain Node: HTTP/1.1 in, HTTP/1.1 pool out)',
} as const;
export type Profiles = Record<keyof typeof PROFILED, ProfileSummary>;

const median = (values: readonly number[]): number | undefined => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
};

const medianRate = (t: Transfers | undefined): number | undefined => median(t?.runs.map((r) => r.mibPerSecond) ?? []);

/** CPU ms per MiB moved of the proxy process at `index` (0: the first proxy, the installation for a tunnel). */
function cpuMsPerMiB(t: Transfers | undefined, mibEach: number, index?: number): number | undefined {
  const each = t?.proxyCpuSecondsEach;
  if (!t || !each || each.length === 0) return undefined;
  const seconds = index === undefined ? each.reduce((a, b) => a + b, 0) : each[index];
  return seconds === undefined ? undefined : (seconds / (t.runs.length * mibEach)) * 1000;
}

/** Saturation req/s, proxy CPU per request, fixed-rate p99 and transfer throughput (docs/benchmarks/tunnel.svg). */
export function tunnelChart(
  results: readonly Measured[],
  floors: FloorResults,
  latencies: readonly Latency[],
  bulk: readonly Transfers[],
): string {
  const saturated = inTableOrder(results, floors);
  const rate = (direction: Direction) => ({
    title: `100 MiB ${direction}, median of the rounds (higher is better)`,
    unit: 'MiB/s',
    bars: bulk.filter((t) => t.direction === direction).map((t) => ({ label: t.target.name, value: medianRate(t) })),
  });
  return barChartSvg(
    `Tunnel vs frontend vs direct, one run (${new Date().toISOString().slice(0, 16)} UTC, loaded machine)`,
    [
      {
        title: 'Requests/s at saturation (higher is better)',
        unit: 'req/s',
        bars: saturated.map((r) => ({ label: r.target.name, value: r.load.requestsPerSecond })),
      },
      {
        title: 'Proxy CPU per request, all proxying processes (lower is better)',
        unit: 'µs',
        bars: saturated
          .filter((r) => r.proxyCpuSeconds !== undefined)
          .map((r) => ({ label: r.target.name, value: cpuPerRequestUs(r) })),
      },
      {
        title: `p99 latency at a fixed ${latencies[0]?.result.rate ?? '-'} req/s (lower is better)`,
        unit: 'ms',
        bars: latencies.map((l) => ({ label: l.target.name, value: l.result.p99Ms })),
      },
      rate('download'),
      rate('upload'),
    ],
  );
}

/**
 * The targets for each tunnel contender (results from index 2 on), as same-run ratios: the
 * frontend is contender 1, direct contender 0; "installation" is a tunnel's first proxy process.
 */
function targetRows(
  s: TunnelSettings,
  results: readonly Measured[],
  floors: FloorResults,
  latencies: readonly Latency[],
  bulk: readonly Transfers[],
): string[][] {
  const [direct, frontend] = results;
  const of = (target: Target, direction: Direction) =>
    bulk.find((t) => t.target === target && t.direction === direction);
  const installationUs = (r: Measured) => perRequestUs(r.proxyCpuSecondsEach?.[0], r.load.requests);
  const frontendUs = frontend ? cpuPerRequestUs(frontend) : undefined;
  const frontendMiB = (d: Direction) => (frontend ? cpuMsPerMiB(of(frontend.target, d), s.mib, 0) : undefined);
  const directRate = (d: Direction) => (direct ? medianRate(of(direct.target, d)) : undefined);
  const p50 = (i: number) => latencies[i]?.result.p50Ms;
  return results.slice(2).flatMap((r, k) => {
    const i = k + 2;
    const added = (p50(i) ?? NaN) - (p50(0) ?? NaN);
    const perDirection = (d: Direction) => [
      ratio(medianRate(of(r.target, d)), directRate(d)),
      ratio(cpuMsPerMiB(of(r.target, d), s.mib, 0), frontendMiB(d)),
    ];
    const [downRate, downCpu] = perDirection('download');
    const [upRate, upCpu] = perDirection('upload');
    return [
      [
        r.target.name,
        ratio(r.load.requestsPerSecond, frontend?.load.requestsPerSecond),
        ratio(r.load.requestsPerSecond, floors.tunnelShape.load.requestsPerSecond),
        ratio(installationUs(r), frontendUs),
        downRate ?? '-',
        upRate ?? '-',
        `${downCpu} / ${upCpu}`,
        fixed(added, 2),
      ],
    ];
  });
}

/** The report of one run (docs/benchmarks/tunnel.md). */
export function formatTunnelReport(
  s: TunnelSettings,
  results: readonly Measured[],
  floors: FloorResults,
  latencies: readonly Latency[],
  bulk: readonly Transfers[],
  loadBefore: number[],
  profiles: Profiles | undefined,
): string {
  const names = results.map((r) => r.target.name);
  return [
    `# Tunnel benchmark — last ${s.profile ? 'profiled ' : ''}run`,
    '',
    'Written by `npm run bench:tunnel' +
      (s.profile ? ' -- --profile`' : '`') +
      ' (bench/tunnel.ts); see docs/benchmarks.md ("Tunnel") for the method and the reading.',
    '',
    ...(s.profile
      ? [
          '**Profiled run**: the svc processes ran under `node --cpu-prof`, which costs CPU of its own; the figures below are for the top frames, not for comparison with an unprofiled run.',
        ]
      : ['![Requests/s, proxy CPU per request, fixed-rate p99 and transfer throughput of each contender](tunnel.svg)']),
    '',
    ...machineLines(loadBefore),
    ...(s.nodeFlags.length ? [`- svc processes ran with the extra Node flags \`${s.nodeFlags.join(' ')}\``] : []),
    `- contenders, in turn, same backend (node:http, its own process, 64-byte body; \`/big\` streams ${s.mib} MiB, a POST is read whole before the answer): ${names.join('; ')}`,
    `- floors, saturation only (bench/lib/http-floor.ts, plain Node, none of svc's code, heads parsed off the socket): ${floors.oneProcess.target.name}; ${floors.tunnelShape.target.name} (HTTP/1.1 in, one stream per request on one HTTP/2 session, a kept-alive HTTP/1.1 pool to the backend)`,
    `- saturation: ${s.tool}, ${s.connections} keep-alive connections, ${s.warmupSeconds} s warm-up + ${s.durationSeconds} s per contender, 127.0.0.1`,
    `- latency: open loop at ${latencies[0]?.result.rate ?? '-'} req/s (${s.rate === undefined ? 'half of the slowest contender' : 'set by --rate'}) for ${s.durationSeconds} s per contender`,
    `- transfers: ${s.rounds} interleaved rounds of one ${s.mib} MiB GET, then of one ${s.mib} MiB POST, per contender on a fresh connection`,
    '',
    '## Targets, same-run ratios',
    '',
    markdownTable(
      [
        'tunnel',
        'req/s vs frontend (≥ 0.8×)',
        'req/s vs floor B (same shape, plain Node)',
        'installation CPU/req vs frontend (≤ 1.2×)',
        `${s.mib} MiB down vs direct (≥ 0.6×)`,
        `${s.mib} MiB up vs direct (≥ 0.6×)`,
        'installation CPU/MiB vs frontend, down / up (≤ 1.5×)',
        'p50 added over direct at the fixed rate, ms (≤ 1)',
      ],
      targetRows(s, results, floors, latencies, bulk),
    ),
    '',
    '## Saturation',
    '',
    saturationTable(results, floors),
    '',
    ...latencySection(latencies, 'contender', s),
    '',
    `## ${s.mib} MiB transfers`,
    '',
    transferTable(s, bulk),
    '',
    ...(profiles ? formatProfiles(profiles) : []),
  ].join('\n');
}

/** Direct, the frontend, the floors, then the tunnels: each tunnel next to the floor of its shape. */
function inTableOrder(results: readonly Measured[], floors: FloorResults): Measured[] {
  return [...results.slice(0, 2), floors.oneProcess, floors.tunnelShape, ...results.slice(2)];
}

function saturationTable(results: readonly Measured[], floors: FloorResults): string {
  const direct = results[0]?.load;
  const frontend = results[1]?.load;
  const floorB = floors.tunnelShape.load;
  const rows = inTableOrder(results, floors).map((r) => [
    r.target.name,
    fixed(r.load.requestsPerSecond, 0),
    ratio(r.load.requestsPerSecond, direct?.requestsPerSecond),
    ratio(r.load.requestsPerSecond, frontend?.requestsPerSecond),
    ratio(r.load.requestsPerSecond, floorB.requestsPerSecond),
    fixed(r.load.p50Ms, 2),
    fixed(r.load.p99Ms, 2),
    `${r.load.non2xx} / ${r.load.errors}`,
    fixed(cpuPerRequestUs(r), 0),
    (r.proxyCpuSecondsEach?.length ?? 0) > 1
      ? (r.proxyCpuSecondsEach ?? []).map((c) => fixed(perRequestUs(c, r.load.requests), 0)).join(' + ')
      : '',
    fixed(perRequestUs(r.loadCpuSeconds, r.load.requests), 0),
    (r.peakRssKiBEach?.length ?? 0) > 1
      ? `${mib(r.peakRssKiB)} (${(r.peakRssKiBEach ?? []).map((k) => mib(k)).join(' + ')})`
      : mib(r.peakRssKiB),
  ]);
  return markdownTable(
    [
      'contender',
      'req/s',
      'vs direct',
      'vs frontend',
      'vs floor B',
      'p50 ms',
      'p99 ms',
      'non-2xx / errors',
      'proxy CPU µs/req',
      'µs/req per process (installation + agent; floor B: visitor side + backend side)',
      'load gen CPU µs/req',
      'proxy peak RSS (installation + agent)',
    ],
    rows,
  );
}

function transferTable(s: TunnelSettings, bulk: readonly Transfers[]): string {
  const rows = bulk.map((t) => {
    const direct = bulk.find((d) => d.direction === t.direction);
    const each = t.proxyCpuSecondsEach ?? [];
    return [
      `${t.direction}: ${t.target.name}`,
      t.runs.map((r) => fixed(r.mibPerSecond, 0)).join(', '),
      fixed(medianRate(t), 0),
      ratio(medianRate(t), medianRate(direct)),
      each.length > 0 ? fixed(cpuMsPerMiB(t, s.mib), 1) : '-',
      each.length > 1 ? each.map((_, k) => fixed(cpuMsPerMiB(t, s.mib, k), 1)).join(' + ') : '',
      t.peakRssKiBEach.map((k) => mib(k)).join(' + ') || '-',
    ];
  });
  return markdownTable(
    [
      'direction: contender',
      'MiB/s per round',
      'median MiB/s',
      'vs direct',
      'proxy CPU ms per MiB',
      'installation + agent ms per MiB',
      'peak RSS during it (installation + agent)',
    ],
    rows,
  );
}

function formatProfiles(profiles: Profiles): string[] {
  const pct = (share: number): string => `${(share * 100).toFixed(1)} %`;
  return (Object.keys(PROFILED) as (keyof typeof PROFILED)[]).flatMap((key) => {
    const p = profiles[key];
    return [
      `## Profile: ${PROFILED[key]}`,
      '',
      `Busy (non-idle) samples: ${fixed(p.busyMs, 0)} ms over the whole run (start-up included). Self time:`,
      '',
      markdownTable(
        ['function (self time)', 'share of busy'],
        p.frames.map((f) => [f.name, pct(f.share)]),
      ),
      '',
      markdownTable(
        ['module (self time)', 'share of busy'],
        p.modules.map((m) => [m.name, pct(m.share)]),
      ),
      '',
    ];
  });
}
