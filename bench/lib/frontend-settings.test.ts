import { describe, expect, it } from 'vitest';
import { frontendBenchSettings } from './frontend-settings.ts';

describe('bench:frontend options', () => {
  it('defaults to the documented run: 10 s per contender, both core layouts, six paired rounds, nginx behind', () => {
    const s = frontendBenchSettings([]);
    expect(s).toMatchObject({
      durationSeconds: 10,
      warmupSeconds: 2,
      latency: true,
      latencyPin: [false, true],
      latencyAt: [0.5],
      saturationSamples: 3,
      pairRounds: 6,
      pairSeconds: 3,
      pairPin: true,
      backend: 'nginx',
      baseline: undefined,
      workers: undefined,
      variants: [],
      memoryLimitMiB: 256,
    });
  });

  it('reads every option it lists', () => {
    const s = frontendBenchSettings([
      '--duration=2',
      '--latency-at=0.25,1',
      '--latency-pin=yes',
      '--workers=2',
      '--variant=MALLOC_ARENA_MAX=2 --max-semi-space-size=4',
      '--memory-limit=none',
      '--pair-rounds=0',
      '--pair-pin=no',
      '--backend=node',
      '--latency=no',
    ]);
    expect(s.durationSeconds).toBe(2);
    expect(s.latencyAt).toEqual([0.25, 1]);
    expect(s.latencyPin).toEqual([true]);
    expect(s.workers).toBe(2);
    expect(s.variants[0]).toMatchObject({ nodeFlags: ['--max-semi-space-size=4'], env: { MALLOC_ARENA_MAX: '2' } });
    expect(s.memoryLimitMiB).toBeUndefined();
    expect(s).toMatchObject({ pairRounds: 0, pairPin: false, backend: 'node', latency: false });
  });

  it.each([
    [['--latency-at=0.5,0'], '--latency-at: "0" is not a fraction in (0, 1]'],
    [['--latency-at=half'], '--latency-at: "half" is not a fraction in (0, 1]'],
    [['--backend=apache'], '--backend must be nginx or node'],
    [['--latency=maybe'], '--latency must be yes or no'],
    [['--latency-pin=sometimes'], '--latency-pin must be no, yes or both'],
    [['--pair-pin=1'], '--pair-pin must be yes or no'],
    [['--workers=1'], '--workers must be an integer 2–64'],
    [['--saturation-samples=0'], '--saturation-samples must be an integer 1–20'],
    [['--memory-limit=8'], '--memory-limit must be an integer 64–65536'],
    [['--variant=fast'], '--variant: "fast" is neither NAME=value nor a --node-flag'],
  ])('refuses %j naming the option', (args, message) => {
    expect(() => frontendBenchSettings(args)).toThrow(message);
  });
});
