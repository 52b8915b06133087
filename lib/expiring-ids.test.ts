import { describe, expect, it } from 'vitest';
import { ExpiringIds } from './expiring-ids.ts';

const clockAt = (start: number) => {
  const clock = { t: start, now: () => clock.t };
  return clock;
};

describe('ExpiringIds', () => {
  it('refuses a replay until the id expires, then takes it again', () => {
    const clock = clockAt(1000);
    const ids = new ExpiringIds(clock);
    expect(ids.add('a', 2000)).toBe(true);
    expect(ids.add('a', 2000)).toBe(false);
    expect(ids.get('a')).toBe(2000);
    clock.t = 2000;
    expect(ids.get('a')).toBeUndefined();
    expect(ids.add('a', 3000)).toBe(true);
    expect([...ids.entries()]).toEqual([['a', 3000]]);
  });

  it('stays within its bound under a flood, dropping the oldest ids first', () => {
    const clock = clockAt(0);
    const ids = new ExpiringIds(clock, 5000);
    for (let i = 0; i < 50_000; i++) ids.add(`id${i}`, 1_000_000);
    expect(ids.size).toBe(5000);
    expect(ids.get('id0')).toBeUndefined();
    expect(ids.get('id49999')).toBe(1_000_000);
    expect(ids.add('id49999', 1_000_000)).toBe(false);
  });

  it('sweeps expired ids as it grows, so they do not hold their place', () => {
    const clock = clockAt(0);
    const ids = new ExpiringIds(clock, 1_000_000);
    for (let i = 0; i < 10_000; i++) {
      clock.t = i;
      ids.add(`id${i}`, i + 10);
    }
    expect(ids.size).toBeLessThan(2100);
  });
});
