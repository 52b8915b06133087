import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ClientHttp2Stream, IncomingHttpHeaders as Http2Headers } from 'node:http2';
import type { ServerHttp2Stream } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { ShareCookies } from '../backend-cookies.ts';
import { ROUTE_HEADER, TCP_PROTOCOL, tunnelHeaders, type TunnelRoute } from './protocol.ts';
import { forwardTcpStream } from './tcp-relay.ts';
import { declaredLength, onceSettled, relayBody, relayHead, resetStream } from './relay.ts';
import { StreamMeter, type RecordRequest } from './stream-meter.ts';
import { TunnelUnavailable, type ForwardFailure, type StreamTarget } from './stream-target.ts';

export type { ForwardFailure };

export interface ForwardOptions {
  readonly route: TunnelRoute;
  /** A stream with no data either way for this long is cancelled. */
  readonly idleMs: number;
  /** Answers the client when no response came: 503 busy, 502 unreachable, 504 timeout. */
  fail(res: ServerResponse, failure: ForwardFailure): void;
  /** A Set-Cookie the frontend adds to the response (a refreshed session). */
  readonly setCookie?: string;
  /** Which of the backend's Set-Cookie headers reach the visitor (lib/backend-cookies.ts); all without. */
  readonly cookies?: ShareCookies;
}

export const FAILURE_STATUS: Record<ForwardFailure, number> = { busy: 503, unreachable: 502, timeout: 504 };

/**
 * One HTTP/1.1 request through a tunnel: its headers become a stream's header block, the body is
 * piped into the stream and the response piped back, both under HTTP/2 flow control, so nothing is
 * buffered whole and a slow client slows only its own stream. A failure before the response answers
 * with `fail`; after it, the client connection is cut (the only honest signal mid-body).
 */
export function forwardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  target: StreamTarget,
  options: ForwardOptions,
) {
  if (!req.url?.startsWith('/')) {
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' });
    res.end('400 Bad Request: the request target must be a path\n');
    return;
  }
  const stream = openStream(target, {
    ...tunnelHeaders(req.headers),
    ':method': req.method ?? 'GET',
    ':path': req.url,
    ':authority': req.headers.host ?? '',
    [ROUTE_HEADER]: options.route,
  });
  if (typeof stream === 'string') return options.fail(res, stream);
  watchIdle(stream, options.idleMs, () => (res.headersSent ? res.destroy() : options.fail(res, 'timeout')));
  relayBody(req, stream, () => resetStream(stream));
  stream.on('response', (headers) => {
    const status = Number(headers[':status']);
    const out = withCookies(tunnelHeaders(headers), options.cookies);
    if (options.setCookie) out['set-cookie'] = [...toList(out['set-cookie']), options.setCookie];
    res.writeHead(status, out);
    // The head goes out now, as the backend sent it: a held or streamed response (long poll, events)
    // is visible to the visitor before its first body bytes.
    res.flushHeaders();
    const bodiless = req.method === 'HEAD' || status === 204 || status === 304;
    relayBody(stream, res, () => res.destroy(), bodiless ? undefined : declaredLength(headers['content-length']));
  });
  stream.on('error', () => undefined);
  stream.on('close', () => {
    if (res.writableEnded) return;
    if (!res.headersSent) options.fail(res, 'unreachable');
    else res.destroy();
  });
  res.on('close', () => resetStream(stream));
}

/**
 * A WebSocket upgrade through a tunnel as an RFC 8441 extended CONNECT stream. The HTTP/1.1
 * handshake headers (`Sec-WebSocket-Key`, `-Version`, `-Protocol`, `-Extensions`) travel with it and
 * the backend's `Sec-WebSocket-Accept` comes back, so the client and the backend complete their own
 * handshake end to end and the tunnel only relays bytes.
 */
