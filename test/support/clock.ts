import type { Clock } from '../../lib/clock.ts';

/**
 * A clock that runs in real time and can be moved forward: `advance(ms)` does at once what sleeping
 * `ms` would do to the code that reads it, and nothing to anything else (browsers, providers).
 */
export class TestClock implements Clock {
  private offsetMs = 0;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
