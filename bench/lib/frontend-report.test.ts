import { describe, expect, it } from 'vitest';
import { frontendBenchSettings } from './frontend-settings.ts';
import { frontendReport, type FrontendRun } from './frontend-report.ts';
import type { Measured, Target } from './measure.ts';

const target = (name: string): Target => ({ name, url: 'http://127.0.0.1:1/', headers: {}, proxyPids: () => [] });

function saturated(name: string, requestsPerSecond: number, proxyCpuSeconds?: number): Measured {
  const load = { tool: 'wrk' as const, requests: requestsPerSecond * 2, durationSeconds: 2, requestsPerSecond };
  return {
    target: target(name),
    load: { ...load, p50Ms: 0.5, p99Ms: 2, non2xx: 0, errors: 0 },
    ...(proxyCpuSeconds === undefined ? {} : { proxyCpuSeconds }),
  };
}

function run(args: string[]): FrontendRun {
  return {
    settings: frontendBenchSettings(['--memory-limit=none', '--load=wrk', ...args]),
    backend: { url: 'http://127.0.0.1:1/', pid: 1, text: 'nginx (one worker)' },
    results: [saturated('direct (backend)', 40_000), saturated('frontend, OAuth share (authenticated)', 10_000, 0.5)],
    latencySets: [],
    memory: { before: { rss: 51_200, anon: 20_480 }, after: { rss: 61_440, peak: 71_680, anon: 25_600 } },
    startup: { listeningMs: 120, readyMs: 180 },
    loadBefore: [1, 1, 1],
    extras: [],
    paired: undefined,
    saturationSamples: [10_000],
  };
}

describe('bench:frontend report', () => {
  it('has the title, the method, the saturation table and the frontend figures, in that order', () => {
    const text = frontendReport(run(['--latency=no', '--rate=5000']));
    const order = [
      '# Frontend benchmark — last run',
      '- backend: nginx (one worker) (`--backend`)',
      '- saturation: wrk, 32 connections, 2 s warm-up + 10 s per configuration, 127.0.0.1, 64-byte body, keep-alive',
      '(set by --rate)',
      '## Saturation',
      '| configuration ',
      '(no fixed-rate latency runs: `--latency no`)',
      'Frontend start-up (spawn of `node bin/svc.js frontend` → listening / → /readyz 200, provider discovery included): 120 ms / 180 ms.',
      'Frontend RSS (one process for both shares): 50.0 MiB before the load, 60.0 MiB after, peak 70.0 MiB;',
    ].map((part) => text.indexOf(part));
    expect(order.every((at) => at >= 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
  });

  it('compares each contender with direct and gives the proxy CPU per request', () => {
    const row = frontendReport(run([]))
      .split('\n')
      .find((line) => line.startsWith('| frontend, OAuth share'));
    // 0.5 s of CPU over 20,000 requests = 25 µs each; 10,000 req/s against direct's 40,000.
    expect(row?.split('|').map((cell) => cell.trim())).toEqual(
      expect.arrayContaining(['10000', '0.25×', '25', '0.25']),
    );
  });

  it('names the saturation samples the fixed rate was taken from', () => {
    const text = frontendReport(run([]));
    expect(text).toContain(
      "0.5 of the frontend OAuth share's saturation, the highest of its 1 saturation runs: 10000 req/s",
    );
  });
});
