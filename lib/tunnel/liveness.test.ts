import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Liveness } from './liveness.ts';

const settings = { pingIntervalMs: 3_000, pingTimeoutMs: 8_000 };

function watch(): { liveness: Liveness; pings: () => number; deadAfter: () => number | undefined } {
  let pings = 0;
  let dead: number | undefined;
  const liveness = new Liveness(settings, { ping: () => pings++, dead: (silent) => (dead = silent) }, Date.now);
  return { liveness, pings: () => pings, deadAfter: () => dead };
}

describe('Liveness', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('pings every interval and declares a silent peer dead at the timeout, not later', () => {
    const { pings, deadAfter } = watch();
    vi.advanceTimersByTime(7_999);
    expect(pings()).toBe(2);
    expect(deadAfter()).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(deadAfter()).toBe(8_000);
    vi.advanceTimersByTime(30_000);
    expect(pings(), 'no pings once dead').toBe(2);
  });

  it('counts the timeout from the last thing heard', () => {
    const { liveness, deadAfter } = watch();
    vi.advanceTimersByTime(5_000);
    liveness.heard();
    vi.advanceTimersByTime(7_999);
    expect(deadAfter()).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(deadAfter()).toBe(8_000);
  });

  it('a busy peer whose ping acks never come back is alive as long as any bytes arrive', () => {
    const { liveness, pings, deadAfter } = watch();
    for (let t = 0; t < 60_000; t += 500) {
      vi.advanceTimersByTime(500);
      liveness.heard();
    }
    expect(pings()).toBe(20);
    expect(deadAfter()).toBeUndefined();
    vi.advanceTimersByTime(8_000);
    expect(deadAfter()).toBe(8_000);
  });

  it('stop ends the pings and the deadline', () => {
    const { liveness, pings, deadAfter } = watch();
    liveness.stop();
    vi.advanceTimersByTime(60_000);
    expect(pings()).toBe(0);
    expect(deadAfter()).toBeUndefined();
  });
});
