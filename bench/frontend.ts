/**
 * `npm run bench:frontend` — requests/s and latency of an authenticated GET through the svc frontend
 * versus the same backend directly, a non-OAuth share, and nginx as a reference proxy, in one run.
 *
 * Every server runs in its own process: the backend (nginx answering a fixed body, bench/lib/backend.ts;
 * `--backend node` for bench/lib/fixed-backend.ts's node:http server), the development
 * OIDC provider (devidp/provider.ts), the frontend exactly as deployed (`node bin/svc.js frontend
 * --config <generated yaml>`), nginx (generated config in a scratch dir), and the load generator
 * (autocannon in a child process, or wrk). The session cookie comes from a real login through the
 * provider's login form. Exits non-zero when any configuration saw a non-2xx response or an error.
 *
 *   npm run bench:frontend -- [--duration 10] [--warmup 2] [--connections 32] [--load auto|autocannon|wrk] [--rate auto|N]
 *                              [--latency yes|no] [--latency-at 0.5[,…]] [--latency-rounds 3]
 *                              [--latency-pin no|yes|both] [--saturation-samples 3]
 *                              [--baseline <other checkout>] [--workers N] [--memory-limit pod|none|MiB]
 *                              [--variant='<NAME=value …> <node flags …>' …]
 *                              [--pair-rounds 6] [--pair-seconds 3] [--pair-pin yes|no] [--backend nginx|node]
 *
 * A bare `http.request` keep-alive proxy (bench/lib/proxy-paths.ts) is measured as the floor of a
 * Node HTTP proxy, and a byte relay without HTTP as the floor of Node's sockets and event loop
 * (the report compares each proxy's CPU per request at the fixed rates with its cost at
 * saturation). `--baseline` runs another checkout's frontend beside this one (before/after figures in
 * one run); `--workers N` adds this frontend with `workers: N` (CPU and memory summed over its
 * processes); each `--variant` adds this frontend started with other Node flags and environment
 * variables (e.g. `--variant='--max-semi-space-size=4'`), to measure a runtime setting against the
 * deployed one in the same run; `--latency no` skips the fixed-rate pass.
 *
 * oauth2-proxy (built by bench/provide-go-tools.sh, as released and with a 64-connection idle
 * upstream pool) is measured as the peer a user would pick instead, logged in the same way. Then
 * each configuration is loaded at one fixed arrival rate (`--rate`, default half of the frontend
 * OAuth share's saturation rate, the highest of `--saturation-samples` runs) for latency without
 * coordinated omission (bench/lib/fixed-rate.ts's socket client), in interleaved rounds. `--latency-pin both` (the default) runs that
 * pass twice per rate: with every process free to run on any core, and with the proxies on a core of
 * their own (the load generator and the backend on the others, as for the paired rounds), so the
 * report separates what a proxy adds from what it loses waiting for a core the load generator holds.
 * The report is printed and written to docs/benchmarks/frontend.md.
 *
 * `--load auto` (default) uses wrk when it is installed: written in C, it takes far less of a small
 * machine's CPU from the servers being measured, and reports latency in µs (autocannon: 1 ms steps).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { devInteractionsLogin } from './lib/dev-login.ts';
import { barChartSvg } from './lib/chart.ts';
import { startBackend, type Backend, type BackendKind } from './lib/backend.ts';
import { FIXED_BODY_START as BODY_START } from './lib/fixed-backend.ts';
import {
  DOMAIN,
  frontendLogin,
  parseVariant,
  startDevIdp,
  startFrontendProcess,
  type FrontendProcessOptions,
  type RuntimeVariant,
  type Startup,
} from './lib/frontend-process.ts';
import { CookieJar, request } from './lib/http.ts';
import type { LoadResult } from './lib/load.ts';
import { intArg, loadArgs, loadOptions, type LoadArgs } from './lib/load-args.ts';
import {
  checkTarget,
  fixedRateRounds,
  measure,
  reportFailures,
  type Latency,
  type Measured,
  type Target,
} from './lib/measure.ts';
import { imageEnvironment, imageNodeFlags, warmCompileCache } from './lib/image.ts';
import { memoryLimitArg, MemoryLimits, sidecarMemoryLimitBytes } from './lib/memory-limit.ts';
import { startNginxProxy } from './lib/nginx.ts';
import { oauth2ProxyBinary, oauth2ProxyVersion, startOAuth2Proxy, type OAuth2ProxyBuild } from './lib/oauth2-proxy.ts';
import { pairedRounds, pairedSection, pinTargets, type PairedRounds } from './lib/paired.ts';
import type { ProxyPath } from './lib/proxy-paths.ts';
import { freePort } from './lib/ports.ts';
import {
  childPids,
  installCleanup,
  memoryKiB,
  removeScratchDir,
  scratchDir,
  startModule,
  stopAll,
} from './lib/processes.ts';
import {
  costAtRateSection,
  fixed,
  latencySection,
  type LatencyLayout,
  machineLines,
  onCorePerRequest,
  markdownTable,
  mib,
  perRequestUs,
  ratio,
  writeMarkdown,
} from './lib/report.ts';

/* The Markdown report of the last run, also printed. */
const REPORT_FILE = fileURLToPath(new URL('../docs/benchmarks/frontend.md', import.meta.url));
const CHART_FILE = fileURLToPath(new URL('../docs/benchmarks/frontend.svg', import.meta.url));

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BODY_BYTES = 64;
/** The contender the frontend's targets are about: one frontend process, a logged-in visitor. */
const OAUTH_SHARE = 'frontend, OAuth share (authenticated)';
/** An open share recorded by the agent's request inspector, in a frontend of its own (bench/lib/inspected-frontend.ts). */
const INSPECTED = 'frontend, open share, inspector on';
/** Node's floor: a proxy that moves bytes and does nothing of HTTP (bench/lib/proxy-paths.ts `relay`). */
const RELAY = 'Node byte relay (no HTTP: the floor of Node sockets)';

