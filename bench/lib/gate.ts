import { join } from 'node:path';
import type { FixedBackend } from './fixed-backend.ts';
import { DOMAIN, frontendLogin, startDevIdp, startFrontendProcess } from './frontend-process.ts';
import { imageEnvironment, imageNodeFlags, warmCompileCache } from './image.ts';
import { runLoad, type LoadTool } from './load.ts';
import { MemoryLimits } from './memory-limit.ts';
import { freePort } from './ports.ts';
import { cpuSeconds, memoryKiB, removeScratchDir, scratchDir, startModule, stopAll } from './processes.ts';
import { pinProcesses } from './paired.ts';
import { median } from './report.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** How long a process of the gate may take to start: generous, a busy machine makes Node start slowly. */
const START_TIMEOUT_MS = 60_000;

/** The regression gate's figures: each the frontend's against the bare pipe's of the same run. */
export interface GateFigures {
  readonly tool: LoadTool;
  /** Frontend CPU per request ÷ bare pipe CPU per request, the median of the rounds. */
  readonly cpuRatio: number;
  /** The per-round ratios the median was taken of. */
  readonly cpuRatios: readonly number[];
  /** The two CPU costs per request in µs (medians of the rounds), for the record. */
  readonly frontendUs: number;
  readonly pipeUs: number;
  /** Peak RSS of the frontend ÷ peak RSS of the bare pipe, both after the same load. */
  readonly rssRatio: number;
  readonly frontendPeakMiB: number;
  /**
   * CPU time from spawn to ready of the frontend (listening, /readyz 200) ÷ the bare pipe's (its ready
   * line): CPU, not wall time, which on a busy machine is mostly waiting for a core.
   */
  readonly startupRatio: number;
  /** The wall-clock figures, for the record only: spawn → listening, and its ratio to the pipe's. */
  readonly frontendStartMs: number;
  readonly startWallRatio: number;
}

export interface GateOptions {
  readonly rounds: number;
  readonly durationSeconds: number;
  readonly connections: number;
}

interface Contender {
  readonly pid: number;
  readonly url: string;
  readonly headers: Record<string, string>;
}

/**
 * One run of the gate: a fixed backend, a bare `http.request` pipe (bench/lib/proxy-paths.ts,
 * `lean`) and `svc frontend` as the image runs it, with a logged-in OAuth share (the fast path), all
 * in their own processes. Both proxies are loaded at the same time, so a busy machine slows both
 * alike and the ratios hold where the absolute figures do not.
 */
export async function measureGate(options: GateOptions): Promise<GateFigures> {
  // Always autocannon (a devDependency), whether or not wrk is installed: the recorded ratios are its.
  const tool: LoadTool = 'autocannon';
  const dir = scratchDir('svc-bench-gate-');
  try {
    // The compile cache filled as the image build fills it: a cold cache (a fresh clone, changed
    // sources) costs the first start-up more CPU than a pod ever spends.
    warmCompileCache(ROOT);
    const node = { env: imageEnvironment(), nodeFlags: imageNodeFlags() };
    const backend = await startModule<FixedBackend>(
      'backend',
      join(ROOT, 'bench/lib/fixed-backend.ts'),
      'startFixedBackend',
      {},
      START_TIMEOUT_MS,
    );
    const idp = await startDevIdp(START_TIMEOUT_MS);
    const port = await freePort();
    // Started at the same moment, so a busy machine weighs on both start-ups alike.
    const pipeSpawned = performance.now();
    const [pipe, { frontend, startup, startCpu }] = await Promise.all([
      startModule<{ url: string }>(
        'pipe',
        join(ROOT, 'bench/lib/proxy-paths.ts'),
        'startProxyPath',
        { path: 'lean', upstream: backend.ready.url },
        START_TIMEOUT_MS,
        node,
      ).then((p) => ({ ...p, startMs: performance.now() - pipeSpawned, startCpu: cpuSeconds(p.pid) ?? NaN })),
      startFrontendProcess({
        root: ROOT,
        dir,
        port,
        backend: new URL(backend.ready.url),
        idp: idp.ready,
        memoryLimits: new MemoryLimits(undefined),
        startTimeoutMs: START_TIMEOUT_MS,
      }).then((f) => ({ ...f, startCpu: cpuSeconds(f.frontend.pid) ?? NaN })),
    ]);
    const share = new URL(`http://login.${DOMAIN}:${port}/`);
    const cookie = await frontendLogin(share, idp.ready.issuer);
    const contenders: [Contender, Contender] = [
      { pid: pipe.pid, url: pipe.ready.url, headers: {} },
      { pid: frontend.pid, url: `http://127.0.0.1:${port}/`, headers: { host: share.host, cookie } },
    ];
    const rounds = await loadRounds(tool, contenders, options, backend.pid);
    const ratios = rounds.map(([p, f]) => f / p);
    const peak = (pid: number) => memoryKiB(pid).peak ?? NaN;
    return {
      tool,
      cpuRatio: median(ratios) ?? NaN,
      cpuRatios: ratios,
      pipeUs: median(rounds.map(([p]) => p)) ?? NaN,
      frontendUs: median(rounds.map(([, f]) => f)) ?? NaN,
      rssRatio: peak(frontend.pid) / peak(pipe.pid),
      frontendPeakMiB: peak(frontend.pid) / 1024,
      startupRatio: startCpu / pipe.startCpu,
      frontendStartMs: startup.listeningMs,
      startWallRatio: startup.listeningMs / pipe.startMs,
    };
  } finally {
    await stopAll(1000);
    removeScratchDir(dir);
  }
}

/**
 * CPU µs per request of [pipe, frontend] in each round. Both are loaded at once, each by its own
 * generator, pinned together to one core (bench/lib/paired.ts): whatever else the machine does
 * falls on both alike, which is what keeps the ratio steady on a busy machine.
 */
async function loadRounds(
  tool: LoadTool,
  contenders: readonly [Contender, Contender],
  options: GateOptions,
  backendPid: number,
): Promise<[number, number][]> {
  const pinned = pinProcesses(
    contenders.map((c) => c.pid),
    [backendPid],
  );
  try {
    const load = (c: Contender, durationSeconds: number) =>
      runLoad(tool, {
        url: c.url,
        headers: c.headers,
        connections: options.connections,
        durationSeconds,
        warmupSeconds: 0,
      });
    await Promise.all(contenders.map((c) => load(c, 1)));
    const rounds: [number, number][] = [];
    for (let round = 0; round < options.rounds; round += 1) {
      const before = contenders.map((c) => cpuSeconds(c.pid) ?? NaN);
      const results = await Promise.all(contenders.map((c) => load(c, options.durationSeconds)));
      const us = results.map((r, i) => {
        if (r.non2xx > 0 || r.errors > 0 || r.requests === 0)
          throw new Error(
            `${i === 0 ? 'pipe' : 'frontend'}: ${r.requests} requests, ${r.non2xx} non-2xx, ${r.errors} errors`,
          );
        const c = contenders[i] as Contender;
        return (((cpuSeconds(c.pid) ?? NaN) - (before[i] ?? NaN)) / r.requests) * 1e6;
      });
      rounds.push([us[0] ?? NaN, us[1] ?? NaN]);
    }
    return rounds;
  } finally {
    pinned?.restore();
  }
}
