import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Liveness } from './liveness.ts';

const settings = { pingIntervalMs: 3_000, pingTimeoutMs: 8_000 };

function watch(): { liveness: Liveness; pings: () => number; deadAfter: () => number | undefined } {
  let pings = 0;
  let dead: number | undefined;
  const liveness = new Liveness(settings, { ping: () => pings++, dead: (silent) => (dead = silent) }, Date.now);
  return { liveness, pings: () => pings, deadAfter: () => dead };
}

/** Advances the fake clock, then lets the real immediates its timers queued run (a verdict waits for one). */
async function advance(ms: number): Promise<void> {
  vi.advanceTimersByTime(ms);
  await new Promise((resolve) => setImmediate(resolve));
}

describe('Liveness', () => {
  // Immediates stay real: `advance` waits for the one a verdict is deferred to.
  const faked = ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] as const;
  beforeEach(() => void vi.useFakeTimers({ toFake: [...faked] }));
  afterEach(() => void vi.useRealTimers());

  it('pings every interval and declares a silent peer dead at the timeout, not later', async () => {
    const { pings, deadAfter } = watch();
    await advance(7_999);
    expect(pings()).toBe(2);
    expect(deadAfter()).toBeUndefined();
    await advance(1);
    expect(deadAfter()).toBe(8_000);
    await advance(30_000);
    expect(pings(), 'no pings once dead').toBe(2);
  });

  it('counts the timeout from the last thing heard', async () => {
    const { liveness, deadAfter } = watch();
    await advance(5_000);
    liveness.heard();
    await advance(7_999);
    expect(deadAfter()).toBeUndefined();
    await advance(1);
    expect(deadAfter()).toBe(8_000);
  });

  it('a busy peer whose ping acks never come back is alive as long as any bytes arrive', async () => {
    const { liveness, pings, deadAfter } = watch();
    for (let t = 0; t < 60_000; t += 500) {
      await advance(500);
      liveness.heard();
    }
    expect(pings()).toBe(20);
    expect(deadAfter()).toBeUndefined();
    await advance(8_000);
    expect(deadAfter()).toBe(8_000);
  });

  it('stop ends the pings and the deadline', async () => {
    const { liveness, pings, deadAfter } = watch();
    liveness.stop();
    await advance(60_000);
    expect(pings()).toBe(0);
    expect(deadAfter()).toBeUndefined();
  });
});