/** Arrival rate of the latency runs (`--rate auto`): half of the frontend OAuth share's saturation rate. */
interface Settings extends LoadArgs {
  /** Another checkout whose frontend runs beside this one's, same config and load (before/after figures). */
  readonly baseline: string | undefined;
  /** `--workers n` (n ≥ 2): also this checkout's frontend with `workers: n`, for per-core and whole-machine figures. */
  readonly workers: number | undefined;
  /**
   * `--memory-limit pod|none|<MiB>`: the memory cgroup the Node proxies run in (default `pod`: the
   * sidecar container's limit, bench/lib/memory-limit.ts), or none.
   */
  readonly memoryLimitMiB: number | undefined;
  /** `--variant`: runtime settings to measure beside the deployed ones, each one more frontend process. */
  readonly variants: readonly RuntimeVariant[];
  /** `--latency-at 0.25,0.5`: the fixed rates as fractions of the frontend OAuth share's saturation (without `--rate`). */
  readonly latencyAt: readonly number[];
  /**
   * `--saturation-samples n` (default 3): saturation runs of the OAuth share whose highest rate the
   * fixed rates are fractions of. One 5 s sample taken in a slow window of a shared machine came out
   * at two thirds of the others (docs/benchmarks-history.md, "What a request costs when it arrives alone"), which made "half of saturation" an
   * easier rate than the frontend's own half; the highest sample is the rate the frontend can sustain.
   */
  readonly saturationSamples: number;
  /** Whether to run the fixed-rate latency pass after the saturation runs (`--latency no` halves the run). */
  readonly latency: boolean;
  /** `--latency-pin no|yes|both` (default both): the core layouts of the fixed-rate pass, unpinned first. */
  readonly latencyPin: readonly boolean[];
  /**
   * `--pair-rounds n` (default 6, 0 to skip): the bare pipe and the frontend's open and OAuth shares
   * once more in n short alternating rounds (`--pair-seconds`, default 3), for the frontend's CPU per
   * request over the bare pipe's as a median of same-round ratios (bench/lib/paired.ts).
   */
  readonly pairRounds: number;
  readonly pairSeconds: number;
  /** `--pair-pin yes|no` (default yes): each proxy on a core of its own during the paired rounds. */
  readonly pairPin: boolean;
  /**
   * `--backend nginx|node` (default nginx): what answers behind every contender. nginx's one worker
   * costs a quarter of the node:http server's CPU per request at a fixed rate, which the proxies
   * and the generator then have (docs/benchmarks-history.md, "The generator and the backend out of the way").
   */
  readonly backend: BackendKind;
}

