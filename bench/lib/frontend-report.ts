import type { Backend } from './backend.ts';
import { barChartSvg } from './chart.ts';
import type { ExtraFrontend, MemoryFigures } from './extra-frontend.ts';
import { BODY_BYTES } from './frontend-contenders.ts';
import type { FrontendMemory, LatencySet } from './frontend-passes.ts';
import type { Startup } from './frontend-process.ts';
import type { FrontendBenchSettings } from './frontend-settings.ts';
import { imageEnvironment, imageNodeFlags } from './image.ts';
import type { LoadResult } from './load.ts';
import type { Latency, Measured } from './measure.ts';
import { sidecarMemoryLimitBytes } from './memory-limit.ts';
import { pairedSection, type PairedRounds } from './paired.ts';
import {
  costAtRateSection,
  fixed,
  latencySection,
  machineLines,
  markdownTable,
  mib,
  onCorePerRequest,
  perRequestUs,
  ratio,
} from './report.ts';

/** Everything one `bench:frontend` run measured, as the report and the chart read it. */
export interface FrontendRun {
  readonly settings: FrontendBenchSettings;
  readonly backend: Backend;
  /** The saturation pass, in the targets' order (direct first). */
  readonly results: readonly Measured[];
  readonly latencySets: readonly LatencySet[];
  readonly memory: FrontendMemory;
  readonly startup: Startup;
  /** The load average before the run (os.loadavg). */
  readonly loadBefore: readonly number[];
  /** The extra frontends, with their memory read at the end of the run. */
  readonly extras: readonly (ExtraFrontend & { memoryAfter: MemoryFigures })[];
  readonly paired: PairedRounds | undefined;
  readonly saturationSamples: readonly number[];
}

const SATURATION_COLUMNS = [
  'configuration',
  'req/s',
  'p50 ms',
  'p99 ms',
  'non-2xx / errors',
  'vs direct',
  'vs oauth2-proxy',
  'vs oauth2-proxy tuned',
  'proxy CPU µs/req',
  'proxy cores',
  'proxy on a core per req',
  'backend CPU µs/req',
  'load gen cores',
  'proxy peak RSS',
];

/** The saturation table: one row per contender, compared with direct and with both oauth2-proxy builds. */
function saturationTable(results: readonly Measured[]): string {
  const direct = results[0]?.load;
  const peer = results.find((r) => r.target.name.includes('defaults'))?.load;
  const tunedPeer = results.find((r) => r.target.name.includes('idle upstream'))?.load;
  const cores = (seconds: number | undefined, r: LoadResult): number | undefined =>
    seconds === undefined ? undefined : seconds / r.durationSeconds;
  const rows = results.map(
    ({ target, load, proxyCpuSeconds, proxyWait, backendCpuSeconds, loadCpuSeconds, peakRssKiB }) => [
      target.name,
      fixed(load.requestsPerSecond, 0),
      fixed(load.p50Ms, load.tool === 'wrk' ? 2 : 0),
      fixed(load.p99Ms, load.tool === 'wrk' ? 2 : 0),
      `${load.non2xx} / ${load.errors}`,
      ratio(load.requestsPerSecond, direct?.requestsPerSecond),
      ratio(load.requestsPerSecond, peer?.requestsPerSecond),
      ratio(load.requestsPerSecond, tunedPeer?.requestsPerSecond),
      fixed(perRequestUs(proxyCpuSeconds, load.requests), 0),
      fixed(cores(proxyCpuSeconds, load), 2),
      fixed(onCorePerRequest(proxyWait, load.requests), 2),
      fixed(perRequestUs(backendCpuSeconds, load.requests), 0),
      fixed(cores(loadCpuSeconds, load), 2),
      mib(peakRssKiB),
    ],
  );
  return markdownTable(SATURATION_COLUMNS, rows);
}

/** How the Node proxies ran: the image's environment and flags, and the memory cgroup (`--memory-limit`). */
function runtimeLine(s: FrontendBenchSettings): string {
  const env = Object.entries(imageEnvironment())
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const limit =
    s.memoryLimitMiB === undefined
      ? 'without a memory limit'
      : `each in its own memory cgroup of ${s.memoryLimitMiB} MiB${s.memoryLimitMiB === sidecarMemoryLimitBytes() / 1048576 ? ", the sidecar container's limit" : ''}: Node sizes V8's heap from it, as in a pod`;
  return `- runtime: the Node proxies (frontend, bare pipe) ran with the compile cache warmed as the image build does and with the image's environment (${env}), the image entrypoint's Node flags (${imageNodeFlags().join(' ') || 'none'}) and ${limit} (\`--memory-limit\`)`;
}

