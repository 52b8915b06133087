import type { Socket } from 'node:net';
import type { ShareCookies } from '../../lib/backend-cookies.ts';
import type { ExchangeRecorder } from '../../lib/exchange-observer.ts';
import { errorText } from '../../lib/errors.ts';
import { isHopByHopRequestHeader, joinPath, type BackendHeaders } from '../../lib/http-pipe.ts';
import type { Logger } from '../../lib/logger.ts';
import type { TunnelStreams } from '../../lib/tunnel/stream-target.ts';
import type { FrontendLimits } from '../connections.ts';
import type { FrontendMetrics } from '../metrics.ts';
import { BACKEND_PAGES, rawPage, type Page } from '../pages.ts';
import { rejectUpgrade } from '../share-handler.ts';
import { startRecording, type FastRecording } from './recording.ts';
import { MAX_REQUEST_HEAD_BYTES, parseRequestHead, type FastRequest } from './request-head.ts';
import { INVALID_HEADER_VALUE } from '../../lib/fast-upstream/head-text.ts';
import { BackendProtocolError, ResponseFramer } from '../../lib/fast-upstream/response-framer.ts';
import { TunnelExchange, type TunnelExchangeOwner } from './tunnel-exchange.ts';
import { targetParts } from '../../lib/fast-upstream/target-parts.ts';
import { UpstreamPool, type Upstream, type UpstreamUser } from '../../lib/fast-upstream/upstream-pool.ts';

/**
 * The frontend's fast path (docs/design.md, "The fast path"): the common request of a share — a
 * GET or HEAD without a body, on a share with a plain-HTTP backend, by a visitor whose session
 * needs no I/O — read and forwarded on the socket, without Node's HTTP server and client objects,
 * which cost about two thirds of a proxied request's CPU (docs/benchmarks.md). Each connection
 * starts here; the first request the fast path does not take (a login, a body, an upgrade,
 * anything malformed) hands the connection to Node's HTTP server for good, once the responses
 * before it are complete. Responses are relayed as the backend framed them (response-framer.ts),
 * one request at a time per connection.
 */
export interface FastRoute {
  /** The share's backend, an `http://` URL, or the tunnel of the agent that serves it (tunnel-exchange.ts). */
  readonly target: URL | TunnelStreams;
  /** The request's headers for the backend (sidecar/proxy.ts `backendHeaders`). */
  readonly headers: BackendHeaders;
  readonly share: string;
  /** Which of the backend's Set-Cookie headers reach the visitor (lib/backend-cookies.ts). */
  readonly cookies?: ShareCookies;
  /** The agent's request inspector, shown the exchange as it passes (recording.ts). */
  readonly recorder?: ExchangeRecorder | undefined;
}

export interface FastPathOptions {
  /** The route of a request the fast path may forward, or undefined to leave it to Node's server. */
  readonly route: (request: FastRequest) => FastRoute | undefined;
  readonly limits: FrontendLimits;
  readonly metrics: FrontendMetrics;
  readonly log: Logger;
}

const CRLF2 = Buffer.from('\r\n\r\n');