/** `--latency-pin` → the layouts of the fixed-rate pass (pinned or not), in the order they run. */
const LATENCY_PIN = new Map<string, readonly boolean[]>([
  ['no', [false]],
  ['yes', [true]],
  ['both', [false, true]],
]);

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      ...loadOptions({ duration: '10', warmup: '2' }),
      baseline: { type: 'string' },
      workers: { type: 'string' },
      latency: { type: 'string', default: 'yes' },
      variant: { type: 'string', multiple: true, default: [] },
      'memory-limit': { type: 'string', default: 'pod' },
      'latency-at': { type: 'string', default: '0.5' },
      'saturation-samples': { type: 'string', default: '3' },
      'latency-pin': { type: 'string', default: 'both' },
      'pair-rounds': { type: 'string', default: '6' },
      'pair-seconds': { type: 'string', default: '3' },
      'pair-pin': { type: 'string', default: 'yes' },
      backend: { type: 'string', default: 'nginx' },
    },
  });
  if (values.backend !== 'nginx' && values.backend !== 'node') throw new Error('--backend must be nginx or node');
  if (values.latency !== 'yes' && values.latency !== 'no') throw new Error('--latency must be yes or no');
  if (values['pair-pin'] !== 'yes' && values['pair-pin'] !== 'no') throw new Error('--pair-pin must be yes or no');
  const latencyPin = LATENCY_PIN.get(values['latency-pin']);
  if (!latencyPin) throw new Error('--latency-pin must be no, yes or both');
  const workers = values.workers === undefined ? undefined : intArg('workers', values.workers, 2, 64);
  const variants = values.variant.map((text) => parseVariant('variant', text));
  const memoryLimitMiB = memoryLimitArg(values['memory-limit'], (t) => intArg('memory-limit', t, 64, 65536));
  return {
    ...loadArgs(values),
    baseline: values.baseline,
    workers,
    variants,
    memoryLimitMiB,
    latency: values.latency === 'yes',
    latencyPin,
    saturationSamples: intArg('saturation-samples', values['saturation-samples'], 1, 20),
    pairRounds: intArg('pair-rounds', values['pair-rounds'], 0, 100),
    pairSeconds: intArg('pair-seconds', values['pair-seconds'], 1, 600),
    pairPin: values['pair-pin'] === 'yes',
    backend: values.backend,
    latencyAt: values['latency-at'].split(',').map((f) => {
      const n = Number(f);
      if (!(n > 0 && n <= 1)) throw new Error(`--latency-at: "${f}" is not a fraction in (0, 1]`);
      return n;
    }),
  };
}

