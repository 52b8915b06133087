/**
 * `npm run bench:tunnel` — what publishing through the installation's tunnel costs, against the
 * same backend reached directly and through today's single-machine path, in one run:
 *
 *   direct     the backend (bench/lib/fixed-backend.ts, its own process)
 *   frontend   `svc serve` with a public share of the backend, requests to its own frontend
 *   tunnel     an installation (`svc controller --config` with a frontend section) and an agent
 *              (`svc serve`, `svc enable <account token> --api-endpoint <installation>`) publishing a
 *              public share of the backend; requests go to the installation's frontend, which
 *              forwards them over the agent's outbound tunnel — twice, one agent per transport:
 *              HTTP/2 on the upgraded socket (`direct`, the default) and HTTP/2 in a WebSocket
 *              (`SVC_TUNNEL_TRANSPORT=websocket`), both to the same installation
 *   floors     plain Node in front of the same backend, none of svc's code (bench/lib/http-floor.ts):
 *              A, one proxy process (the shape of `svc serve`); B, two processes with one HTTP/2
 *              session between them (the tunnel's shape). Saturation only: what B reaches against
 *              the frontend is what this shape allows; what the tunnel loses against B is svc's.
 *
 * Each contender in turn: requests/s at saturation (wrk or autocannon, keep-alive), latency at one
 * fixed arrival rate below saturation (open loop, bench/lib/fixed-rate.ts), CPU per request of the
 * proxying processes and of the load generator, peak RSS; then rounds of a 100 MiB download and
 * of a 100 MiB upload through each, and the issue's targets as same-run ratios. `--profile` runs the svc processes and the floors under `node --cpu-prof` and
 * reports their top frames instead (to docs/benchmarks/tunnel-profile.md: the profiler skews the figures).
 *
 *   npm run bench:tunnel -- [--duration 4] [--warmup 1] [--connections 32] [--rate auto|N]
 *                           [--rounds 3] [--mib 100] [--load auto|autocannon|wrk] [--profile]
 *                           [--node-flags '<flags>']
 *
 * `--node-flags` adds Node flags to every svc process, e.g. `--heap-growing-percent=0` to run the
 * tunnel's processes with V8's own heap sizing instead of bin/node-flags.js's.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { summarizeProfiles } from './lib/cpu-profile.ts';
import { download } from './lib/download.ts';
import { upload } from './lib/upload.ts';
import type { FixedBackend } from './lib/fixed-backend.ts';
import { request } from './lib/http.ts';
import { intArg, loadArgs, loadOptions } from './lib/load-args.ts';
import {
  checkTarget,
  cpuSecondsOf,
  fixedRateRounds,
  measure,
  reportFailures,
  type Measured,
  type Target,
} from './lib/measure.ts';
import {
  installCleanup,
  memoryKiB,
  removeScratchDir,
  scratchDir,
  startModule,
  stopAll,
  type BenchProcess,
} from './lib/processes.ts';
import { writeMarkdown } from './lib/report.ts';
import { startTunnelFloors, type TunnelFloors } from './lib/tunnel-floors.ts';
import {
  formatTunnelReport,
  type FloorResults,
  type Profiles,
  tunnelChart,
  type Direction,
  type TunnelSettings,
  type Transfers,
} from './lib/tunnel-report.ts';
import {
  enableAgents,
  sharePublic,
  startSvcInstallation,
  startSvcServe,
  type SvcInstallation,
  type SvcServe,
} from './lib/svc.ts';

const DOCS = fileURLToPath(new URL('../docs/benchmarks/', import.meta.url));
const BACKEND_MODULE = fileURLToPath(new URL('./lib/fixed-backend.ts', import.meta.url));
const DOMAIN = 'tunnel.localhost';

type Settings = TunnelSettings;

function settings(): Settings {
  const { values } = parseArgs({
    options: {
      ...loadOptions({ duration: '4', warmup: '1' }),
      rounds: { type: 'string', default: '3' },
      mib: { type: 'string', default: '100' },
      profile: { type: 'boolean', default: false },
      'node-flags': { type: 'string', default: '' },
    },
  });
  return {
    ...loadArgs(values),
    rounds: intArg('rounds', values.rounds, 1, 20),
    mib: intArg('mib', values.mib, 1, 10_000),
    profile: values.profile,
    nodeFlags: values['node-flags'].split(/\s+/).filter(Boolean),
  };
}

/** The svc processes of the run: the single-machine `svc serve`, the installation and the agent. */
interface Svc {
  readonly serve: SvcServe;
  readonly installation: SvcInstallation;
  /** The agents on the direct transport and on the WebSocket one. */
  readonly agent: SvcServe;
  readonly agentWs: SvcServe;
  readonly frontendShare: URL;
  readonly tunnelShare: URL;
  readonly tunnelWsShare: URL;
  readonly profileDirs: Record<ProcessName, string>;
}

