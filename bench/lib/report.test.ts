import { describe, expect, it } from 'vitest';
import type { FixedRateRun, Latency, Measured, Target } from './measure.ts';
import { costAtRate, costAtRateSection } from './report.ts';

const target = (name: string): Target => ({ name, url: 'http://127.0.0.1:1/', headers: {}, proxyPids: () => [] });

function saturated(t: Target, requests: number, proxyCpuSeconds: number | undefined): Measured {
  return {
    target: t,
    load: {
      tool: 'wrk',
      requests,
      durationSeconds: 5,
      requestsPerSecond: requests / 5,
      p50Ms: 1,
      p99Ms: 2,
      non2xx: 0,
      errors: 0,
    },
    ...(proxyCpuSeconds === undefined ? {} : { proxyCpuSeconds }),
  };
}

function fixedRun(rate: number, sent: number, warmupSent: number, proxyCpuSeconds: number | undefined): FixedRateRun {
  return {
    rate,
    sent,
    warmupSent,
    completed: sent,
    p50Ms: 0.1,
    p90Ms: 0.2,
    p99Ms: 1,
    maxMs: 2,
    non2xx: 0,
    errors: 0,
    ...(proxyCpuSeconds === undefined ? {} : { proxyCpuSeconds }),
  };
}

describe('CPU per request at a fixed rate against saturation', () => {
  it('divides the fixed-rate CPU by every request sent, warm-up included, and gives the core that rate keeps busy', () => {
    // Saturation: 100,000 requests on 2.8 s of CPU = 28 µs each; fixed: 20,000 + 100,000 requests on 6 s = 50 µs.
    const cost = costAtRate(saturated(target('frontend'), 100_000, 2.8), fixedRun(20_000, 100_000, 20_000, 6));
    expect(cost?.saturationUs).toBeCloseTo(28, 6);
    expect(cost?.fixedUs).toBeCloseTo(50, 6);
    expect(cost?.ratio).toBeCloseTo(50 / 28, 6);
    expect(cost?.busyCores).toBeCloseTo(1.0, 6);
  });

  it('has no figure for a contender without proxy CPU in either run', () => {
    expect(costAtRate(saturated(target('direct'), 100_000, undefined), fixedRun(20_000, 1, 0, 1))).toBeUndefined();
    expect(costAtRate(saturated(target('x'), 100_000, 1), fixedRun(20_000, 1, 0, undefined))).toBeUndefined();
    expect(costAtRate(saturated(target('x'), 100_000, 1), undefined)).toBeUndefined();
  });

  it('lists each proxy with a column per fixed-rate pass, leaving direct out', () => {
    const direct = target('direct (backend)');
    const relay = target('Node byte relay');
    const results = [saturated(direct, 500_000, undefined), saturated(relay, 200_000, 3.5)];
    const pass = (layout: string, relayCpu: number) => ({
      layout: { name: layout, text: '' },
      latencies: [
        { target: direct, result: fixedRun(18_000, 90_000, 18_000, undefined), rounds: [] },
        { target: relay, result: fixedRun(18_000, 90_000, 18_000, relayCpu), rounds: [] },
      ] satisfies Latency[],
    });
    const text = costAtRateSection(results, [pass('unpinned', 3.24), pass('proxies pinned', 2.7)]).join('\n');
    expect(text).toContain('at 18000 req/s, unpinned');
    expect(text).toContain('at 18000 req/s, proxies pinned');
    // 3.5 s over 200,000 = 17.5 µs; 3.24 s over 108,000 = 30 µs (1.71×) at 18,000 req/s = 0.54 cores.
    expect(text).toMatch(
      /\| Node byte relay +\| 18 +\| 30 µs \(1\.71×\), 0\.54 cores +\| 25 µs \(1\.43×\), 0\.45 cores +\|/,
    );
    expect(text).not.toContain('| direct (backend)');
    expect(text).not.toContain('fell behind)');
  });

  it('marks a proxy that did not keep up with the rate', () => {
    const t = target('oauth2-proxy');
    const run = { ...fixedRun(18_000, 90_000, 18_000, 30), p99Ms: 4_000 };
    const text = costAtRateSection(
      [saturated(t, 40_000, 10)],
      [{ latencies: [{ target: t, result: run, rounds: [] }] }],
    ).join('\n');
    expect(text).toMatch(/\| oauth2-proxy +\| 250 +\| 278 µs \(1\.11×\), 5\.00 cores \(fell behind\) \|/);
  });

  it('is left out of a report without fixed-rate runs', () => {
    expect(costAtRateSection([saturated(target('relay'), 1000, 1)], [])).toEqual([]);
  });
});