async function main(): Promise<number> {
  const s = settings();
  installCleanup();
  const dir = scratchDir('svc-bench-frontend-');
  const loadBefore = loadavg();
  // As the image build does (Dockerfile): a frontend that finds its sources there never loads the
  // TypeScript stripper (~15 MiB of RSS and ~100 ms of start-up, for the life of the process).
  for (const root of [ROOT, ...(s.baseline ? [s.baseline] : [])]) warmCompileCache(root);
  for (const variant of s.variants) warmCompileCache(ROOT, variant.nodeFlags);
  const memoryLimits = new MemoryLimits(s.memoryLimitMiB === undefined ? undefined : s.memoryLimitMiB * 1048576);
  try {
    // Servers, each in its own process.
    const variantPorts = await Promise.all(s.variants.map(() => freePort()));
    const [backend, idp, frontendPort, metricsPort, nginxPort, baselinePort, workersPort, ...peerPorts] =
      await Promise.all([
        startBackend(s.backend, dir, BODY_BYTES),
        startDevIdp(),
        freePort(),
        freePort(),
        freePort(),
        freePort(),
        freePort(),
        freePort(),
        freePort(),
        freePort(),
      ]);
    const backendUrl = new URL(backend.url);
    // The agent's request inspector on (INSPECTED): a frontend recording its one share.
    const inspected = await startModule<{ url: string }>(
      'inspected frontend',
      join(ROOT, 'bench/lib/inspected-frontend.ts'),
      'startInspectedFrontend',
      { upstream: backendUrl.href, port: 0, domain: DOMAIN },
      undefined,
      { memoryLimit: memoryLimits.next(), env: imageEnvironment(), nodeFlags: imageNodeFlags() },
    );
    const { frontend, startup } = await startFrontendProcess({
      memoryLimits,
      root: ROOT,
      dir,
      port: frontendPort,
      metricsPort,
      backend: backendUrl,
      idp: idp.ready,
    });
    const nginx = await startNginxProxy({ dir: join(dir, 'nginx'), port: nginxPort, upstream: backendUrl });
    const startBarePipe = (path: ProxyPath) =>
      startModule<{ url: string }>(
        `bare proxy (${path})`,
        join(ROOT, 'bench/lib/proxy-paths.ts'),
        'startProxyPath',
        { path, upstream: backendUrl.href },
        undefined,
        { memoryLimit: memoryLimits.next(), env: imageEnvironment(), nodeFlags: imageNodeFlags() },
      );
    const [bare, bareLists, relay] = [
      await startBarePipe('lean'),
      await startBarePipe('lean-lists'),
      await startBarePipe('relay'),
    ];

    const shareUrl = (token: string): URL => new URL(`http://${token}.${DOMAIN}:${frontendPort}/`);
    const cookie = await frontendLogin(shareUrl('login'), idp.ready.issuer);

    const common = { dir, backend: backendUrl, idp: idp.ready, memoryLimits };
    const extras: ExtraFrontend[] = [];
    if (s.baseline) {
      const label = `baseline frontend (${s.baseline})`;
      extras.push(await startExtraFrontend({ ...common, label, root: s.baseline, port: baselinePort }));
    }
    if (s.workers) {
      const label = `frontend, workers: ${s.workers}`;
      extras.push(await startExtraFrontend({ ...common, label, root: ROOT, port: workersPort, workers: s.workers }));
    }
    for (const [i, variant] of s.variants.entries()) {
      const label = `frontend (${variant.text})`;
      extras.push(await startExtraFrontend({ ...common, label, root: ROOT, port: variantPorts[i] ?? 0, variant }));
    }
    const frontendPids = (): number[] => [frontend.pid];
    const nginxPids = (): number[] => [nginx.process.pid, nginx.workerPid()].filter((p) => p !== undefined);
    const peers = await startPeers(backendUrl, idp.ready, peerPorts);
    const targets: Target[] = [
      { name: 'direct (backend)', url: backendUrl.href, headers: {}, proxyPids: () => [] },
      {
        name: 'nginx → backend',
        url: `http://127.0.0.1:${nginxPort}/`,
        headers: { host: `open.${DOMAIN}` },
        proxyPids: nginxPids,
        memoryPids: () => [nginx.workerPid()].filter((p) => p !== undefined),
      },
      {
        name: 'bare http.request proxy (no routing, no login)',
        url: bare.ready.url,
        headers: {},
        proxyPids: () => [bare.pid],
        memoryPids: () => [bare.pid],
      },
      {
        name: 'bare pipe with header lists',
        url: bareLists.ready.url,
        headers: {},
        proxyPids: () => [bareLists.pid],
        memoryPids: () => [bareLists.pid],
      },
      {
        name: RELAY,
        url: relay.ready.url,
        headers: {},
        proxyPids: () => [relay.pid],
        memoryPids: () => [relay.pid],
      },
      ...peers,
      ...extras.map((e) => e.target),
      {
        name: 'frontend, open share',
        url: `http://127.0.0.1:${frontendPort}/`,
        headers: { host: shareUrl('open').host },
        proxyPids: frontendPids,
        memoryPids: () => [frontend.pid],
      },
      {
        name: INSPECTED,
        url: inspected.ready.url,
        headers: { host: `inspected.${DOMAIN}` },
        proxyPids: () => [inspected.pid],
        memoryPids: () => [inspected.pid],
      },
      {
        name: OAUTH_SHARE,
        url: `http://127.0.0.1:${frontendPort}/`,
        headers: { host: shareUrl('login').host, cookie },
        proxyPids: frontendPids,
        memoryPids: () => [frontend.pid],
      },
    ];
    for (const t of targets) await checkTarget(t);

    const heapBefore = await heapUsedMiB(metricsPort);
    const memoryBefore = memoryKiB(frontend.pid);
    const results: Measured[] = [];
    for (const target of targets) {
      process.stderr.write(
        `${target.name}: ${s.warmupSeconds}s warm-up, ${s.durationSeconds}s measured, ${s.connections} connections (${s.tool})\n`,
      );
      results.push(await measure(s, target, backend.pid));
    }
    const memoryAfter = memoryKiB(frontend.pid);
    const heapAfter = await heapUsedMiB(metricsPort);

    const frontendOAuth = results.find((r) => r.target.name === OAUTH_SHARE);
    const saturationSamples = frontendOAuth ? [frontendOAuth.load.requestsPerSecond] : [];
    for (let i = 1; frontendOAuth && s.latency && s.rate === undefined && i < s.saturationSamples; i += 1) {
      process.stderr.write(`${OAUTH_SHARE}: saturation sample ${i + 1} of ${s.saturationSamples}\n`);
      saturationSamples.push((await measure(s, frontendOAuth.target, backend.pid)).load.requestsPerSecond);
    }
    const saturation = saturationSamples.length > 0 ? Math.max(...saturationSamples) : 2000;
    const rates: { rate: number; fraction?: number }[] =
      s.rate !== undefined
        ? [{ rate: s.rate }]
        : s.latencyAt.map((fraction) => ({ rate: Math.max(1, Math.floor(saturation * fraction)), fraction }));
    const latencySets: LatencySet[] = [];
    for (const { rate, fraction } of s.latency ? rates : []) {
      for (const pin of s.latencyPin) {
        const pinned = pin ? pinTargets(targets, backend.pid) : undefined;
        if (pin && !pinned) continue; // one core, or no taskset: the unpinned pass is all there is
        latencySets.push({
          latencies: await fixedRateRounds({ ...s, backendPid: backend.pid }, targets, rate, s.latencyRounds),
          layout: pinned
            ? { name: 'proxies pinned', text: pinned.text }
            : { name: 'unpinned', text: 'not pinned: every process may run on any core' },
          ...(fraction === undefined ? {} : { fraction }),
        });
        pinned?.restore();
      }
    }
    const latencies = latencySets[0]?.latencies ?? [];
    const pipeTargets = [
      'bare http.request proxy',
      'bare pipe with header lists',
      'frontend, open share',
      INSPECTED,
      OAUTH_SHARE,
    ].map((prefix) => targets.find((t) => t.name.startsWith(prefix)) as Target);
    const paired =
      s.pairRounds > 0
        ? await pairedRounds(
            { ...s, warmupSeconds: 0, durationSeconds: s.pairSeconds },
            pipeTargets,
            s.pairRounds,
            backend.pid,
            s.pairPin,
          )
        : undefined;

    const report = formatReport(
      s,
      backend,
      results,
      latencySets,
      { before: memoryBefore, after: memoryAfter, heapBefore, heapAfter },
      startup,
      loadBefore,
      extras.map((e) => ({ ...e, memoryAfter: e.memory() })),
      paired,
      saturationSamples,
    );
    process.stdout.write(report);
    await writeMarkdown(REPORT_FILE, report);
    writeFileSync(CHART_FILE, chart(results, latencies));
    process.stderr.write(`written to ${REPORT_FILE} and ${CHART_FILE}\n`);
    return reportFailures(
      results,
      latencySets.flatMap((set) => set.latencies),
    ) > 0
      ? 1
      : 0;
  } finally {
    await stopAll();
    memoryLimits.removeAll();
    removeScratchDir(dir);
  }
}