type ProcessName = 'serve' | 'installation' | 'agent' | 'agentWs';

/**
 * Starts the three svc processes, enables the agent at the installation and shares the backend
 * publicly on both `svc serve`s; resolves once the tunnelled share answers at the installation.
 */
async function startSvc(dir: string, backend: string, s: Settings): Promise<Svc> {
  const profileDirs = {
    serve: join(dir, 'profile-serve'),
    installation: join(dir, 'profile-installation'),
    agent: join(dir, 'profile-agent'),
    agentWs: join(dir, 'profile-agent-ws'),
  };
  const nodeFlags = (name: keyof typeof profileDirs): string[] => [
    ...s.nodeFlags,
    ...(s.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDirs[name]] : []),
  ];
  const dataDir = (name: string): string => join(dir, name);
  const [serve, installation, agent, agentWs] = await Promise.all([
    startSvcServe({ name: 'svc serve', dataDir: dataDir('serve'), nodeFlags: nodeFlags('serve') }),
    startSvcInstallation({
      name: 'installation',
      dataDir: dataDir('installation'),
      domain: DOMAIN,
      nodeFlags: nodeFlags('installation'),
    }),
    startSvcServe({ name: 'agent', dataDir: dataDir('agent'), nodeFlags: nodeFlags('agent') }),
    startSvcServe({
      name: 'agent (websocket)',
      dataDir: dataDir('agent-ws'),
      nodeFlags: nodeFlags('agentWs'),
      env: { SVC_TUNNEL_TRANSPORT: 'websocket' },
    }),
  ]);
  await enableAgents(installation, dataDir('installation'), [
    { dataDir: dataDir('agent'), process: agent },
    { dataDir: dataDir('agent-ws'), process: agentWs },
  ]);
  const [frontendShare, tunnelShare, tunnelWsShare] = await Promise.all([
    sharePublic(dataDir('serve'), backend),
    sharePublic(dataDir('agent'), backend),
    sharePublic(dataDir('agent-ws'), backend),
  ]);
  for (const share of [tunnelShare, tunnelWsShare]) await tunnelledShareAnswers(share.url, installation);
  return {
    serve,
    installation,
    agent,
    agentWs,
    frontendShare: frontendShare.url,
    tunnelShare: tunnelShare.url,
    tunnelWsShare: tunnelWsShare.url,
    profileDirs,
  };
}

/** Waits for a tunnelled share to answer 200 at the installation's frontend. */
async function tunnelledShareAnswers(url: URL, installation: SvcInstallation): Promise<void> {
  if (url.port !== String(installation.ready.frontendPort))
    throw new Error(`the agent's share is not at the installation's frontend: ${url.href}`);
  // Publishing reaches the installation's registry asynchronously.
  for (let i = 0; ; i += 1) {
    const reply = await request(url).catch(() => undefined);
    if (reply?.status === 200) return;
    if (i === 100) throw new Error(`the tunnelled share did not answer 200 (last status ${reply?.status})`);
    await new Promise((r) => setTimeout(r, 100));
  }
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

/** Resets a process's VmHWM to its current RSS (`clear_refs` 5), so the next reading is the peak since. */
function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // Not allowed here: the reading stays the peak of the process's life.
  }
}

/** `rounds` interleaved transfers of `mib` MiB through every contender, with each proxy's CPU. */
async function transfers(s: Settings, targets: readonly Target[], direction: Direction): Promise<Transfers[]> {
  const out: Transfers[] = targets.map((target) => ({
    target,
    direction,
    runs: [],
    proxyCpuSecondsEach: target.proxyPids().map(() => 0),
    peakRssKiBEach: [],
  }));
  const bytes = s.mib * 2 ** 20;
  for (let round = 0; round < s.rounds; round += 1) {
    for (const d of out) {
      process.stderr.write(`${d.target.name}: ${s.mib} MiB ${direction}, round ${round + 1}/${s.rounds}\n`);
      // Same port as the target URL; the Host header (where one is set) picks the share.
      const host = `http://${d.target.headers.host ?? new URL(d.target.url).host}`;
      const pids = d.target.proxyPids();
      pids.forEach(resetPeakRss);
      const before = pids.map((pid) => cpuSecondsOf([pid]));
      d.runs.push(
        direction === 'download'
          ? await download(new URL(`/big?mib=${s.mib}`, host), bytes)
          : await upload(new URL('/upload', host), bytes),
      );
      const after = pids.map((pid) => cpuSecondsOf([pid]));
      d.peakRssKiBEach = pids.map((pid, k) => Math.max(d.peakRssKiBEach[k] ?? 0, memoryKiB(pid).peak ?? 0));
      d.proxyCpuSecondsEach = d.proxyCpuSecondsEach?.every((_, k) => before[k] !== undefined && after[k] !== undefined)
        ? d.proxyCpuSecondsEach.map((c, k) => c + (after[k] ?? 0) - (before[k] ?? 0))
        : undefined;
    }
  }
  return out;
}

