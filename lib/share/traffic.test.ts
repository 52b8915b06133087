import { describe, expect, it } from 'vitest';
import type { Clock } from '../clock.ts';
import { ShareTraffic, TRAFFIC_MINUTES, trafficTotals } from './traffic.ts';

/** A clock a test sets by hand. */
const manual = (start: number): Clock & { at: number } => {
  const clock = { at: start, now: () => clock.at };
  return clock;
};

describe('ShareTraffic', () => {
  const START = 1_800_000_000_000;

  it('counts requests, bytes and errors per minute of each share, the current minute last', () => {
    const clock = manual(START);
    const traffic = new ShareTraffic(clock);
    traffic.record('alpha', false, 10, 100);
    traffic.record('alpha', true, 0, 50);
    clock.at += 60_000;
    traffic.record('alpha', false, 5, 20);
    traffic.record('beta', false, 1, 1);
    const hour = traffic.lastHour('alpha');
    expect(hour).toHaveLength(TRAFFIC_MINUTES);
    expect(hour.at(-1)).toMatchObject({ requests: 1, bytesIn: 5, bytesOut: 20, errors: 0 });
    expect(hour.at(-2)).toMatchObject({ requests: 2, bytesIn: 10, bytesOut: 150, errors: 1 });
    expect(hour.at(-1)?.at).toBe(Math.floor(clock.at / 60_000) * 60_000);
    expect(trafficTotals(hour)).toEqual({ requests: 3, bytesIn: 15, bytesOut: 170, errors: 1 });
    expect(trafficTotals(traffic.lastHour('beta')).requests).toBe(1);
    expect(trafficTotals(traffic.lastHour('unknown'))).toEqual({ requests: 0, bytesIn: 0, bytesOut: 0, errors: 0 });
  });

  it('forgets minutes older than an hour, also when their slot is reused', () => {
    const clock = manual(START);
    const traffic = new ShareTraffic(clock);
    traffic.record('alpha', false, 1, 1);
    clock.at += 59 * 60_000;
    expect(trafficTotals(traffic.lastHour('alpha')).requests).toBe(1);
    clock.at += 60_000;
    expect(trafficTotals(traffic.lastHour('alpha')).requests).toBe(0);
    // Exactly an hour later the same slot holds the new minute alone.
    traffic.record('alpha', false, 1, 1);
    expect(trafficTotals(traffic.lastHour('alpha')).requests).toBe(1);
  });

  it('keeps at most maxShares shares, dropping the one counted first', () => {
    const traffic = new ShareTraffic(manual(START), 2);
    traffic.record('a', false, 0, 0);
    traffic.record('b', false, 0, 0);
    traffic.record('c', false, 0, 0);
    expect(traffic.size).toBe(2);
    expect(trafficTotals(traffic.lastHour('a')).requests).toBe(0);
    expect(trafficTotals(traffic.lastHour('c')).requests).toBe(1);
    traffic.forget('c');
    expect(traffic.size).toBe(1);
  });
});