/** `--baseline <checkout>` or `--workers n`: one more frontend process (tree), measured on its OAuth share. */
interface ExtraFrontend {
  readonly label: string;
  readonly target: Target;
  readonly startup: Startup;
  readonly memoryBefore: { rss?: number; anon?: number };
  /** Summed over the process and its workers (peaks summed: an upper bound). */
  memory(): { rss?: number; peak?: number; anon?: number };
}

async function startExtraFrontend(options: FrontendProcessOptions & { label: string }): Promise<ExtraFrontend> {
  const { label, port } = options;
  const dir = join(options.dir, `extra-${port}`);
  mkdirSync(dir);
  const { frontend, startup } = await startFrontendProcess({ ...options, dir });
  process.stderr.write(`${label}: ready in ${fixed(startup.readyMs, 0)} ms\n`);
  const share = new URL(`http://login.${DOMAIN}:${port}/`);
  const cookie = await frontendLogin(share, options.idp.issuer);
  const pids = (): number[] => [frontend.pid, ...childPids(frontend.pid)];
  const memory = (): { rss?: number; peak?: number; anon?: number } => {
    const each = pids().map(memoryKiB);
    const sum = (key: 'rss' | 'peak' | 'anon'): number => each.reduce((n, m) => n + (m[key] ?? 0), 0);
    return { rss: sum('rss'), peak: sum('peak'), anon: sum('anon') };
  };
  const target = {
    name: `${label}, OAuth share`,
    url: `http://127.0.0.1:${port}/`,
    headers: { host: share.host, cookie },
    proxyPids: pids,
    memoryPids: pids,
  };
  return { label, target, startup, memoryBefore: memory(), memory };
}