export class FastPath {
  private readonly pool = new UpstreamPool();
  private connections: FastConnection[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly sweepMs: number;
  readonly options: FastPathOptions;

  constructor(options: FastPathOptions) {
    this.options = options;
    const { headersTimeoutMs, keepAliveTimeoutMs, backendTimeoutMs } = options.limits;
    this.sweepMs = Math.max(
      10,
      Math.min(1_000, Math.floor(Math.min(headersTimeoutMs, keepAliveTimeoutMs, backendTimeoutMs) / 10)),
    );
  }

  /**
   * Serves `socket` until a request the fast path does not take; `handOff` then gives it (with
   * the bytes read so far put back) to Node's server. `started` is told of the first request.
   */
  take(socket: Socket, handOff: (socket: Socket) => void, started: () => void): void {
    this.connections.push(new FastConnection(this, socket, handOff, started));
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), this.sweepMs);
      this.timer.unref();
    }
  }

  /** A connection to the target's backend; undefined when all it may have are busy (unless `fresh`). */
  upstream(target: URL, fresh: boolean): Upstream | undefined {
    const parts = targetParts(target);
    return this.pool.take(parts.upstreamHost, parts.upstreamPort, fresh, parts.poolKey);
  }

  release(upstream: Upstream): void {
    this.pool.give(upstream);
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const connection of this.connections) connection.socket.destroy();
    this.connections = [];
    this.pool.close();
  }

  /** The timeouts of every connection still on the fast path, kept by one sweep instead of timers per request. */
  private sweep(): void {
    const now = Date.now();
    this.connections = this.connections.filter((connection) => connection.check(now, this.options.limits));
    if (this.connections.length === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** The request in flight on a connection: its backend connection and where its response is. */
interface Exchange {
  readonly upstream: Upstream;
  readonly framer: ResponseFramer;
  readonly head: string;
  readonly route: FastRoute;
  /** performance.now() when the head was written (a number: a bigint from hrtime is one more object per request). */
  readonly sentAt: number;
  readonly retried: boolean;
  readonly recording: FastRecording | undefined;
}

/**
 * Where a fast-path connection is; `FastConnection.enter` is the one place it changes.
 *
 * - `head`: reading the next request head (`buffered`, `pieces`, `tail`, `headSince` hold it).
 *   Starting a request leads to `upstream` or `tunnelled`; a request the fast path does not take
 *   hands the connection to Node's server (`done`).
 * - `upstream`: the head went to a plain-HTTP backend (`exchange`), no response head back yet
 *   (the backend timeout runs; a reused connection closed before answering is retried once).
 * - `response`: the backend's response is relayed to the visitor (`exchange.framer`); its end
 *   leads back to `head`.
 * - `tunnelled`: a request to a tunnelled share in flight (`tunnelled`), back to `head` when answered.
 *   In these three, the visitor's further reads are buffered as pipelined requests.
 * - `done`: no longer the fast path's: handed off (between requests, with what was read put back),
 *   abandoned by the visitor, timed out, or ended after a close-delimited response.
 */
type ConnectionState = 'head' | 'upstream' | 'response' | 'tunnelled' | 'done';

class FastConnection implements UpstreamUser, TunnelExchangeOwner {
  readonly socket: Socket;
  private readonly path: FastPath;
  private readonly handOff: (socket: Socket) => void;
  private state: ConnectionState = 'head';
  /** Told of the first request the fast path takes (then undefined). */
  private started: (() => void) | undefined;
  /** What the visitor sent beyond the requests taken: the head being read, or pipelined requests. */
  private buffered: Buffer | undefined;
  /** In `upstream` and `response`: the request in flight to a plain-HTTP backend. */
  private exchange: Exchange | undefined;
  /** In `tunnelled`: the request in flight to a tunnelled share. */
  private tunnelled: TunnelExchange | undefined;
  /** In `head`: when the head now being received began (0: none), for the headers timeout. */
  private headSince = 0;
  /**
   * In `head`: the later reads of an unfinished head, kept apart until its end arrives (then joined
   * once), and its last three bytes, where an end split across reads begins: joining and searching
   * the whole head on every read would cost quadratic time for a head sent a byte per packet.
   */
  private pieces: Buffer[] = [];
  private piecesLength = 0;
  private tail: Buffer = Buffer.alloc(0);
  /** Bytes moved at the last sweep, and since when that figure holds. */
  private progress = -1;
  private since = Date.now();
  private readonly onData = (chunk: Buffer): void => this.received(chunk);
  private readonly onDrain = (): void => {
    this.exchange?.upstream.socket.resume();
    this.tunnelled?.resume();
  };
  private readonly onClose = (): void => this.abandon();
  /**
   * The visitor sent its last byte: what it asked for is abandoned (its backend connection closed,
   * its pipelined requests dropped) and the connection ended, as Node's server does.
   */
  private readonly onEnd = (): void => {
    this.abandon();
    this.socket.end();
  };
  private readonly onError = (): void => {
    this.socket.destroy();
  };

  constructor(path: FastPath, socket: Socket, handOff: (socket: Socket) => void, started: () => void) {
    this.path = path;
    this.socket = socket;
    this.handOff = handOff;
    this.started = started;
    socket.on('data', this.onData);
    socket.on('drain', this.onDrain);
    socket.on('close', this.onClose);
    socket.on('error', this.onError);
    socket.on('end', this.onEnd);
  }

  /**
   * The one place the state changes. Leaving `upstream`, `response` or `tunnelled` drops the
   * request in flight; what it still holds (its backend connection, its recording) is released by
   * the caller first.
   */
  private enter(state: ConnectionState): void {
    if (state !== 'upstream' && state !== 'response') this.exchange = undefined;
    if (state !== 'tunnelled') this.tunnelled = undefined;
    this.state = state;
  }

  /** Applies the timeouts; false once the connection is no longer the fast path's. */
  check(now: number, limits: FrontendLimits): boolean {
    if (this.over) return false;
    if (this.state === 'tunnelled') {
      // The stream's own idle timer applies (TunnelStreams.idleMs); the keep-alive wait starts after it.
      this.since = now;
      return true;
    }
    const exchange = this.exchange;
    const moved = exchange
      ? exchange.upstream.socket.bytesRead + exchange.upstream.socket.bytesWritten
      : this.socket.bytesRead + this.socket.bytesWritten;
    if (moved !== this.progress) {
      this.progress = moved;
      this.since = now;
    }
    if (exchange) {
      if (now - this.since >= limits.backendTimeoutMs) this.backendTimedOut(exchange, limits.backendTimeoutMs);
    } else if (this.headSince !== 0 && now - this.headSince >= limits.headersTimeoutMs) {
      // Answered as Node's server answers a head that does not arrive in time.
      this.enter('done');
      rejectUpgrade(this.socket, 408);
    } else if (!this.started && !this.buffered && now - this.since >= limits.keepAliveTimeoutMs) {
      // Idle between requests (before the first one, the server's own wait for a first request applies).
      this.socket.destroy();
    }
    // A timed-out response can end in a hand-off (`finish`, then the next request's `next`).
    return !this.over;
  }

  /** The connection is no longer the fast path's. */
  private get over(): boolean {
    return this.state === 'done';
  }

  upstreamData(chunk: Buffer): void {
    const exchange = this.exchange as Exchange;
    const framer = exchange.framer;
    let used: number;
    // A read often holds a whole small response, which the framer relays as two writes (the head
    // it rebuilt, then the body): corked, they leave in one writev system call rather than two.
    this.socket.cork();
    try {
      used = framer.feed(chunk, this.relay);
      if (this.state === 'upstream' && framer.headParsed) this.responseBegins(exchange);
    } catch (err) {
      this.socket.uncork();
      this.backendFailed(exchange, err as Error);
      return;
    }
    this.socket.uncork();
    if (!framer.done) return;
    // Bytes after the end of a response nobody asked for: that connection cannot be trusted again.
    const clean = used === chunk.length && !(framer.headParsed?.closes ?? true);
    this.finish(exchange, clean);
  }

  upstreamClosed(err: Error | undefined): void {
    const exchange = this.exchange;
    if (!exchange) return;
    if (!err && exchange.framer.end()) {
      // A close-delimited body: complete, and the visitor's connection ends with it (its head said
      // so); requests the visitor pipelined behind it are left for it to send again.
      this.enter('done');
      exchange.recording?.end();
      this.socket.end();
      return;
    }
    if (exchange.framer.relayed === 0 && exchange.upstream.reused && !exchange.retried) {
      // A kept-alive connection the backend had closed before it read the request: a GET or HEAD
      // is safe to send again, once, on a new connection.
      const upstream = this.path.upstream(exchange.route.target as URL, true) as Upstream;
      this.send(exchange.head, exchange.route, upstream, true, exchange.recording);
      return;
    }
    this.backendFailed(exchange, err ?? new Error('the backend closed the connection before the end of its response'));
  }

  private readonly relay = (data: Buffer | string): void => {
    const flushed = typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data);
    if (!flushed) this.exchange?.upstream.socket.pause();
  };

  private received(chunk: Buffer): void {
    if (!this.buffered) this.buffered = chunk;
    else if (this.busy) this.buffered = Buffer.concat([this.buffered, chunk]);
    else if (!this.continueHead(chunk)) return;
    if (this.busy) {
      // Pipelined requests wait for the response in flight. The connection is still read (so that
      // a visitor who leaves is noticed at once, and its backend connection freed) up to a head's
      // worth: a client that floods is not read further.
      if (this.buffered.length > MAX_REQUEST_HEAD_BYTES) this.socket.pause();
      return;
    }
    this.next();
  }

  /** Adds a read to an unfinished head; true once the head is complete (or too large) and joined. */
  private continueHead(chunk: Buffer): boolean {
    const seam = Buffer.concat([this.tail, chunk]);
    this.pieces.push(chunk);
    this.piecesLength += chunk.length;
    const total = (this.buffered as Buffer).length + this.piecesLength;
    if (seam.indexOf(CRLF2) < 0 && total <= MAX_REQUEST_HEAD_BYTES) {
      this.tail = seam.subarray(Math.max(0, seam.length - 3));
      return false;
    }
    this.buffered = Buffer.concat([this.buffered as Buffer, ...this.pieces], total);
    this.pieces = [];
    this.piecesLength = 0;
    return true;
  }

  /** Starts the next buffered request, or hands the connection over when the fast path does not take it. */
  private next(): void {
    const buffered = this.buffered;
    if (!buffered || this.over) return;
    const end = buffered.indexOf(CRLF2);
    if (end < 0) {
      if (buffered.length > MAX_REQUEST_HEAD_BYTES) this.giveAway();
      else {
        this.tail = buffered.subarray(Math.max(0, buffered.length - 3));
        if (this.headSince === 0) this.headSince = Date.now();
      }
      return;
    }
    this.headSince = 0;
    const request = parseRequestHead(buffered.toString('latin1', 0, end), this.socket);
    const route = request && this.path.options.route(request);
    if (request && route && !(route.target instanceof URL)) {
      this.begin(end, buffered);
      this.enter('tunnelled');
      this.tunnelled = new TunnelExchange(this, {
        request,
        headers: route.headers,
        streams: route.target,
        cookies: route.cookies,
        keepAliveSeconds: Math.floor(this.path.options.limits.keepAliveTimeoutMs / 1000),
      });
      this.tunnelled.start();
      return;
    }
    const url = route?.target as URL | undefined;
    const head = request && route && url && requestHead(request, url, route.headers);
    // With every connection to this backend busy, Node's agent queues the request instead.
    const upstream = head && url && this.path.upstream(url, false);
    if (!head || !route || !upstream) {
      this.giveAway();
      return;
    }
    this.begin(end, buffered);
    this.send(head, route, upstream, false, startRecording(request, route));
  }

  /** A request the fast path takes: counted, and its head taken off what the connection buffered. */
  private begin(end: number, buffered: Buffer): void {
    this.started?.();
    this.started = undefined;
    this.path.options.metrics.request('proxied');
    this.path.options.metrics.fastPathRequests.inc();
    this.buffered = end + 4 < buffered.length ? buffered.subarray(end + 4) : undefined;
  }

  /** A request or response is in flight. */
  private get busy(): boolean {
    return this.state === 'upstream' || this.state === 'response' || this.state === 'tunnelled';
  }

  /** The tunnelled request in flight is answered: on to the next one. */
  exchangeOver(): void {
    if (this.state !== 'tunnelled') return;
    this.enter('head');
    this.continue();
  }

  private send(
    head: string,
    route: FastRoute,
    upstream: Upstream,
    retried: boolean,
    recording: FastRecording | undefined,
  ): void {
    upstream.user = this;
    const toHead = head.charCodeAt(0) === 72; // 'H': HEAD
    this.enter('upstream');
    this.exchange = {
      upstream,
      framer: new ResponseFramer(toHead, route.cookies, recording),
      head,
      route,
      sentAt: performance.now(),
      retried,
      recording,
    };
    upstream.socket.write(head, 'latin1');
  }

  /** The backend's response head arrived: its latency observed, the response now relayed. */
  private responseBegins(exchange: Exchange): void {
    this.enter('response');
    this.path.options.metrics.upstreamSeconds.observe((performance.now() - exchange.sentAt) / 1000);
  }

  /** The response in flight is complete: its backend connection back to the pool when `reusable`. */
  private finish(exchange: Exchange, reusable: boolean): void {
    this.enter('head');
    exchange.recording?.end();
    if (reusable) this.path.release(exchange.upstream);
    else {
      exchange.upstream.user = undefined;
      exchange.upstream.socket.destroy();
    }
    this.continue();
  }

  private continue(): void {
    this.socket.resume();
    this.next();
  }

  private backendFailed(exchange: Exchange, err: Error): void {
    this.path.options.log.warn({ share: exchange.route.share, err: errorText(err) }, 'backend unreachable');
    this.failExchange(
      exchange,
      err instanceof BackendProtocolError ? BACKEND_PAGES.refused : BACKEND_PAGES.unreachable,
    );
  }

  private backendTimedOut(exchange: Exchange, ms: number): void {
    this.path.options.log.warn(
      { share: exchange.route.share, err: `no answer from the backend within ${ms} ms` },
      'backend timed out',
    );
    this.failExchange(exchange, BACKEND_PAGES.timeout);
  }

  /**
   * The exchange failed: the visitor gets `page` and keeps its connection, or, once part of the
   * response has gone out, loses the connection so that the truncation shows.
   */
  private failExchange(exchange: Exchange, page: Page): void {
    this.path.options.metrics.request('upstream_error');
    exchange.recording?.end();
    if (exchange.framer.relayed > 0) {
      this.socket.destroy();
      return;
    }
    this.socket.write(rawPage(page, false, exchange.framer.toHead));
    this.finish(exchange, false);
  }

  /**
   * Gives the connection to Node's HTTP server. Called only from `head` (between requests, as
   * `next` runs only then), so no response of the fast path's is under way.
   */
  private giveAway(): void {
    if (this.state !== 'head') return;
    this.enter('done');
    const socket = this.socket;
    socket.pause();
    socket.removeListener('data', this.onData);
    socket.removeListener('drain', this.onDrain);
    socket.removeListener('close', this.onClose);
    socket.removeListener('error', this.onError);
    socket.removeListener('end', this.onEnd);
    const buffered = this.buffered;
    this.buffered = undefined;
    // The visitor's end cannot have been read: the fast path abandons a connection on its end.
    if (buffered) socket.unshift(buffered);
    this.handOff(socket);
    process.nextTick(() => socket.resume());
  }

  /**
   * The visitor left (closed, reset or ended its side): the connection is no longer served, and
   * the backend connection of a request in flight is closed at once rather than kept until the
   * backend answers (a response nobody reads must not go back to the pool).
   */
  private abandon(): void {
    this.buffered = undefined;
    this.tunnelled?.abandon();
    const exchange = this.exchange;
    this.enter('done');
    if (exchange) {
      exchange.recording?.end();
      exchange.upstream.user = undefined;
      exchange.upstream.socket.destroy();
    }
  }
}

/**
 * The head sent to the backend: the request line with the target's path prefix, its Host, and
 * the prepared headers less Host and the hop-by-hop ones; undefined when a value is one Node's
 * client would refuse (then the slow path answers as it does).
 */
function requestHead(request: FastRequest, url: URL, headers: BackendHeaders): string | undefined {
  const target = targetParts(url);
  let head = `${request.method} ${joinPath(target.pathname, request.url)} HTTP/1.1\r\nhost: ${target.host}\r\n`;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name === 'host' || isHopByHopRequestHeader(name)) continue;
    const value = headers[i + 1] as string;
    if (INVALID_HEADER_VALUE.test(value)) return undefined;
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}