/**
 * Saturation of every contender in turn, the floors between the frontend and the tunnels (each
 * next to what it is compared with, minutes apart at most on a machine whose load drifts).
 */
async function saturation(
  s: Settings,
  targets: readonly Target[],
  floors: TunnelFloors,
  backendPid: number,
): Promise<{ results: Measured[]; floors: FloorResults }> {
  const order = [...targets.slice(0, 2), floors.oneProcess, floors.tunnelShape, ...targets.slice(2)];
  const measured = new Map<Target, Measured>();
  for (const target of order) {
    process.stderr.write(
      `${target.name}: ${s.warmupSeconds}s warm-up, ${s.durationSeconds}s at ${s.connections} connections (${s.tool})\n`,
    );
    measured.set(target, await measure(s, target, backendPid));
  }
  const of = (t: Target): Measured => measured.get(t) as Measured;
  return {
    results: targets.map(of),
    floors: { oneProcess: of(floors.oneProcess), tunnelShape: of(floors.tunnelShape) },
  };
}

/** Stops the svc processes and the floors, in an order in which no tunnel reconnects; their profiles when profiled. */
async function stopProfiled(svc: Svc, floors: TunnelFloors, profile: boolean): Promise<Profiles | undefined> {
  await svc.agent.stop(15_000);
  await svc.agentWs.stop(15_000);
  await svc.installation.stop(15_000);
  await svc.serve.stop(15_000);
  await floors.stop();
  if (!profile) return undefined;
  const dirs = { ...svc.profileDirs, ...floors.profileDirs };
  return Object.fromEntries(Object.entries(dirs).map(([name, dir]) => [name, summarizeProfiles(dir)])) as Profiles;
}

async function main(): Promise<number> {
  const s = settings();
  installCleanup();
  const dir = scratchDir('svc-bench-tunnel-');
  const loadBefore = loadavg();
  try {
    const backend = await startModule<FixedBackend>('backend', BACKEND_MODULE, 'startFixedBackend', {});
    const svc = await startSvc(dir, backend.ready.url, s);
    const targets: Target[] = [
      { name: 'direct (backend)', url: backend.ready.url, headers: {}, proxyPids: () => [] },
      viaHost('frontend, no tunnel (svc serve)', svc.frontendShare, [svc.serve]),
      viaHost('tunnel, direct HTTP/2 (installation + agent)', svc.tunnelShare, [svc.installation, svc.agent]),
      viaHost('tunnel, WebSocket (installation + agent)', svc.tunnelWsShare, [svc.installation, svc.agentWs]),
    ];
    const floors = await startTunnelFloors(backend.ready.port, dir, s.profile);
    for (const t of [...targets, floors.oneProcess, floors.tunnelShape]) await checkTarget(t);

    const { results, floors: floorResults } = await saturation(s, targets, floors, backend.pid);
    const slowest = Math.min(...results.map((r) => r.load.requestsPerSecond));
    const rate = s.rate ?? Math.max(1, Math.floor(slowest / 2));
    const latencies = await fixedRateRounds({ ...s, backendPid: backend.pid }, targets, rate, s.latencyRounds);
    const bulk = [...(await transfers(s, targets, 'download')), ...(await transfers(s, targets, 'upload'))];

    // A clean exit of each process writes its profile.
    const profiles = await stopProfiled(svc, floors, s.profile);

    const report = formatTunnelReport(s, results, floorResults, latencies, bulk, loadBefore, profiles);
    process.stdout.write(report);
    const file = join(DOCS, s.profile ? 'tunnel-profile.md' : 'tunnel.md');
    await writeMarkdown(file, report);
    if (!s.profile) writeFileSync(join(DOCS, 'tunnel.svg'), tunnelChart(results, floorResults, latencies, bulk));
    process.stderr.write(`written to ${file}${s.profile ? '' : ' and tunnel.svg'}\n`);
    return reportFailures(results, latencies) > 0 ? 1 : 0;
  } finally {
    await stopAll();
    removeScratchDir(dir);
  }
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
