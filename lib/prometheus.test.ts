import { describe, expect, it } from 'vitest';
import { registerProcessMetrics } from './process-metrics.ts';
import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';

describe('Prometheus text format', () => {
  it('writes counters and gauges with HELP, TYPE and one line per label set, untouched unlabeled ones as 0', async () => {
    const registry = new Registry();
    const hits = registry.register(new Counter('t_hits_total', 'Hits by outcome', ['outcome']));
    const idle = registry.register(new Counter('t_idle_total', 'Never counted'));
    const depth = registry.register(new Gauge('t_depth', 'Queue depth', ['kind']));
    hits.inc({ outcome: 'ok' });
    hits.inc({ outcome: 'ok' }, 2);
    hits.inc({ outcome: 'refused' });
    depth.set({ kind: 'Share' }, 5);
    depth.dec({ kind: 'Share' });
    depth.inc({ kind: 'Access' }, 0.5);
    expect(idle.values()).toEqual([]);
    expect(await registry.metrics()).toBe(
      [
        '# HELP t_hits_total Hits by outcome',
        '# TYPE t_hits_total counter',
        't_hits_total{outcome="ok"} 3',
        't_hits_total{outcome="refused"} 1',
        '# HELP t_idle_total Never counted',
        '# TYPE t_idle_total counter',
        't_idle_total 0',
        '# HELP t_depth Queue depth',
        '# TYPE t_depth gauge',
        't_depth{kind="Share"} 4',
        't_depth{kind="Access"} 0.5',
        '',
      ].join('\n'),
    );
    expect(registry.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
  });

  it('writes histograms with cumulative buckets, +Inf, _sum and _count, per label set', async () => {
    const registry = new Registry();
    const h = registry.register(new Histogram('t_seconds', 'Time', [0.1, 1], ['kind']));
    h.observe({ kind: 'a' }, 0.05);
    h.observe({ kind: 'a' }, 0.5);
    h.observe({ kind: 'a' }, 7);
    const plain = registry.register(new Histogram('t_plain_seconds', 'Plain', [1]));
    plain.observe(0.25);
    expect(await registry.metrics()).toContain(
      [
        't_seconds_bucket{kind="a",le="0.1"} 1',
        't_seconds_bucket{kind="a",le="1"} 2',
        't_seconds_bucket{kind="a",le="+Inf"} 3',
        't_seconds_sum{kind="a"} 7.55',
        't_seconds_count{kind="a"} 3',
        '# HELP t_plain_seconds Plain',
        '# TYPE t_plain_seconds histogram',
        't_plain_seconds_bucket{le="1"} 1',
        't_plain_seconds_bucket{le="+Inf"} 1',
        't_plain_seconds_sum 0.25',
        't_plain_seconds_count 1',
      ].join('\n'),
    );
    const end = h.startTimer({ kind: 'b' });
    const seconds = end();
    expect(seconds).toBeGreaterThanOrEqual(0);
    expect(h.values()).toEqual([
      { labels: { kind: 'a' }, value: 3 },
      { labels: { kind: 'b' }, value: 1 },
    ]);
  });

  it('escapes label values and help text so a value cannot forge another line', async () => {
    const registry = new Registry();
    const c = registry.register(new Counter('t_escape_total', 'Help with \\ and\nnewline', ['path']));
    c.inc({ path: 'a"b\\c\nt_escape_total{path="forged"} 999' });
    const text = await registry.metrics();
    expect(text).toContain('# HELP t_escape_total Help with \\\\ and\\nnewline\n');
    expect(text).toContain('t_escape_total{path="a\\"b\\\\c\\nt_escape_total{path=\\"forged\\"} 999"} 1\n');
    expect(text.split('\n').filter((l) => l.startsWith('t_escape_total'))).toHaveLength(1);
  });

  it('refuses misuse with an error naming the metric', () => {
    const registry = new Registry();
    const c = registry.register(new Counter('t_bad_total', 'x', ['kind']));
    expect(() => c.inc()).toThrow(/t_bad_total: labels kind are required/);
    expect(() => c.inc({ kind: 'a' }, -1)).toThrow(/t_bad_total: a counter cannot be increased by -1/);
    expect(() => c.inc({ kind: 'a', extra: 'b' })).toThrow(/t_bad_total: unknown label extra/);
    expect(() => registry.register(new Counter('t_bad_total', 'again'))).toThrow(/registered twice/);
    expect(() => new Counter('bad-name', 'x')).toThrow(/"bad-name" is not a Prometheus name/);
    expect(() => new Histogram('t_h', 'x', [1, 1])).toThrow(/buckets must be finite and increasing/);
    expect(() => new Histogram('t_h2', 'x', [1], ['le'])).toThrow(/label name "le" is not allowed/);
    expect(() => new Histogram('t_h3', 'x', [1]).observe(Number.NaN)).toThrow(/t_h3: observed value is not a number/);
  });
});

describe('process metrics', () => {
  it('serves prom-client’s process and Node.js metric names under the prefix, read at the scrape', async () => {
    const registry = new Registry();
    registerProcessMetrics(registry, 'svc_t_');
    const text = await registry.metrics();
    const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(value('svc_t_process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    expect(value('svc_t_process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(value('svc_t_process_cpu_seconds_total')).toBeCloseTo(
      value('svc_t_process_cpu_user_seconds_total') + value('svc_t_process_cpu_system_seconds_total'),
      6,
    );
    expect(value('svc_t_process_start_time_seconds')).toBeLessThanOrEqual(Date.now() / 1000);
    expect(value('svc_t_nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(value('svc_t_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(value('svc_t_process_open_fds')).toBeGreaterThan(0);
    expect(value('svc_t_process_max_fds')).toBeGreaterThan(0);
    expect(text).toMatch(/^svc_t_nodejs_heap_space_size_used_bytes\{space="old"\} \d+$/m);
    expect(text).toContain(`svc_t_nodejs_version_info{version="${process.version}",`);
    expect(text).toMatch(/^svc_t_nodejs_active_resources\{type="\w+"\} \d+$/m);

    // The CPU counters only grow between scrapes.
    const before = value('svc_t_process_cpu_seconds_total');
    const spinFrom = process.cpuUsage().user;
    while (process.cpuUsage().user - spinFrom < 2000);
    const again = await registry.metrics();
    expect(Number(/^svc_t_process_cpu_seconds_total (\S+)$/m.exec(again)?.[1])).toBeGreaterThan(before);
  });
});