/** The method lines under the title: machine, runtime, backend, saturation and latency settings. */
function methodLines(run: FrontendRun): string[] {
  const s = run.settings;
  const rates = [...new Set(run.latencySets.map((set) => set.latencies[0]?.result.rate ?? '-'))].join(', ');
  const samples = run.saturationSamples;
  const rateSource =
    s.rate === undefined
      ? `${s.latencyAt.join(', ')} of the frontend OAuth share's saturation, the highest of its ${samples.length} saturation runs: ${samples.map((r) => fixed(r, 0)).join(', ')} req/s`
      : 'set by --rate';
  return [
    ...machineLines(run.loadBefore),
    runtimeLine(s),
    `- backend: ${run.backend.text} (\`--backend\`)`,
    `- saturation: ${s.tool}, ${s.connections} connections, ${s.warmupSeconds} s warm-up + ${s.durationSeconds} s per configuration, 127.0.0.1, ${BODY_BYTES}-byte body, keep-alive`,
    `- latency: open loop at ${rates} req/s (${rateSource}) for ${s.durationSeconds} s per configuration and round`,
  ];
}

/** Start-up and memory of the deployed frontend, then of each extra frontend. */
function processLines(run: FrontendRun): string[] {
  const { startup, memory } = run;
  return [
    `Frontend start-up (spawn of \`node bin/svc.js frontend\` → listening / → /readyz 200, provider discovery included): ` +
      `${fixed(startup.listeningMs, 0)} ms / ${fixed(startup.readyMs, 0)} ms.`,
    '',
    `Frontend RSS (one process for both shares): ${mib(memory.before.rss)} before the load, ${mib(memory.after.rss)} after, peak ${mib(memory.after.peak)}; ` +
      `private (RssAnon, without the Node binary's shared file pages) ${mib(memory.before.anon)} before, ${mib(memory.after.anon)} after; ` +
      `JS heap used ${fixed(memory.heapBefore, 1)} MiB before, ${fixed(memory.heapAfter, 1)} MiB after. ` +
      'Peak RSS is VmHWM (nginx: its worker; the frontend: over all its runs).',
    '',
    ...run.extras.flatMap((e) => [
      `${e.label}: start-up ${fixed(e.startup.listeningMs, 0)} ms / ${fixed(e.startup.readyMs, 0)} ms; ` +
        `RSS ${mib(e.memoryBefore.rss)} before the load, ${mib(e.memoryAfter.rss)} after (all its processes); ` +
        `private ${mib(e.memoryBefore.anon)} before, ${mib(e.memoryAfter.anon)} after.`,
      '',
    ]),
  ];
}

/** The Markdown report of one run (docs/benchmarks/frontend.md). */
export function frontendReport(run: FrontendRun): string {
  const s = run.settings;
  return [
    '# Frontend benchmark — last run',
    '',
    'Written by `npm run bench:frontend` (bench/frontend.ts); see docs/benchmarks.md for the method and reading.',
    '',
    '![Requests/s, CPU per request, peak RSS and fixed-rate p99 of each configuration](frontend.svg)',
    '',
    ...methodLines(run),
    '',
    '## Saturation',
    '',
    saturationTable(run.results),
    '',
    ...(run.latencySets.length > 0
      ? run.latencySets.flatMap((set) => [...latencySection(set.latencies, 'configuration', s, set.layout), ''])
      : ['(no fixed-rate latency runs: `--latency no`)']),
    '',
    ...costAtRateSection(run.results, run.latencySets),
    '',
    ...(run.paired
      ? [pairedSection('The frontend against the bare pipes, paired rounds', run.paired, s.pairSeconds, [0, 1])]
      : []),
    ...processLines(run),
  ].join('\n');
}

/** The report's main figures as an SVG bar chart (docs/benchmarks/frontend.svg). */
export function frontendChart(results: readonly Measured[], latencies: readonly Latency[]): string {
  const proxies = results.filter((r) => r.proxyCpuSeconds !== undefined);
  return barChartSvg(`Frontend vs peers, one run (${new Date().toISOString().slice(0, 16)} UTC, shared machine)`, [
    {
      title: 'Requests/s at saturation (higher is better)',
      unit: 'req/s',
      bars: results.map((r) => ({ label: r.target.name, value: r.load.requestsPerSecond })),
    },
    {
      title: 'Proxy CPU per request (lower is better)',
      unit: 'µs',
      bars: proxies.map((r) => ({
        label: r.target.name,
        value: r.load.requests > 0 ? ((r.proxyCpuSeconds ?? 0) / r.load.requests) * 1e6 : undefined,
      })),
    },
    {
      title: 'Proxy peak RSS (lower is better)',
      unit: 'MiB',
      bars: proxies.map((r) => ({
        label: r.target.name,
        value: r.peakRssKiB === undefined ? undefined : r.peakRssKiB / 1024,
      })),
    },
    {
      title: `p99 latency at a fixed ${latencies[0]?.result.rate ?? '-'} req/s (lower is better)`,
      unit: 'ms',
      bars: latencies.map((l) => ({ label: l.target.name, value: l.result.p99Ms })),
    },
  ]);
}