const PEERS: readonly { build: OAuth2ProxyBuild; name: string }[] = [
  { build: 'oauth2-proxy', name: `oauth2-proxy ${oauth2ProxyVersion()} (defaults)` },
  { build: 'oauth2-proxy-pool64', name: `oauth2-proxy ${oauth2ProxyVersion()} (64 idle upstream conns)` },
];

/**
 * oauth2-proxy in front of the same backend, each build logged in through the same provider form
 * as the frontend. A build that is missing is left out with a note (bench/provide-go-tools.sh).
 */
async function startPeers(
  backend: URL,
  idp: { issuer: string; clientId: string; clientSecret: string },
  ports: number[],
): Promise<Target[]> {
  const targets: Target[] = [];
  for (const [i, peer] of PEERS.entries()) {
    const port = ports[i];
    if (!oauth2ProxyBinary(peer.build) || port === undefined) {
      process.stderr.write(
        `${peer.build} ${oauth2ProxyVersion()} not built (run bench/provide-go-tools.sh): left out\n`,
      );
      continue;
    }
    const proc = await startOAuth2Proxy({ build: peer.build, port, upstream: backend, idp });
    const start = new URL(`http://127.0.0.1:${port}/`);
    const unauthenticated = await request(start);
    if (unauthenticated.status !== 302 || !unauthenticated.headers.location?.startsWith(idp.issuer.replace(/\/$/, '')))
      throw new Error(`${peer.build} did not redirect to the provider (status ${unauthenticated.status})`);
    const jar = new CookieJar();
    const login = await devInteractionsLogin({ start, jar, login: 'bench@example.com' });
    const cookie = jar.header(start);
    if (login.reply.status !== 200 || !login.reply.body.startsWith(BODY_START) || !cookie)
      throw new Error(`${peer.build}: login did not end on the backend's page (status ${login.reply.status})`);
    targets.push({
      name: peer.name,
      url: start.href,
      headers: { cookie },
      proxyPids: () => [proc.pid],
      memoryPids: () => [proc.pid],
    });
  }
  return targets;
}

/** One fixed-rate pass: every contender at one rate, with the processes laid out on the cores as `layout` says. */
interface LatencySet {
  readonly latencies: readonly Latency[];
  readonly layout: LatencyLayout;
  /** The rate as a fraction of the frontend OAuth share's saturation (absent with `--rate`). */
  readonly fraction?: number;
}

/** The frontend's JS heap in use (MiB), from its own Prometheus metrics. */
async function heapUsedMiB(metricsPort: number): Promise<number | undefined> {
  const reply = await request(new URL(`http://127.0.0.1:${metricsPort}/metrics`)).catch(() => undefined);
  const match = /^svc_frontend_nodejs_heap_size_used_bytes(?:\{[^}]*\})? ([0-9.e+]+)$/m.exec(reply?.body ?? '');
  return match ? Number(match[1]) / 1024 / 1024 : undefined;
}

