import type { ClientRequest } from 'node:http';

/** The backend stayed silent longer than the frontend's backend timeout (answered 504, not 502). */
export class BackendTimeout extends Error {
  constructor(ms: number) {
    super(`no answer from the backend within ${ms} ms`);
    this.name = 'BackendTimeout';
  }
}

/** One watched request; `request` is cleared when it is done (swept out at the next sweep). */
export interface Watched {
  request: ClientRequest | undefined;
  /** Bytes read and written on the request's socket at the last sweep; -1 before it has one. */
  bytes: number;
  since: number;
}

/**
 * The backend timeout of every proxied request, kept by one sweep over the requests in flight
 * instead of a socket timeout per request: `ClientRequest#setTimeout` arms a timer, adds and
 * removes listeners and re-arms on every socket event, a measurable part of a proxied request's
 * CPU (docs/benchmarks-history.md, "The sidecar under 80 MiB"). A request whose socket has moved no byte either way for
 * `timeoutMs` is destroyed with BackendTimeout; so, as with a socket idle timeout, a slow download
 * that keeps arriving is never cut, and the wait for a free connection does not count. It fires
 * between `timeoutMs` and `timeoutMs` plus two sweeps, each a tenth of it (at most a second).
 */
export class BackendIdleWatch {
  // An array, not a Map keyed by the request: hashing a ClientRequest (an identity hash added to
  // Node's own object) made every proxied request measurably slower.
  private inFlight: Watched[] = [];
  private readonly timeoutMs: number;
  private readonly sweepMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(timeoutMs: number) {
    this.timeoutMs = timeoutMs;
    this.sweepMs = Math.max(10, Math.min(1_000, Math.floor(timeoutMs / 10)));
  }

  add(request: ClientRequest): Watched {
    const watched: Watched = { request, bytes: -1, since: Date.now() };
    this.inFlight.push(watched);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), this.sweepMs);
      this.timer.unref();
    }
    return watched;
  }

  /** The request is done (answered, failed or cancelled): never time it out. */
  done(watched: Watched): void {
    watched.request = undefined;
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.inFlight = [];
  }

  private sweep(): void {
    const now = Date.now();
    const still: Watched[] = [];
    for (const watched of this.inFlight) {
      const request = watched.request;
      if (!request) continue;
      const socket = request.socket;
      const bytes = socket ? socket.bytesRead + socket.bytesWritten : -1;
      if (bytes === -1 || bytes !== watched.bytes) {
        watched.bytes = bytes;
        watched.since = now;
      } else if (now - watched.since >= this.timeoutMs) {
        watched.request = undefined;
        request.destroy(new BackendTimeout(this.timeoutMs));
        continue;
      }
      still.push(watched);
    }
    this.inFlight = still;
    if (still.length === 0) this.close();
  }
}
