/**
 * `npm run bench:tunnel` — what publishing through the installation's tunnel costs, against the
 * same backend reached directly and through today's single-machine path, in one run (issue #9):
 *
 *   direct     the backend (bench/lib/fixed-backend.ts, its own process)
 *   frontend   `svc serve` with a public share of the backend, requests to its own frontend
 *   tunnel     an installation (`svc controller --config` with a frontend section) and an agent
 *              (`svc serve`, `svc enable <account token> --api-endpoint <installation>`) publishing a
 *              public share of the backend; requests go to the installation's frontend, which
 *              forwards them over the agent's outbound tunnel (HTTP/2 over a WebSocket)
 *
 * Each contender in turn: requests/s at saturation (wrk or autocannon, keep-alive), latency at one
 * fixed arrival rate below saturation (open loop, bench/lib/fixed-rate.ts), CPU per request of the
 * proxying processes and of the load generator, peak RSS; then rounds of a 100 MiB download
 * through each. `--profile` runs the three svc processes under `node --cpu-prof` and reports their
 * top frames instead (to docs/benchmarks/tunnel-profile.md: the profiler skews the figures).
 *
 *   npm run bench:tunnel -- [--duration 4] [--warmup 1] [--connections 32] [--rate auto|N]
 *                           [--rounds 3] [--mib 100] [--load auto|autocannon|wrk] [--profile]
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { barChartSvg } from './lib/chart.ts';
import { summarizeProfiles, type ProfileSummary } from './lib/cpu-profile.ts';
import { download, type DownloadResult } from './lib/download.ts';
import type { FixedBackend } from './lib/fixed-backend.ts';
import { request } from './lib/http.ts';
import { intArg, loadArgs, loadOptions, type LoadArgs } from './lib/load-args.ts';
import {
  checkTarget,
  cpuSecondsOf,
  fixedRateRounds,
  measure,
  reportFailures,
  type Latency,
  type Measured,
  type Target,
} from './lib/measure.ts';
import {
  installCleanup,
  removeScratchDir,
  scratchDir,
  startModule,
  stopAll,
  type BenchProcess,
} from './lib/processes.ts';
import {
  cpuPerRequestUs,
  fixed,
  latencySection,
  machineLines,
  markdownTable,
  mib,
  perRequestUs,
  ratio,
  writeMarkdown,
} from './lib/report.ts';
import {
  sharePublic,
  startSvcInstallation,
  startSvcServe,
  svcCommand,
  waitForOutput,
  type SvcInstallation,
  type SvcServe,
} from './lib/svc.ts';

const DOCS = fileURLToPath(new URL('../docs/benchmarks/', import.meta.url));
const BACKEND_MODULE = fileURLToPath(new URL('./lib/fixed-backend.ts', import.meta.url));
const DOMAIN = 'tunnel.localhost';

/** `rate` undefined (`--rate auto`): half of the slowest contender's saturation rate. */
interface Settings extends LoadArgs {
  readonly rounds: number;
  readonly mib: number;
  readonly profile: boolean;
}

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      ...loadOptions({ duration: '4', warmup: '1' }),
      rounds: { type: 'string', default: '3' },
      mib: { type: 'string', default: '100' },
      profile: { type: 'boolean', default: false },
    },
  });
  return {
    ...loadArgs(values),
    rounds: intArg('rounds', values.rounds, 1, 20),
    mib: intArg('mib', values.mib, 1, 10_000),
    profile: values.profile,
  };
}

/** The svc processes of the run: the single-machine `svc serve`, the installation and the agent. */
interface Svc {
  readonly serve: SvcServe;
  readonly installation: SvcInstallation;
  readonly agent: SvcServe;
  readonly frontendShare: URL;
  readonly tunnelShare: URL;
  readonly profileDirs: Record<'serve' | 'installation' | 'agent', string>;
}

/**
 * Starts the three svc processes, enables the agent at the installation and shares the backend
 * publicly on both `svc serve`s; resolves once the tunnelled share answers at the installation.
 */
