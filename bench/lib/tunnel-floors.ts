import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { HttpFloorHop, startHttpFloorHop } from './http-floor.ts';
import type { Target } from './measure.ts';
import { startModule, type BenchProcess } from './processes.ts';

const FLOOR_MODULE = fileURLToPath(new URL('./http-floor.ts', import.meta.url));

type Hop = BenchProcess<Awaited<ReturnType<typeof startHttpFloorHop>>>;

/**
 * The requests/s floors of `bench:tunnel` (bench/lib/http-floor.ts), plain Node with none of svc's
 * code in front of the same backend: one proxy process, the shape of `svc serve`; and two processes
 * with one HTTP/2 session between them, the tunnel's shape (the visitor's side as the installation,
 * the backend's side as the agent).
 */
export interface TunnelFloors {
  readonly oneProcess: Target;
  readonly tunnelShape: Target;
  /** Each process's profile directory when profiled (`--cpu-prof`), keyed as tunnel-report.ts's PROFILED. */
  readonly profileDirs: Readonly<Record<FloorProcess, string>>;
  /** Stops the floor processes (cleanly: a profiled one writes its profile on exit). */
  stop(): Promise<void>;
}

export type FloorProcess = 'floorOne' | 'floorVisitor' | 'floorBackend';

/** Starts the floors in front of the backend at `backendPort`, each process under `--cpu-prof` when `profile`. */
export async function startTunnelFloors(backendPort: number, dir: string, profile: boolean): Promise<TunnelFloors> {
  const profileDirs: Record<FloorProcess, string> = {
    floorOne: join(dir, 'profile-floor-one'),
    floorVisitor: join(dir, 'profile-floor-visitor'),
    floorBackend: join(dir, 'profile-floor-backend'),
  };
  const start = (name: FloorProcess, hop: HttpFloorHop): Promise<Hop> =>
    startModule(`${name} (${hop.inbound} -> ${hop.outbound})`, FLOOR_MODULE, 'startHttpFloorHop', hop, 20_000, {
      nodeFlags: profile ? ['--cpu-prof', '--cpu-prof-dir', profileDirs[name]] : [],
    });
  const [one, backendSide] = await Promise.all([
    start('floorOne', { inbound: 'raw', outbound: 'pool', next: backendPort }),
    start('floorBackend', { inbound: 'h2', outbound: 'pool', next: backendPort }),
  ]);
  const visitorSide = await start('floorVisitor', { inbound: 'raw', outbound: 'h2', next: backendSide.ready.port });
  const target = (name: string, entry: Hop, processes: readonly Hop[]): Target => ({
    name,
    url: `http://127.0.0.1:${entry.ready.port}/`,
    headers: {},
    proxyPids: () => processes.map((p) => p.pid),
    memoryPids: () => processes.map((p) => p.pid),
  });
  return {
    oneProcess: target('floor A: 1 plain Node proxy', one, [one]),
    tunnelShape: target('floor B: 2 plain Node processes, HTTP/2 between', visitorSide, [visitorSide, backendSide]),
    profileDirs,
    stop: async () => {
      for (const p of [visitorSide, backendSide, one]) await p.stop(15_000);
    },
  };
}
