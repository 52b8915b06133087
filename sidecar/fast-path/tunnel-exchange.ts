import type { OutgoingHttpHeaders } from 'node:http';
import type { ClientHttp2Stream, Http2Session, IncomingHttpHeaders } from 'node:http2';
import type { Socket } from 'node:net';
import type { ShareCookies } from '../../lib/backend-cookies.ts';
import { headerLines } from '../../lib/fast-upstream/head-text.ts';
import { addBackendHeaders, type BackendHeaders } from '../../lib/http-pipe.ts';
import { STATUS_CODES } from '../../lib/node-http.ts';
import { openStream, withCookies } from '../../lib/tunnel/forward.ts';
import { ROUTE_HEADER, tunnelHeaders } from '../../lib/tunnel/protocol.ts';
import { declaredLength, HTTP2_NO_ERROR, resetStream } from '../../lib/tunnel/relay.ts';
import type { ForwardFailure, TunnelStreams } from '../../lib/tunnel/stream-target.ts';
import { BACKEND_PAGES, pageResponse, TUNNEL_PAGES, tunnelPageHeaders, type Page } from '../pages.ts';
import type { FastRequest } from './request-head.ts';

/** The connection a tunnelled exchange answers on. */
export interface TunnelExchangeOwner {
  readonly socket: Socket;
  /** The response is complete (or a page answered instead): the connection goes on with its next request. */
  exchangeOver(): void;
}

/** What a tunnelled request needs besides its head. */
export interface TunnelledRequest {
  readonly request: FastRequest;
  /** The request's headers for the backend (sidecar/proxy.ts `backendHeaders`). */
  readonly headers: BackendHeaders;
  readonly streams: TunnelStreams;
  readonly cookies?: ShareCookies | undefined;
  /** The frontend's keep-alive timeout, announced in every response as Node's server does. */
  readonly keepAliveSeconds: number;
}

const CHUNK_END = '\r\n';
const LAST_CHUNK = '0\r\n\r\n';
const noop = (): void => undefined;
const uncork = (socket: Socket): void => socket.uncork();

type Body = 'none' | 'length' | 'chunked';

/**
 * One request of the fast path through a share's tunnel (docs/design.md, "The fast path"): the
 * visitor's GET or HEAD goes onto an HTTP/2 stream of the agent's link with the headers the slow
 * path (lib/tunnel/forward.ts `forwardRequest`) would send, and the response comes back onto the
 * socket framed as Node's `ServerResponse` frames it there: the same status line and headers (Date,
 * Connection and Keep-Alive added, chunked framing without a Content-Length), the same pages when
 * the agent is offline, busy, gone or silent, and the same cut connection when a body ends short.
 */
export class TunnelExchange {
  /** Bytes of the response written to the visitor so far (its head included). */
  relayed = 0;
  private readonly owner: TunnelExchangeOwner;
  private readonly job: TunnelledRequest;
  private stream: ClientHttp2Stream | undefined;
  private session: Http2Session | undefined;
  private status = 0;
  private body: Body | undefined;
  private remaining = 0;
  private over = false;
  /** False when the stream goes to the replica holding the tunnel, which counts the request. */
  private countedHere = true;
  private readonly readAt: number;
  private readonly writtenAt: number;

  constructor(owner: TunnelExchangeOwner, job: TunnelledRequest) {
    this.owner = owner;
    this.job = job;
    this.readAt = owner.socket.bytesRead;
    this.writtenAt = owner.socket.bytesWritten;
  }

  /** Opens the stream, or answers with the page of why it cannot. */
  start(): void {
    const { streams, request } = this.job;
    const target = streams.find();
    if (!target) return this.answerPage(TUNNEL_PAGES.offline);
    this.countedHere = target.countedByHolder !== true;
    const stream = openStream(target, streamHeaders(request, this.job.headers), true);
    if (typeof stream === 'string') return this.fail(stream);
    this.stream = stream;
    // A destroyed stream no longer names its session: kept to tell a complete body from a lost tunnel.
    this.session = stream.session;
    stream.setTimeout(streams.idleMs, this.onIdle);
    stream.on('response', this.onResponse);
    stream.on('end', this.onEnd);
    stream.on('close', this.onClose);
    stream.on('error', noop);
  }

  /** The visitor's socket drained: the stream is read again. */
  resume(): void {
    this.stream?.resume();
  }

  /** The visitor left: the stream is cancelled and the request counted as failed. */
  abandon(): void {
    if (this.over) return;
    this.over = true;
    if (this.stream) resetStream(this.stream);
    this.count(true);
  }

