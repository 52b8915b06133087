import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../clock.ts';

/** Minutes of traffic kept per share: the console's last-hour chart. */
export const TRAFFIC_MINUTES = 60;
/** Shares counted at once; a further one drops the share counted first. */
export const MAX_COUNTED_SHARES = 10_000;

/** One slot of the ring: a minute. */
export const MINUTE_MS = 60_000;
/** Per minute slot: the minute it holds (epoch minutes), requests, bytes in, bytes out, errors. */
const FIELDS = 5;

/** One minute of a share's traffic. */
export interface TrafficMinute {
  /** Start of the minute, epoch ms. */
  readonly at: number;
  readonly requests: number;
  /** Bytes read from the visitor's connection while the request ran (the body, not the head). */
  readonly bytesIn: number;
  /** Bytes written to the visitor's connection for the response, its head included. */
  readonly bytesOut: number;
  /** Responses with a 5xx status, and responses that ended before they were complete. */
  readonly errors: number;
}

/** Counts a share's requests as they end (ShareTraffic here, a replica's TrafficTally to report). */
export interface TrafficCounter {
  track(token: string, req: IncomingMessage, res: ServerResponse): void;
  /** Counts one request whose response is over (the fast path, which has no ServerResponse to watch). */
  record(token: string, failed: boolean, bytesIn: number, bytesOut: number): void;
}

/** The counts of one minute without its start. */
export type TrafficCounts = Omit<TrafficMinute, 'at'>;

/**
 * Calls `done` when the response of `req` closes, with its outcome and bytes. Bytes are the
 * connection's counters' difference over the request: the frontend serves one request of a
 * connection at a time.
 */
export function whenAnswered(
  req: IncomingMessage,
  res: ServerResponse,
  done: (failed: boolean, bytesIn: number, bytesOut: number) => void,
): void {
  const socket = req.socket;
  const readAt = socket.bytesRead;
  const writtenAt = socket.bytesWritten;
  res.once('close', () => {
    const failed = !res.writableFinished || res.statusCode >= 500;
    done(failed, socket.bytesRead - readAt, socket.bytesWritten - writtenAt);
  });
}

/**
 * Per-share request counters over the last hour, for the installation's console: a ring of
 * `TRAFFIC_MINUTES` one-minute slots per share in one Float64Array (2.4 KB a share), each slot
 * stamped with its minute so a stale one is zeroed when written and skipped when read; no timer.
 * At most `MAX_COUNTED_SHARES` shares; past that the share counted first goes.
 */
export class ShareTraffic implements TrafficCounter {
  private readonly rings = new Map<string, Float64Array>();
  private readonly clock: Clock;
  private readonly maxShares: number;

  constructor(clock: Clock = systemClock, maxShares = MAX_COUNTED_SHARES) {
    this.clock = clock;
    this.maxShares = maxShares;
  }

  /** Counts one request of `token` when its response closes (whenAnswered). */
  track(token: string, req: IncomingMessage, res: ServerResponse): void {
    whenAnswered(req, res, (failed, bytesIn, bytesOut) => this.record(token, failed, bytesIn, bytesOut));
  }

  /** Adds one request to the current minute of `token`. */
  record(token: string, failed: boolean, bytesIn: number, bytesOut: number): void {
    const minute = Math.floor(this.clock.now() / MINUTE_MS);
    this.addAt(token, minute, 1, Math.max(0, bytesIn), Math.max(0, bytesOut), failed ? 1 : 0);
  }

  /**
   * Adds `counts` to the minute of `token` holding epoch ms `at` (a replica's report); a minute
   * outside the last hour, or in the future, is not kept and false is returned.
   */
  add(token: string, at: number, counts: TrafficCounts): boolean {
    const minute = Math.floor(at / MINUTE_MS);
    const now = Math.floor(this.clock.now() / MINUTE_MS);
    if (minute > now || minute <= now - TRAFFIC_MINUTES) return false;
    this.addAt(token, minute, counts.requests, counts.bytesIn, counts.bytesOut, counts.errors);
    return true;
  }

  /** Adds to one minute's slot (epoch minutes); the request path allocates nothing. */
  private addAt(token: string, minute: number, requests: number, bytesIn: number, bytesOut: number, errors: number) {
    const ring = this.ringOf(token);
    const slot = (minute % TRAFFIC_MINUTES) * FIELDS;
    if (ring[slot] !== minute) {
      ring.fill(0, slot, slot + FIELDS);
      ring[slot] = minute;
    }
    ring[slot + 1] = (ring[slot + 1] as number) + requests;
    ring[slot + 2] = (ring[slot + 2] as number) + bytesIn;
    ring[slot + 3] = (ring[slot + 3] as number) + bytesOut;
    ring[slot + 4] = (ring[slot + 4] as number) + errors;
  }

  /** The last `TRAFFIC_MINUTES` minutes of `token`, oldest first, the current minute last; zeros when unknown. */
  lastHour(token: string): TrafficMinute[] {
    const ring = this.rings.get(token);
    const now = Math.floor(this.clock.now() / MINUTE_MS);
    const minutes: TrafficMinute[] = [];
    for (let minute = now - TRAFFIC_MINUTES + 1; minute <= now; minute++) {
      const at = (minute % TRAFFIC_MINUTES) * FIELDS;
      const held = ring !== undefined && ring[at] === minute;
      const field = (i: number) => (held ? (ring[at + i] as number) : 0);
      minutes.push({
        at: minute * MINUTE_MS,
        requests: field(1),
        bytesIn: field(2),
        bytesOut: field(3),
        errors: field(4),
      });
    }
    return minutes;
  }

  /** Shares with counters. */
  get size(): number {
    return this.rings.size;
  }

  /** Drops the counters of a share (it left the registry). */
  forget(token: string): void {
    this.rings.delete(token);
  }

  private ringOf(token: string): Float64Array {
    let ring = this.rings.get(token);
    if (ring) return ring;
    if (this.rings.size >= this.maxShares) this.rings.delete(this.rings.keys().next().value as string);
    ring = new Float64Array(TRAFFIC_MINUTES * FIELDS);
    for (let i = 0; i < TRAFFIC_MINUTES; i++) ring[i * FIELDS] = -1;
    this.rings.set(token, ring);
    return ring;
  }
}

/** The sums of a last-hour series. */
export function trafficTotals(minutes: readonly TrafficMinute[]): TrafficCounts {
  let requests = 0;
  let bytesIn = 0;
  let bytesOut = 0;
  let errors = 0;
  for (const m of minutes) {
    requests += m.requests;
    bytesIn += m.bytesIn;
    bytesOut += m.bytesOut;
    errors += m.errors;
  }
  return { requests, bytesIn, bytesOut, errors };
}
