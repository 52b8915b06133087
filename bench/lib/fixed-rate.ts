import { Agent, request } from 'node:http';

/** Latency at a fixed arrival rate (open loop): requests leave on schedule, whatever the replies do. */
export interface FixedRateOptions {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Requests per second to send. */
  readonly rate: number;
  readonly durationSeconds: number;
  /** Keep-alive connections at most (requests beyond wait for one, and their wait counts). */
  readonly connections: number;
}

export interface FixedRateResult {
  readonly rate: number;
  readonly sent: number;
  readonly completed: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly non2xx: number;
  readonly errors: number;
  /** What the errors were, as the generator words them (vegeta's error set), when it says. */
  readonly errorKinds?: readonly string[];
  /** The generator: vegeta (bench/lib/vegeta.ts) when built, else this module's Node client. */
  readonly tool: 'vegeta' | 'node';
}

/**
 * Sends `rate` requests per second for `durationSeconds` and measures each one from the moment it
 * was *scheduled*, not sent, so a slow server cannot hide its queueing (no coordinated omission;
 * wrk2's approach). Resolution is the event loop's (µs timestamps, ~1 ms timer ticks, which only
 * delay the send and are therefore counted). Run it in its own process (`startModule`).
 */
export async function runFixedRate(options: FixedRateOptions): Promise<FixedRateResult> {
  const target = new URL(options.url);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  const total = Math.round(options.rate * options.durationSeconds);
  const intervalMs = 1000 / options.rate;
  const start = performance.now();
  const pending: Promise<void>[] = [];

  const one = (scheduled: number): Promise<void> =>
    new Promise((resolve) => {
      const req = request(
        { host: target.hostname, port: target.port, path: target.pathname, headers: options.headers, agent },
        (res) => {
          if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) non2xx += 1;
          res.resume();
          res.once('end', () => {
            latencies.push(performance.now() - scheduled);
            resolve();
          });
        },
      );
      req.once('error', () => {
        errors += 1;
        resolve();
      });
      req.end();
    });

  await new Promise<void>((done) => {
    const tick = (): void => {
      const due = Math.min(total, Math.floor((performance.now() - start) / intervalMs) + 1);
      for (; sent < due; sent += 1) pending.push(one(start + sent * intervalMs));
      if (sent >= total) done();
      else setTimeout(tick, 1);
    };
    tick();
  });
  await Promise.all(pending);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? NaN;
  return {
    rate: options.rate,
    sent,
    completed: latencies.length,
    p50Ms: pct(0.5),
    p90Ms: pct(0.9),
    p99Ms: pct(0.99),
    maxMs: latencies.at(-1) ?? NaN,
    non2xx,
    errors,
    tool: 'node',
  };
}
