import type { OutgoingHttpHeaders } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import type { ExchangeObserver } from '../../lib/exchange-observer.ts';
import { rawHeaders } from '../../lib/fast-upstream/raw-headers.ts';
import { ResponseFramer, type FramerTap } from '../../lib/fast-upstream/response-framer.ts';
import { targetParts, type TargetParts } from '../../lib/fast-upstream/target-parts.ts';
import { UpstreamPool, type Upstream, type UpstreamUser } from '../../lib/fast-upstream/upstream-pool.ts';
import { tunnelHeaders } from '../../lib/tunnel/protocol.ts';
import { relayHead, resetStream } from '../../lib/tunnel/relay.ts';
import { nodeResponseHeaders, requestHead } from './backend-head.ts';

/** A bodiless request of a tunnel stream, as the backend is to get it. */
export interface PooledRequest {
  /** The stream's `:method`, as the visitor sent it. */
  readonly method: string;
  /** The request target: the share target's path joined with the stream's `:path`. */
  readonly path: string;
  /** The headers for the backend, Host the target's (serve-stream.ts prepares them for both paths). */
  readonly headers: OutgoingHttpHeaders;
  readonly target: URL;
}

/** Methods RFC 9110 §9.2.2 calls idempotent: sent again, once, when a kept-alive connection closed unread. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
const noop = (): void => undefined;

/** Kept-alive connections to the agent's `http://` share backends, shared by every tunnel stream. */
const pool = new UpstreamPool();

/**
 * The agent's fast path to a share's backend (docs/design.md, "The tunnel"): a stream its HEADERS
 * frame ended (no body) to an `http://` target is sent as a request head written here on a pooled
 * kept-alive connection, and the response read by the frontend's framer (lib/fast-upstream), with
 * none of `node:http`'s client objects, which cost most of the agent's time per request. What the
 * backend gets and what the stream gets back are what the `node:http` path (serve-stream.ts) sends
 * and answers: the same head bytes, the same status and headers (as Node's client would have read
 * them), the body under the stream's flow control, the same 502 text and the same reset when the
 * backend fails. False, and nothing done, when the request is one this path leaves to `node:http`
 * (a header value or path Node's client refuses, a `Trailer`, every connection to that backend busy).
 */
export function serveFromPool(
  stream: ServerHttp2Stream,
  request: PooledRequest,
  record: () => ExchangeObserver | undefined,
): boolean {
  const method = upperCaseToken(request.method);
  const head = method && request.headers.trailer === undefined && requestHead(method, request.path, request.headers);
  if (!method || !head) return false;
  const parts = targetParts(request.target);
  const upstream = pool.take(parts.upstreamHost, parts.upstreamPort, false, parts.poolKey);
  if (!upstream) return false;
  new BackendExchange(stream, { method, head, parts }, record()).send(upstream);
  return true;
}

/** The method as Node's client sends it (upper-cased), or undefined when it is no HTTP token. */
function upperCaseToken(method: string): string | undefined {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(method) ? method.toUpperCase() : undefined;
}

interface SentRequest {
  readonly method: string;
  readonly head: string;
  readonly parts: TargetParts;
}

/**
 * One request on a pooled connection and its response onto the stream. The framer reports the
 * final head and the body (without chunked framing) through its tap while it reads a chunk; what
 * one chunk held is passed on once the chunk is read, so that a small response leaves as one
 * HEADERS frame and one DATA frame ending the stream.
 */
class BackendExchange implements UpstreamUser, FramerTap {
  private readonly stream: ServerHttp2Stream;
  private readonly request: SentRequest;
  private readonly observer: ExchangeObserver | undefined;
  private upstream: Upstream | undefined;
  private framer: ResponseFramer | undefined;
  /** The connection's byte count when the head went out: a reused one that closes with nothing read was stale. */
  private readAt = 0;
  private retried = false;
  private over = false;
  /** What the chunk being read held: the final head (status and text), then body bytes. */
  private pendingHead: { status: number; text: string } | undefined;
  private pendingBody: Buffer[] = [];

  constructor(stream: ServerHttp2Stream, request: SentRequest, observer: ExchangeObserver | undefined) {
    this.stream = stream;
    this.request = request;
    this.observer = observer;
    stream.on('drain', this.onDrain);
    // A visitor who went away cancels the stream: the backend connection is dropped, not pooled.
    stream.on('close', this.onClose);
  }

