import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  DOMAIN,
  frontendLogin,
  startFrontendProcess,
  type FrontendProcessOptions,
  type Startup,
} from './frontend-process.ts';
import type { FrontendBenchSettings } from './frontend-settings.ts';
import type { Target } from './measure.ts';
import { childPids, memoryKiB } from './processes.ts';
import { fixed } from './report.ts';

/** RSS, peak RSS and private memory in KiB, as bench/lib/processes.ts `memoryKiB` reads them. */
export type MemoryFigures = ReturnType<typeof memoryKiB>;

/**
 * `--baseline <checkout>`, `--workers n` or `--variant`: one more frontend process (tree) beside
 * the deployed one, measured on its OAuth share.
 */
export interface ExtraFrontend {
  readonly label: string;
  readonly target: Target;
  readonly startup: Startup;
  readonly memoryBefore: MemoryFigures;
  /** Summed over the process and its workers (peaks summed: an upper bound). */
  memory(): MemoryFigures;
}

/** What every extra frontend shares with the deployed one: scratch dir, backend, provider, cgroups. */
export type ExtraFrontendCommon = Pick<FrontendProcessOptions, 'dir' | 'backend' | 'idp' | 'memoryLimits'>;

/** The ports reserved for the extra frontends, one each. */
export interface ExtraFrontendPorts {
  readonly baseline: number;
  readonly workers: number;
  /** One per `--variant`, in order. */
  readonly variants: readonly number[];
}

/** One more frontend process, logged in on its OAuth share. */
async function startExtraFrontend(options: FrontendProcessOptions & { label: string }): Promise<ExtraFrontend> {
  const { label, port } = options;
  const dir = join(options.dir, `extra-${port}`);
  mkdirSync(dir);
  const { frontend, startup } = await startFrontendProcess({ ...options, dir });
  process.stderr.write(`${label}: ready in ${fixed(startup.readyMs, 0)} ms\n`);
  const share = new URL(`http://login.${DOMAIN}:${port}/`);
  const cookie = await frontendLogin(share, options.idp.issuer);
  const pids = (): number[] => [frontend.pid, ...childPids(frontend.pid)];
  const memory = (): MemoryFigures => {
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

/** The extra frontends the settings ask for, started one after the other: baseline, workers, then each variant. */
export async function startExtraFrontends(
  s: Pick<FrontendBenchSettings, 'baseline' | 'workers' | 'variants'>,
  root: string,
  common: ExtraFrontendCommon,
  ports: ExtraFrontendPorts,
): Promise<ExtraFrontend[]> {
  const extras: ExtraFrontend[] = [];
  if (s.baseline) {
    const label = `baseline frontend (${s.baseline})`;
    extras.push(await startExtraFrontend({ ...common, label, root: s.baseline, port: ports.baseline }));
  }
  if (s.workers) {
    const label = `frontend, workers: ${s.workers}`;
    extras.push(await startExtraFrontend({ ...common, label, root, port: ports.workers, workers: s.workers }));
  }
  for (const [i, variant] of s.variants.entries()) {
    const label = `frontend (${variant.text})`;
    extras.push(await startExtraFrontend({ ...common, label, root, port: ports.variants[i] ?? 0, variant }));
  }
  return extras;
}