async function startSvc(dir: string, backend: string, profile: boolean): Promise<Svc> {
  const profileDirs = {
    serve: join(dir, 'profile-serve'),
    installation: join(dir, 'profile-installation'),
    agent: join(dir, 'profile-agent'),
  };
  const nodeFlags = (name: keyof typeof profileDirs): string[] =>
    profile ? ['--cpu-prof', '--cpu-prof-dir', profileDirs[name]] : [];
  const dataDir = (name: string): string => join(dir, name);
  const [serve, installation, agent] = await Promise.all([
    startSvcServe({ name: 'svc serve', dataDir: dataDir('serve'), nodeFlags: nodeFlags('serve') }),
    startSvcInstallation({
      name: 'installation',
      dataDir: dataDir('installation'),
      domain: DOMAIN,
      nodeFlags: nodeFlags('installation'),
    }),
    startSvcServe({ name: 'agent', dataDir: dataDir('agent'), nodeFlags: nodeFlags('agent') }),
  ]);
  const account = (
    await svcCommand(['admin', 'create', 'account', 'bench@example.com', '--data-dir', dataDir('installation')])
  ).trim();
  await svcCommand([
    'enable',
    account,
    '--api-endpoint',
    installation.ready.apiEndpoint,
    '--data-dir',
    dataDir('agent'),
  ]);
  await waitForOutput(agent, /tunnel: connected to the installation/);
  const [frontendShare, tunnelShare] = await Promise.all([
    sharePublic(dataDir('serve'), backend),
    sharePublic(dataDir('agent'), backend),
  ]);
  if (tunnelShare.url.port !== String(installation.ready.frontendPort))
    throw new Error(`the agent's share is not at the installation's frontend: ${tunnelShare.url.href}`);
  // Publishing reaches the installation's registry asynchronously.
  for (let i = 0; ; i += 1) {
    const reply = await request(tunnelShare.url).catch(() => undefined);
    if (reply?.status === 200) break;
    if (i === 100) throw new Error(`the tunnelled share did not answer 200 (last status ${reply?.status})`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { serve, installation, agent, frontendShare: frontendShare.url, tunnelShare: tunnelShare.url, profileDirs };
}

/** A share URL as a load target: connect to 127.0.0.1 at its port, its host in the Host header. */
function viaHost(name: string, share: URL, proxies: readonly BenchProcess<unknown>[]): Target {
  return {
    name,
    url: `http://127.0.0.1:${share.port}/`,
    headers: { host: share.host },
    proxyPids: () => proxies.map((p) => p.pid),
    memoryPids: () => proxies.map((p) => p.pid),
  };
}

interface Downloads {
  readonly target: Target;
  readonly runs: DownloadResult[];
  /** CPU seconds of the proxy processes over all rounds. */
  proxyCpuSeconds: number | undefined;
}

/** `rounds` interleaved downloads of `/big?mib=N` through every contender, with the proxies' CPU. */
async function downloads(s: Settings, targets: readonly Target[]): Promise<Downloads[]> {
  const out: Downloads[] = targets.map((target) => ({ target, runs: [], proxyCpuSeconds: 0 }));
  for (let round = 0; round < s.rounds; round += 1) {
    for (const d of out) {
      process.stderr.write(`${d.target.name}: ${s.mib} MiB download, round ${round + 1}/${s.rounds}\n`);
      // Same port as the target URL; the Host header (where one is set) picks the share.
      const url = new URL(`/big?mib=${s.mib}`, `http://${d.target.headers.host ?? new URL(d.target.url).host}`);
      const pids = d.target.proxyPids();
      const before = cpuSecondsOf(pids);
      d.runs.push(await download(url, s.mib * 2 ** 20));
      const after = cpuSecondsOf(pids);
      d.proxyCpuSeconds =
        before === undefined || after === undefined || d.proxyCpuSeconds === undefined
          ? undefined
          : d.proxyCpuSeconds + after - before;
    }
  }
  return out;
}

async function main(): Promise<number> {
  const s = settings();
  installCleanup();
  const dir = scratchDir('svc-bench-tunnel-');
  const loadBefore = loadavg();
  try {
    const backend = await startModule<FixedBackend>('backend', BACKEND_MODULE, 'startFixedBackend', {});
    const svc = await startSvc(dir, backend.ready.url, s.profile);
    const targets: Target[] = [
      { name: 'direct (backend)', url: backend.ready.url, headers: {}, proxyPids: () => [] },
      viaHost('frontend, no tunnel (svc serve)', svc.frontendShare, [svc.serve]),
      viaHost('tunnel (installation + agent)', svc.tunnelShare, [svc.installation, svc.agent]),
    ];
    for (const t of targets) await checkTarget(t);

    const results: Measured[] = [];
    for (const target of targets) {
      process.stderr.write(
        `${target.name}: ${s.warmupSeconds}s warm-up, ${s.durationSeconds}s at ${s.connections} connections (${s.tool})\n`,
      );
      results.push(await measure(s, target, backend.pid));
    }
    const slowest = Math.min(...results.map((r) => r.load.requestsPerSecond));
    const rate = s.rate ?? Math.max(1, Math.floor(slowest / 2));
    const latencies = await fixedRateRounds({ ...s, backendPid: backend.pid }, targets, rate, s.latencyRounds);
    const transfers = await downloads(s, targets);

    // Stopped in this order so the profiles are written (a clean exit) and no tunnel reconnects.
    await svc.agent.stop(15_000);
    await svc.installation.stop(15_000);
    await svc.serve.stop(15_000);
    const profiles = s.profile
      ? {
          installation: summarizeProfiles(svc.profileDirs.installation),
          agent: summarizeProfiles(svc.profileDirs.agent),
          serve: summarizeProfiles(svc.profileDirs.serve),
        }
      : undefined;

    const report = formatReport(s, results, latencies, transfers, loadBefore, profiles);
    process.stdout.write(report);
    const file = join(DOCS, s.profile ? 'tunnel-profile.md' : 'tunnel.md');
    await writeMarkdown(file, report);
    if (!s.profile) writeFileSync(join(DOCS, 'tunnel.svg'), chart(results, latencies, transfers));
    process.stderr.write(`written to ${file}${s.profile ? '' : ' and tunnel.svg'}\n`);
    return reportFailures(results, latencies) > 0 ? 1 : 0;
  } finally {
    await stopAll();
    removeScratchDir(dir);
  }
}

const median = (values: readonly number[]): number | undefined => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
};

/** Saturation req/s, proxy CPU per request, fixed-rate p99 and download throughput (docs/benchmarks/tunnel.svg). */
function chart(results: readonly Measured[], latencies: readonly Latency[], transfers: readonly Downloads[]): string {
  return barChartSvg(
    `Tunnel vs frontend vs direct, one run (${new Date().toISOString().slice(0, 16)} UTC, loaded machine)`,
    [
      {
        title: 'Requests/s at saturation (higher is better)',
        unit: 'req/s',
        bars: results.map((r) => ({ label: r.target.name, value: r.load.requestsPerSecond })),
      },
      {
        title: 'Proxy CPU per request, all proxying processes (lower is better)',
        unit: 'µs',
        bars: results
          .filter((r) => r.proxyCpuSeconds !== undefined)
          .map((r) => ({ label: r.target.name, value: cpuPerRequestUs(r) })),
      },
      {
        title: `p99 latency at a fixed ${latencies[0]?.result.rate ?? '-'} req/s (lower is better)`,
        unit: 'ms',
        bars: latencies.map((l) => ({ label: l.target.name, value: l.result.p99Ms })),
      },
      {
        title: 'Download throughput, median of the rounds (higher is better)',
        unit: 'MiB/s',
        bars: transfers.map((d) => ({ label: d.target.name, value: median(d.runs.map((r) => r.mibPerSecond)) })),
      },
    ],
  );
}

function formatReport(
  s: Settings,
  results: readonly Measured[],
  latencies: readonly Latency[],
  transfers: readonly Downloads[],
  loadBefore: number[],
  profiles: Record<'installation' | 'agent' | 'serve', ProfileSummary> | undefined,
): string {
  const direct = results[0]?.load;
  const frontend = results[1]?.load;
  const rows = results.map((r) => [
    r.target.name,
    fixed(r.load.requestsPerSecond, 0),
    ratio(r.load.requestsPerSecond, direct?.requestsPerSecond),
    ratio(r.load.requestsPerSecond, frontend?.requestsPerSecond),
    fixed(r.load.p50Ms, 2),
    fixed(r.load.p99Ms, 2),
    `${r.load.non2xx} / ${r.load.errors}`,
    fixed(cpuPerRequestUs(r), 0),
    (r.proxyCpuSecondsEach?.length ?? 0) > 1
      ? (r.proxyCpuSecondsEach ?? []).map((c) => fixed(perRequestUs(c, r.load.requests), 0)).join(' + ')
      : '',
    fixed(r.proxyCpuSeconds === undefined ? undefined : r.proxyCpuSeconds / r.load.durationSeconds, 2),
    fixed(perRequestUs(r.backendCpuSeconds, r.load.requests), 0),
    fixed(perRequestUs(r.loadCpuSeconds, r.load.requests), 0),
    fixed(r.loadCpuSeconds === undefined ? undefined : r.loadCpuSeconds / r.load.durationSeconds, 2),
    (r.peakRssKiBEach?.length ?? 0) > 1
      ? `${mib(r.peakRssKiB)} (${(r.peakRssKiBEach ?? []).map((k) => mib(k)).join(' + ')})`
      : mib(r.peakRssKiB),
  ]);
  const directDownload = median(transfers[0]?.runs.map((r) => r.mibPerSecond) ?? []);
  const downloadRows = transfers.map((d) => {
    const m = median(d.runs.map((r) => r.mibPerSecond));
    return [
      d.target.name,
      d.runs.map((r) => fixed(r.mibPerSecond, 0)).join(', '),
      fixed(m, 0),
      ratio(m, directDownload),
      d.target.proxyPids().length > 0 && d.proxyCpuSeconds !== undefined
        ? fixed((d.proxyCpuSeconds / (d.runs.length * s.mib)) * 1000, 1)
        : '-',
    ];
  });
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
          '**Profiled run**: the three svc processes ran under `node --cpu-prof`, which costs CPU of its own; the figures below are for the top frames, not for comparison with an unprofiled run.',
        ]
      : ['![Requests/s, proxy CPU per request, fixed-rate p99 and download throughput of each contender](tunnel.svg)']),
    '',
    ...machineLines(loadBefore),
    `- contenders, in turn, same backend (node:http, its own process, 64-byte body; \`/big\` streams ${s.mib} MiB): ${names.join('; ')}`,
    `- saturation: ${s.tool}, ${s.connections} keep-alive connections, ${s.warmupSeconds} s warm-up + ${s.durationSeconds} s per contender, 127.0.0.1`,
    `- latency: open loop at ${latencies[0]?.result.rate ?? '-'} req/s (${s.rate === undefined ? 'half of the slowest contender' : 'set by --rate'}) for ${s.durationSeconds} s per contender`,
    `- download: ${s.rounds} interleaved rounds of one ${s.mib} MiB GET per contender on a fresh connection`,
    '',
    '## Saturation',
    '',
    markdownTable(
      [
        'contender',
        'req/s',
        'vs direct',
        'vs frontend',
        'p50 ms',
        'p99 ms',
        'non-2xx / errors',
        'proxy CPU µs/req',
        'installation + agent µs/req',
        'proxy cores',
        'backend CPU µs/req',
        'load gen CPU µs/req',
        'load gen cores',
        'proxy peak RSS',
      ],
      rows,
    ),
    '',
    ...latencySection(latencies, 'contender', s),
    '',
    `## ${s.mib} MiB download`,
    '',
    markdownTable(['contender', 'MiB/s per round', 'median MiB/s', 'vs direct', 'proxy CPU ms per MiB'], downloadRows),
    '',
    ...(profiles ? formatProfiles(profiles) : []),
  ].join('\n');
}

function formatProfiles(profiles: Record<'installation' | 'agent' | 'serve', ProfileSummary>): string[] {
  const titles = {
    installation: 'Installation (`svc controller`: frontend + tunnel endpoint)',
    agent: 'Agent (`svc serve`, enabled: tunnel client + forwarding to the backend)',
    serve: '`svc serve`, no tunnel (frontend)',
  } as const;
  const pct = (share: number): string => `${(share * 100).toFixed(1)} %`;
  return (Object.keys(titles) as (keyof typeof titles)[]).flatMap((key) => {
    const p = profiles[key];
    return [
      `## Profile: ${titles[key]}`,
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

main().then(
  async (code) => {
    await stopAll();
    process.exit(code);
  },
  async (err: unknown) => {
    process.stderr.write(`bench:tunnel failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1000);
    process.exit(1);
  },
);
