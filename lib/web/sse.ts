import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECURITY_HEADERS } from './headers.ts';

/** Limits of an {@link SseHub}. */
export interface SseLimits {
  /** Bytes a client may have queued unsent; beyond it the client is disconnected (its EventSource reconnects). */
  readonly maxBufferedBytes: number;
  /** Clients connected at once; a further one is answered 503. */
  readonly maxClients: number;
  /**
   * Clients of one topic at once (a topic per account or per share): one page owner holding many
   * streams cannot take the hub's `maxClients` from everyone else. Unbounded when absent.
   */
  readonly maxClientsPerTopic?: number;
  /** A comment line every this many ms keeps proxies and idle timers from closing the stream. */
  readonly heartbeatMs: number;
}

export const DEFAULT_SSE_LIMITS: SseLimits = { maxBufferedBytes: 256 * 1024, maxClients: 32, heartbeatMs: 15_000 };

interface Client {
  readonly res: ServerResponse;
  readonly topic: string;
}

/**
 * Server-sent events to the pages (live updates without polling). Memory per client is bounded:
 * an event is written only while the client's socket has less than `maxBufferedBytes` queued, and a
 * client that falls that far behind is disconnected instead of buffered without end; the browser's
 * EventSource reconnects and the page reloads its state on `open`. Each client listens on a topic
 * (e.g. one share's requests); {@link publish} sends to the clients of that topic and of `*`.
 */
export class SseHub {
  private readonly clients = new Set<Client>();
  private readonly heartbeat: NodeJS.Timeout;

  private readonly limits: SseLimits;

  constructor(limits: SseLimits = DEFAULT_SSE_LIMITS) {
    this.limits = limits;
    this.heartbeat = setInterval(() => this.writeAll(': keep-alive\n\n'), limits.heartbeatMs);
    this.heartbeat.unref();
  }

  /** Number of connected clients. */
  get size(): number {
    return this.clients.size;
  }

  /** Whether any client listens on `topic` (or on every topic): lets publishers skip work nobody sees. */
  listening(topic: string): boolean {
    for (const c of this.clients) if (c.topic === topic || c.topic === '*') return true;
    return false;
  }

  /** Turns the response into an event stream on `topic` until either side closes it. */
  attach(req: IncomingMessage, res: ServerResponse, topic = '*'): void {
    const full =
      this.clients.size >= this.limits.maxClients ||
      (this.limits.maxClientsPerTopic !== undefined && this.countOf(topic) >= this.limits.maxClientsPerTopic);
    if (full) {
      res.writeHead(503, { ...SECURITY_HEADERS, 'content-type': 'text/plain', 'retry-after': '5' });
      res.end('too many live pages open: close another tab of these pages\n');
      return;
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 2000\n\n');
    const client = { res, topic };
    this.clients.add(client);
    const drop = () => this.clients.delete(client);
    req.once('close', drop);
    res.once('close', drop);
  }

  private countOf(topic: string): number {
    let n = 0;
    for (const c of this.clients) if (c.topic === topic) n++;
    return n;
  }

  /** Sends event `event` with `data` (JSON) to the clients of `topic`. */
  publish(topic: string, event: string, data: unknown): void {
    if (this.clients.size === 0) return;
    const frame = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const c of this.clients) if (c.topic === topic || c.topic === '*' || topic === '*') this.write(c, frame);
  }

  /** Ends every stream and stops the heartbeat. */
  close(): void {
    clearInterval(this.heartbeat);
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }

  private writeAll(frame: string): void {
    for (const c of this.clients) this.write(c, frame);
  }

  private write(c: Client, frame: string): void {
    if (c.res.writableLength + frame.length > this.limits.maxBufferedBytes) {
      this.clients.delete(c);
      c.res.destroy();
      return;
    }
    c.res.write(frame);
  }
}