  private readonly onResponse = (headers: IncomingHttpHeaders): void => {
    if (this.over) return;
    const status = Number(headers[':status']);
    const out = withCookies(tunnelHeaders(headers), this.job.cookies);
    const bodiless = this.job.request.method === 'HEAD' || status === 204 || status === 304;
    this.body = bodiless ? 'none' : out['content-length'] !== undefined ? 'length' : 'chunked';
    this.remaining = declaredLength(headers['content-length']) ?? 0;
    const head = responseHead(status, out, this.body === 'chunked', this.job.keepAliveSeconds);
    if (head === undefined) {
      this.job.streams.failed('unreachable');
      this.answerPage(BACKEND_PAGES.refused);
      return;
    }
    this.status = status;
    // The head and the body bytes that came with it leave in one write system call: the socket is
    // uncorked on the next tick, after the stream's resume has emitted what it holds (so a held or
    // streamed response's head still goes out at once).
    const socket = this.owner.socket;
    socket.cork();
    this.write(head, 'latin1');
    // Read from here on: 'response' comes a tick after the HEADERS frame, and the body's first bytes
    // may have arrived with it.
    this.stream?.on('data', this.onData);
    process.nextTick(uncork, socket);
  };

  private readonly onData = (chunk: Buffer): void => {
    if (this.over || this.body === 'none') return;
    if (this.body === 'length') {
      if (chunk.length > this.remaining) return this.cut();
      this.remaining -= chunk.length;
      this.write(chunk);
      return;
    }
    const socket = this.owner.socket;
    socket.cork();
    this.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
    this.write(chunk);
    this.write(CHUNK_END, 'latin1');
    socket.uncork();
  };

  /** The body ended: complete when the agent ended it (no reset, its tunnel up) with every declared byte. */
  private readonly onEnd = (): void => {
    if (this.over) return;
    if (this.body === undefined) return this.fail('unreachable');
    const stream = this.stream as ClientHttp2Stream;
    const complete =
      stream.rstCode === HTTP2_NO_ERROR &&
      this.session !== undefined &&
      !this.session.destroyed &&
      (this.body !== 'length' || this.remaining === 0);
    if (!complete) return this.cut();
    if (this.body === 'chunked') this.write(LAST_CHUNK, 'latin1');
    this.over = true;
    this.count(this.status >= 500);
    this.owner.exchangeOver();
  };

  private readonly onClose = (): void => {
    if (this.over) return;
    if (this.body === undefined) this.fail('unreachable');
    else this.cut();
  };

  private readonly onIdle = (): void => {
    if (this.over) return;
    if (this.body === undefined) this.fail('timeout');
    else this.cut();
  };

  private write(data: string | Buffer, encoding?: BufferEncoding): void {
    const socket = this.owner.socket;
    this.relayed += data.length;
    const flushed = typeof data === 'string' ? socket.write(data, encoding) : socket.write(data);
    if (!flushed) this.stream?.pause();
  }

  /** The agent could not answer: logged, and the visitor gets its page. */
  private fail(failure: ForwardFailure): void {
    this.job.streams.failed(failure);
    this.answerPage(TUNNEL_PAGES[failure]);
  }

  /** Answers `page` in place of a response nothing of which was sent yet; the connection goes on. */
  private answerPage(page: Page): void {
    this.over = true;
    if (this.stream) resetStream(this.stream);
    // As `sendPage` answers it through Node's server: no body after the head of a HEAD.
    const { headers, body } = pageResponse(page, tunnelPageHeaders(page));
    const head = responseHead(page.status, headers, false, this.job.keepAliveSeconds) as string;
    const bytes = Buffer.concat([
      Buffer.from(head, 'latin1'),
      Buffer.from(this.job.request.method === 'HEAD' ? '' : body),
    ]);
    this.relayed += bytes.length;
    this.owner.socket.write(bytes);
    this.count(page.status >= 500);
    this.owner.exchangeOver();
  }

  /** A response cut short: the visitor's connection is cut, the only honest signal mid-body. */
  private cut(): void {
    this.over = true;
    if (this.stream) resetStream(this.stream);
    this.owner.socket.destroy();
    this.count(true);
  }

  private count(failed: boolean): void {
    if (!this.countedHere) return;
    const socket = this.owner.socket;
    this.job.streams.record?.(failed, socket.bytesRead - this.readAt, socket.bytesWritten - this.writtenAt);
  }
}

/** The stream's header block: what `forwardRequest` sends for the same request on the slow path. */
function streamHeaders(request: FastRequest, backend: BackendHeaders): OutgoingHttpHeaders {
  const headers = addBackendHeaders({}, backend);
  return {
    ...tunnelHeaders(headers),
    ':method': request.method,
    ':path': request.url,
    ':authority': headers.host ?? '',
    [ROUTE_HEADER]: 'public',
  };
}

/**
 * The response head as Node's `ServerResponse.writeHead` writes it for these headers on a kept-alive
 * HTTP/1.1 connection; undefined when a value is one Node's server would refuse.
 */
function responseHead(
  status: number,
  headers: OutgoingHttpHeaders,
  chunked: boolean,
  keepAliveSeconds: number,
): string | undefined {
  const lines = headerLines(headers);
  if (lines === undefined) return undefined;
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n${lines}`;
  if (headers.date === undefined) head += `Date: ${utcDate()}\r\n`;
  head += `Connection: keep-alive\r\nKeep-Alive: timeout=${keepAliveSeconds}\r\n`;
  if (chunked) head += 'Transfer-Encoding: chunked\r\n';
  return `${head}\r\n`;
}

/** The Date header's value, made at most once a second (as Node's server caches it). */
let dateText = '';
let dateSecond = -1;
function utcDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(now).toUTCString();
  }
  return dateText;
}