export function forwardUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  target: StreamTarget,
  route: TunnelRoute,
  cookies?: ShareCookies,
) {
  if (String(req.headers.upgrade).toLowerCase() !== 'websocket' || !req.url?.startsWith('/')) {
    return rejectSocket(socket, 400, 'Bad Request');
  }
  const stream = openStream(target, {
    ...tunnelHeaders(req.headers),
    ':method': 'CONNECT',
    ':protocol': 'websocket',
    ':scheme': 'http',
    ':path': req.url,
    ':authority': req.headers.host ?? '',
    [ROUTE_HEADER]: route,
  });
  if (typeof stream === 'string') {
    return rejectSocket(
      socket,
      stream === 'busy' ? 503 : 502,
      stream === 'busy' ? 'Service Unavailable' : 'Bad Gateway',
    );
  }
  socket.on('error', () => resetStream(stream));
  socket.on('close', () => resetStream(stream));
  stream.on('error', () => socket.destroy());
  // A stream reset or lost with its tunnel cuts the connection; only a completed one ends it.
  onceSettled(stream, (complete) => (complete ? socket.end() : socket.destroy()));
  stream.on('response', (headers) => {
    const status = Number(headers[':status']);
    const lines = Object.entries(withCookies(tunnelHeaders(headers), cookies)).flatMap(([name, value]) =>
      toList(value).map((v) => `${name}: ${v}`),
    );
    if (status !== 200) {
      // The backend refused the upgrade: its answer goes to the client as an ordinary response.
      socket.write(`HTTP/1.1 ${status} Upgrade Refused\r\n${lines.join('\r\n')}\r\nconnection: close\r\n\r\n`);
      stream.pipe(socket, { end: false });
      return;
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n${lines.map((l) => `${l}\r\n`).join('')}\r\n`,
    );
    if (head.length > 0) stream.write(head);
    socket.pipe(stream);
    stream.pipe(socket, { end: false });
  });
}

/** How `forwardStream` forwards a stream. */
export interface StreamForwardOptions {
  readonly route: TunnelRoute;
  /**
   * A stream with no data either way for this long is cancelled; a TCP stream only while bytes wait
   * in it (a quiet one stays open).
   */
  readonly idleMs: number;
  /** Counts the request when its stream closes (StreamMeter); not called for a TCP stream. */
  readonly record?: RecordRequest;
}

/**
 * An HTTP/2 stream (a private access's request, or another replica's) forwarded into a tunnel:
 * same method, path, authority and `:protocol`, the route marker set by us, bodies piped both ways.
 * A TCP stream (`:protocol` TCP_PROTOCOL) goes through `forwardTcpStream` (tcp-relay.ts).
 */
export function forwardStream(
  incoming: ServerHttp2Stream,
  headers: Http2Headers,
  target: StreamTarget,
  options: StreamForwardOptions,
) {
  if (headers[':protocol'] === TCP_PROTOCOL) {
    return forwardTcpStream(incoming, headers, target, options.route, options.idleMs);
  }
  const meter = options.record ? new StreamMeter(incoming, options.record) : undefined;
  const connect = headers[':method'] === 'CONNECT';
  const outgoing = openStream(target, {
    ...tunnelHeaders(headers),
    ':method': headers[':method'] ?? 'GET',
    ':path': headers[':path'] ?? '/',
    ':authority': headers[':authority'] ?? '',
    ...(connect ? { ':protocol': headers[':protocol'] ?? '', ':scheme': 'http' } : {}),
    [ROUTE_HEADER]: options.route,
  });
  if (typeof outgoing === 'string') return respondFailure(incoming, FAILURE_STATUS[outgoing]);
  watchIdle(outgoing, options.idleMs, () => respondFailure(incoming, 504));
  relayBody(incoming, outgoing, () => resetStream(outgoing));
  outgoing.on('response', (h) => {
    if (incoming.closed) return;
    if (!relayHead(incoming, { ...tunnelHeaders(h), ':status': h[':status'] })) {
      resetStream(outgoing);
      return respondFailure(incoming, 502);
    }
    relayBody(outgoing, incoming, () => resetStream(incoming));
    meter?.relaying(outgoing);
  });
  outgoing.on('error', () => undefined);
  outgoing.on('close', () => {
    if (!incoming.headersSent) respondFailure(incoming, 502);
    else if (!incoming.writableEnded) resetStream(incoming);
  });
  incoming.on('error', () => undefined);
  incoming.on('close', () => resetStream(outgoing));
}

/** Opens a stream on `target`, or says why it cannot. */
export function openStream(
  target: StreamTarget,
  headers: OutgoingHttpHeaders,
  endStream = false,
): ClientHttp2Stream | ForwardFailure {
  try {
    return target.open(headers, endStream);
  } catch (err) {
    if (err instanceof TunnelUnavailable) return err.reason === 'busy' ? 'busy' : 'unreachable';
    return 'unreachable';
  }
}

/** Cancels a stream that carried no data either way for `idleMs` (HTTP/2 has no per-stream timer). */
function watchIdle(stream: ClientHttp2Stream, idleMs: number, onTimeout: () => void): void {
  stream.setTimeout(idleMs, () => {
    onTimeout();
    resetStream(stream);
  });
}

function respondFailure(stream: ServerHttp2Stream, status: number): void {
  if (stream.closed || stream.destroyed) return;
  if (stream.headersSent) return resetStream(stream);
  stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8' });
  stream.end(`${status}: the share's agent ${status === 503 ? 'is busy' : 'did not answer'}\n`);
}

export function rejectSocket(socket: Duplex, status: number, text: string): void {
  if (socket.writable) socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  else socket.destroy();
}

/** A response's headers with the backend's Set-Cookie values passed through `cookies` (and no Set-Cookie2). */
export function withCookies(headers: OutgoingHttpHeaders, cookies: ShareCookies | undefined): OutgoingHttpHeaders {
  delete headers['set-cookie2'];
  const set = headers['set-cookie'];
  if (set === undefined || !cookies) return headers;
  const kept = toList(set).flatMap((value) => cookies.filter(value) ?? []);
  if (kept.length > 0) headers['set-cookie'] = kept;
  else delete headers['set-cookie'];
  return headers;
}

function toList(value: string | number | readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? [...(value as string[])] : [String(value)];
}
