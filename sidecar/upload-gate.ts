import type { IncomingMessage, ServerResponse } from 'node:http';
import { hasBody, sendReadAhead } from '../lib/http-pipe.ts';
import type { FrontendLimits } from './connections.ts';
import { sendPage } from './pages.ts';

/**
 * A request body up to this size is read whole before the share's backend is contacted, so a
 * visitor who sends it slowly holds only its own connection (bounded by the per-address cap and the
 * request timeout), never one of the backend connections the share's other visitors need. It is
 * the size of one socket's own read buffer in Node, so it adds no new order of memory per connection.
 */
export const BODY_BUFFER_BYTES = 64 * 1024;

/**
 * Larger bodies (or a chunked one not over within the buffer) are streamed on to the backend, at
 * most this many at once per share, a quarter of the backend connections Node's agent keeps per
 * backend (lib/http-pipe.ts): slow uploads leave three quarters to the share's other visitors.
 * Further ones wait, unread, for a turn (their wait counts against the request timeout).
 */
export const MAX_STREAMED_BODIES_PER_SHARE = 64;

/**
 * Decides when a request with a body may take a backend connection (see the two constants): read
 * whole when small (then sent in one piece, lib/http-pipe.ts `sendReadAhead`), else in turn among
 * the share's streamed bodies. `go` is called once, or never when the visitor leaves first.
 */
export class UploadGate {
  private readonly streaming = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  private readonly rate: BodyRate;

  constructor(limits: Pick<FrontendLimits, 'bodyRateWindowMs' | 'bodyMinBytesPerWindow'>) {
    this.rate = new BodyRate(limits.bodyRateWindowMs, limits.bodyMinBytesPerWindow);
  }

  admit(req: IncomingMessage, res: ServerResponse, share: string, go: () => void): void {
    if (!hasBody(req)) return go();
    const declared = Number(req.headers['content-length'] ?? Number.NaN);
    if (declared > BODY_BUFFER_BYTES) return this.stream(req, res, share, go);
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      length += chunk.length;
      if (length <= BODY_BUFFER_BYTES) return;
      // A chunked body longer than the buffer: streamed from here, what was read put back first.
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.pause();
      req.unshift(Buffer.concat(chunks, length));
      this.stream(req, res, share, go);
    };
    const onEnd = (): void => {
      sendReadAhead(req, Buffer.concat(chunks, length));
      go();
    };
    req.on('data', onData);
    req.on('end', onEnd);
  }

  /** Bodies being streamed to `share`'s backend now. */
  streamed(share: string): number {
    return this.streaming.get(share) ?? 0;
  }

  private stream(req: IncomingMessage, res: ServerResponse, share: string, go: () => void): void {
    const start = (): void => {
      this.streaming.set(share, this.streamed(share) + 1);
      res.once('close', () => this.release(share));
      this.rate.watch(req, res);
      go();
    };
    if (this.streamed(share) < MAX_STREAMED_BODIES_PER_SHARE) return start();
    const queue = this.waiting.get(share) ?? [];
    const turn = (): void => {
      if (!res.destroyed && !res.writableEnded) start();
      else this.release(share, false);
    };
    queue.push(turn);
    this.waiting.set(share, queue);
  }

  /** A streamed body is done (`held`), or a waiting request left: the next waiting one starts. */
  private release(share: string, held = true): void {
    if (held) {
      const left = this.streamed(share) - 1;
      if (left > 0) this.streaming.set(share, left);
      else this.streaming.delete(share);
    }
    const queue = this.waiting.get(share);
    const next = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(share);
    next?.();
  }
}

/** A streamed body: the connection's bytes read when its current window began. */
interface Watched {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  since: number;
  bytes: number;
}

/**
 * The minimum rate of streamed bodies, kept by one sweep (a tenth of the window, at most a second)
 * instead of a timer per upload. A window in which the request was paused (the backend not
 * reading: backpressure) does not count against the visitor.
 */
class BodyRate {
  private watched: Watched[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly windowMs: number;
  private readonly minBytes: number;

  constructor(windowMs: number, minBytes: number) {
    this.windowMs = windowMs;
    this.minBytes = minBytes;
  }

  watch(req: IncomingMessage, res: ServerResponse): void {
    this.watched.push({ req, res, since: Date.now(), bytes: req.socket.bytesRead });
    this.timer ??= setInterval(() => this.sweep(), Math.max(10, Math.min(1_000, this.windowMs / 10))).unref();
  }

  private sweep(): void {
    const now = Date.now();
    this.watched = this.watched.filter((upload) => {
      const { req, res } = upload;
      if (req.complete || res.destroyed || res.writableEnded) return false;
      const bytes = req.socket.bytesRead;
      if (req.isPaused()) {
        upload.since = now;
        upload.bytes = bytes;
        return true;
      }
      if (now - upload.since < this.windowMs) return true;
      if (bytes - upload.bytes >= this.minBytes) {
        upload.since = now;
        upload.bytes = bytes;
        return true;
      }
      cut(req, res);
      return false;
    });
    if (this.watched.length === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/**
 * A body too slow: 408 and the connection closed when nothing was answered yet, else the connection
 * cut; either way the request fails, and with it the backend request it was streamed into.
 */
function cut(req: IncomingMessage, res: ServerResponse): void {
  sendPage(res, 408, 'Request timeout', 'The request body arrived too slowly.', { connection: 'close' });
  // Destroyed with an error, so that the pipe to the backend (lib/http-pipe.ts) fails too: once the
  // 408 is finished, Node's server no longer aborts the request when its connection closes.
  res.once('finish', () => req.destroy(new Error('request body too slow')));
}