/** The report's main figures as an SVG bar chart (docs/benchmarks/frontend.svg). */
function chart(results: Measured[], latencies: readonly Latency[]): string {
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

function formatReport(
  s: Settings,
  backend: Backend,
  results: Measured[],
  latencySets: readonly LatencySet[],
  memory: {
    before: { rss?: number; anon?: number };
    after: { rss?: number; peak?: number; anon?: number };
    heapBefore?: number;
    heapAfter?: number;
  },
  startup: Startup,
  loadBefore: number[],
  extras: readonly (ExtraFrontend & { memoryAfter: { rss?: number; peak?: number; anon?: number } })[],
  paired: PairedRounds | undefined,
  saturationSamples: readonly number[],
): string {
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
  return [
    '# Frontend benchmark — last run',
    '',
    'Written by `npm run bench:frontend` (bench/frontend.ts); see docs/benchmarks.md for the method and reading.',
    '',
    '![Requests/s, CPU per request, peak RSS and fixed-rate p99 of each configuration](frontend.svg)',
    '',
    ...machineLines(loadBefore),
    `- runtime: the Node proxies (frontend, bare pipe) ran with the compile cache warmed as the image build does and with the image's environment (${Object.entries(
      imageEnvironment(),
    )
      .map(([k, v]) => `${k}=${v}`)
      .join(
        ' ',
      )}), the image entrypoint's Node flags (${imageNodeFlags().join(' ') || 'none'}) and ${s.memoryLimitMiB === undefined ? 'without a memory limit' : `each in its own memory cgroup of ${s.memoryLimitMiB} MiB${s.memoryLimitMiB === sidecarMemoryLimitBytes() / 1048576 ? ", the sidecar container's limit" : ''}: Node sizes V8's heap from it, as in a pod`} (\`--memory-limit\`)`,
    `- backend: ${backend.text} (\`--backend\`)`,
    `- saturation: ${s.tool}, ${s.connections} connections, ${s.warmupSeconds} s warm-up + ${s.durationSeconds} s per configuration, 127.0.0.1, ${BODY_BYTES}-byte body, keep-alive`,
    `- latency: open loop at ${[...new Set(latencySets.map((set) => set.latencies[0]?.result.rate ?? '-'))].join(', ')} req/s (${s.rate === undefined ? `${s.latencyAt.join(', ')} of the frontend OAuth share's saturation, the highest of its ${saturationSamples.length} saturation runs: ${saturationSamples.map((r) => fixed(r, 0)).join(', ')} req/s` : 'set by --rate'}) for ${s.durationSeconds} s per configuration and round`,
    '',
    '## Saturation',
    '',
    markdownTable(
      [
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
      ],
      rows,
    ),
    '',
    ...(latencySets.length > 0
      ? latencySets.flatMap((set) => [...latencySection(set.latencies, 'configuration', s, set.layout), ''])
      : ['(no fixed-rate latency runs: `--latency no`)']),
    '',
    ...costAtRateSection(results, latencySets),
    '',
    ...(paired
      ? [pairedSection('The frontend against the bare pipes, paired rounds', paired, s.pairSeconds, [0, 1])]
      : []),
    `Frontend start-up (spawn of \`node bin/svc.js frontend\` → listening / → /readyz 200, provider discovery included): ` +
      `${fixed(startup.listeningMs, 0)} ms / ${fixed(startup.readyMs, 0)} ms.`,
    '',
    `Frontend RSS (one process for both shares): ${mib(memory.before.rss)} before the load, ${mib(memory.after.rss)} after, peak ${mib(memory.after.peak)}; ` +
      `private (RssAnon, without the Node binary's shared file pages) ${mib(memory.before.anon)} before, ${mib(memory.after.anon)} after; ` +
      `JS heap used ${fixed(memory.heapBefore, 1)} MiB before, ${fixed(memory.heapAfter, 1)} MiB after. ` +
      'Peak RSS is VmHWM (nginx: its worker; the frontend: over all its runs).',
    '',
    ...extras.flatMap((e) => [
      `${e.label}: start-up ${fixed(e.startup.listeningMs, 0)} ms / ${fixed(e.startup.readyMs, 0)} ms; ` +
        `RSS ${mib(e.memoryBefore.rss)} before the load, ${mib(e.memoryAfter.rss)} after (all its processes); ` +
        `private ${mib(e.memoryBefore.anon)} before, ${mib(e.memoryAfter.anon)} after.`,
      '',
    ]),
  ].join('\n');
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`bench:frontend failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1000);
    process.exit(1);
  },
);
