import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from './duration.ts';

describe('durations', () => {
  it('parses the seed forms', () => {
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('6h')).toBe(21_600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
  });
  it('refuses everything else', () => {
    for (const bad of ['', '5', 'h', '-5m', '5 m', '0s', '1.5h', '3 hours', '5M'])
      expect(parseDuration(bad)).toBeUndefined();
  });
  it('formats back', () => {
    expect(formatDuration(10_800_000)).toBe('3h');
    expect(formatDuration(90_000)).toBe('90s');
  });
});
