import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../clock.ts';
import { MINUTE_MS, whenAnswered, type TrafficCounter, type TrafficCounts } from './traffic.ts';

/** One share's counts in one minute (`minute`: its start, epoch ms). */
export interface TalliedMinute extends TrafficCounts {
  readonly token: string;
  readonly minute: number;
}

/** (share, minute) pairs held at once; past that a request's counts are dropped (and counted in `dropped`). */
export const MAX_TALLIED = 20_000;

/**
 * A frontend replica's traffic counts since its last report to the controller: per (share, minute)
 * sums, taken out in batches (`take`) by the reporter. Bounded: at most `MAX_TALLIED` pairs wait,
 * which a replica unable to reach the controller for long reaches first; then new counts are dropped.
 */
export class TrafficTally implements TrafficCounter {
  private readonly pending = new Map<string, { token: string; minute: number; counts: number[] }>();
  private readonly clock: Clock;
  private readonly max: number;
  /** Requests not counted because the tally was full. */
  dropped = 0;

  constructor(clock: Clock = systemClock, max = MAX_TALLIED) {
    this.clock = clock;
    this.max = max;
  }

  track(token: string, req: IncomingMessage, res: ServerResponse): void {
    whenAnswered(req, res, (failed, bytesIn, bytesOut) => this.record(token, failed, bytesIn, bytesOut));
  }

  /** Adds one request of `token` to the current minute. */
  record(token: string, failed: boolean, bytesIn: number, bytesOut: number): void {
    const minute = Math.floor(this.clock.now() / MINUTE_MS) * MINUTE_MS;
    const key = `${minute} ${token}`;
    let entry = this.pending.get(key);
    if (!entry) {
      if (this.pending.size >= this.max) {
        this.dropped++;
        return;
      }
      entry = { token, minute, counts: [0, 0, 0, 0] };
      this.pending.set(key, entry);
    }
    const c = entry.counts;
    c[0] = (c[0] as number) + 1;
    c[1] = (c[1] as number) + Math.max(0, bytesIn);
    c[2] = (c[2] as number) + Math.max(0, bytesOut);
    c[3] = (c[3] as number) + (failed ? 1 : 0);
  }

  /** Removes and returns up to `max` waiting entries, oldest first. */
  take(max: number): TalliedMinute[] {
    const out: TalliedMinute[] = [];
    for (const [key, { token, minute, counts }] of this.pending) {
      if (out.length >= max) break;
      this.pending.delete(key);
      const [requests = 0, bytesIn = 0, bytesOut = 0, errors = 0] = counts;
      out.push({ token, minute, requests, bytesIn, bytesOut, errors });
    }
    return out;
  }

  /** (share, minute) pairs waiting. */
  get size(): number {
    return this.pending.size;
  }
}