  send(upstream: Upstream): void {
    upstream.user = this;
    this.upstream = upstream;
    this.framer = new ResponseFramer(this.request.method === 'HEAD', undefined, this);
    this.readAt = upstream.socket.bytesRead;
    upstream.socket.write(this.request.head, 'latin1');
  }

  head(status: number, text: string): void {
    this.pendingHead = { status, text };
    this.observer?.response(status, rawHeaders(text));
  }

  body(data: Buffer): void {
    this.pendingBody.push(data);
    this.observer?.responseBody(data);
  }

  upstreamData(chunk: Buffer): void {
    // Reset by the visitor, its 'close' not yet emitted: nothing more is answered on it.
    if (this.stream.closed) return this.cancel();
    const framer = this.framer as ResponseFramer;
    let used: number;
    try {
      used = framer.feed(chunk, noop);
    } catch (err) {
      this.passOn(false);
      return this.fail(notAnswered(err as Error));
    }
    this.passOn(framer.done);
    if (!framer.done) return;
    // Bytes after the end of the response, or a backend that closes after it: not pooled again.
    this.finish(used === chunk.length && !(framer.headParsed?.closes ?? true));
  }

  upstreamClosed(err: Error | undefined): void {
    if (this.over) return;
    const framer = this.framer as ResponseFramer;
    if (!err && framer.end()) {
      // A close-delimited body: complete with the connection's end.
      this.over = true;
      this.stream.end();
      return;
    }
    const upstream = this.upstream as Upstream;
    if (upstream.reused && upstream.socket.bytesRead === this.readAt && !this.retried) {
      if (IDEMPOTENT.has(this.request.method)) return this.retry();
    }
    // The text Node's client gives a connection that closed before its response.
    this.fail(notAnswered(err ?? new Error('socket hang up')));
  }

  /** A kept-alive connection the backend had closed before reading the request: sent again on a new one. */
  private retry(): void {
    this.retried = true;
    const { upstreamHost, upstreamPort, poolKey } = this.request.parts;
    this.send(pool.take(upstreamHost, upstreamPort, true, poolKey) as Upstream);
  }

  /** Passes on what the chunk just read held: the head (ending the stream when `ended` and no body came), the body. */
  private passOn(ended: boolean): void {
    const stream = this.stream;
    if (this.pendingHead) {
      const { status, text } = this.pendingHead;
      this.pendingHead = undefined;
      const headers = { ...tunnelHeaders(nodeResponseHeaders(rawHeaders(text))), ':status': status };
      if (!relayHead(stream, headers, ended && this.pendingBody.length === 0)) {
        this.pendingBody = [];
        return this.fail(`the share backend answered status ${status}, which HTTP/2 cannot carry`);
      }
    }
    const body = this.pendingBody;
    if (body.length === 0) {
      if (ended && !stream.writableEnded) stream.end();
      return;
    }
    this.pendingBody = [];
    const data = body.length === 1 ? (body[0] as Buffer) : Buffer.concat(body);
    if (ended) stream.end(data);
    else if (!stream.write(data)) this.upstream?.socket.pause();
  }

  /** The response is complete: its connection back to the pool when `reusable`. */
  private finish(reusable: boolean): void {
    this.over = true;
    const upstream = this.upstream as Upstream;
    if (reusable) pool.give(upstream);
    else drop(upstream);
  }

  /** The backend failed: 502 saying why when nothing was answered yet, else the stream is reset. */
  private fail(why: string): void {
    this.over = true;
    drop(this.upstream as Upstream);
    const stream = this.stream;
    if (stream.headersSent) return resetStream(stream);
    if (stream.closed) return;
    stream.respond({ ':status': 502, 'content-type': 'text/plain; charset=utf-8' });
    stream.end(`502: ${why}\n`);
  }

  private readonly onDrain = (): void => {
    if (!this.over) this.upstream?.socket.resume();
  };

  private readonly onClose = (): void => {
    this.observer?.end();
    this.cancel();
  };

  /** The stream is gone: a request still in flight is dropped with its connection. */
  private cancel(): void {
    if (this.over) return;
    this.over = true;
    drop(this.upstream as Upstream);
  }
}

/** The 502 reason of a backend that failed, as the `node:http` path words it. */
function notAnswered(err: Error): string {
  return `the share backend did not answer: ${err.message}`;
}

/** A connection whose response was cut or refused: closed, never pooled. */
function drop(upstream: Upstream): void {
  upstream.user = undefined;
  upstream.socket.destroy();
}
