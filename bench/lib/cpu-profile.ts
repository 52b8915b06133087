import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The parts of a V8 `.cpuprofile` (written by `node --cpu-prof`) that the summary reads. */
interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: {
      readonly functionName: string;
      readonly url: string;
      readonly lineNumber: number;
    };
  }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProfileEntry {
  /** `function (file:line)`, or a package / Node-internal module for the per-module summary. */
  readonly name: string;
  /** Share of the busy (non-idle) samples, 0–1. */
  readonly share: number;
}

export interface ProfileSummary {
  /** Sampled time in which the process was busy (not `(idle)`), in ms. */
  readonly busyMs: number;
  /** Self time by function, largest first. */
  readonly frames: readonly ProfileEntry[];
  /** Self time by module: an npm package, a `node:` internal module, or a file of this repository. */
  readonly modules: readonly ProfileEntry[];
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Self time of a process's busiest functions and modules, from every `.cpuprofile` in `dir` (one
 * per process started with `--cpu-prof --cpu-prof-dir dir`). Idle samples are left out, so the
 * shares say where the process spent its CPU, not how busy it was.
 */
export function summarizeProfiles(dir: string, top = 12): ProfileSummary {
  const byFrame = new Map<string, number>();
  const byModule = new Map<string, number>();
  let busy = 0;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    profile.samples.forEach((id, i) => {
      const frame = frames.get(id);
      const us = profile.timeDeltas[i + 1] ?? 0;
      if (!frame || frame.functionName === '(idle)') return;
      busy += us;
      const where = frame.url ? `${shortPath(frame.url)}:${frame.lineNumber + 1}` : '';
      const name = `${frame.functionName || '(anonymous)'}${where ? ` (${where})` : ''}`;
      byFrame.set(name, (byFrame.get(name) ?? 0) + us);
      const module = moduleOf(frame.url, frame.functionName);
      byModule.set(module, (byModule.get(module) ?? 0) + us);
    });
  }
  const ranked = (map: Map<string, number>): ProfileEntry[] =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, share: busy > 0 ? us / busy : 0 }));
  return { busyMs: busy / 1000, frames: ranked(byFrame), modules: ranked(byModule) };
}

function shortPath(url: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const inPackage = /node_modules\/(.*)$/.exec(path);
  if (inPackage?.[1]) return inPackage[1];
  return path.startsWith(ROOT) ? relative(ROOT, path) : path;
}

/** `ws`, `node:internal/http2/core`, `lib/tunnel/forward.ts`, or the V8 pseudo-frame's name. */
function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const path = shortPath(url);
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url.startsWith('file://') ? fileURLToPath(url) : url);
  if (pkg?.[1]) return pkg[1];
  return path.replace(/\.js$/, '');
}
