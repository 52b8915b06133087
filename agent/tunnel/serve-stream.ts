import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import type { ExchangeObserver, ExchangeRecorder } from '../../lib/exchange-observer.ts';
import { stripIdentityHeaders } from '../../lib/identity-headers.ts';
import { Agent, request as httpRequest } from '../../lib/node-http.ts';
import type { TcpTarget } from '../../lib/share/tcp-target.ts';
import { ROUTE_HEADER, TCP_PROTOCOL, shareTokenOf, tunnelHeaders } from '../../lib/tunnel/protocol.ts';
import { relayBody, relayHead, resetStream } from '../../lib/tunnel/relay.ts';
import { serveFromPool } from './backend-exchange.ts';
import { serveTcpStream } from './serve-tcp.ts';

/** A share as the tunnel serves it: where its backend answers, and who may reach it. */
export interface TunnelledShare {
  readonly shareMode: 'public' | 'private';
  /** The proxy target, or the web share's local listener (with its secret path); unused for tcp. */
  readonly backendUrl: URL;
  /** A TCP share's target: its streams are TCP connections to it (serve-tcp.ts). */
  readonly tcpTarget?: TcpTarget;
  /** Records the share's requests as they are sent to the backend (the agent's request inspector). */
  readonly recorder?: ExchangeRecorder;
}

const agents = {
  http: new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }),
};

/**
 * Answers one tunnel stream from the local share named by its `:authority`: a request is sent to the
 * share's backend exactly as the frontend's proxy would send it on one machine (Host rewritten to the
 * target's, the target's path prefixed, the frontend's identity and X-Forwarded headers kept), and
 * an extended CONNECT (`:protocol: websocket`) becomes an HTTP/1.1 upgrade to the backend. Bodies
 * are piped both ways under the stream's flow control. A public share is served on `public` streams,
 * a private one only on `access` streams, whose identity look-alikes are removed here too. A TCP
 * share's streams are TCP connections to its target (serve-tcp.ts). A bodiless request to an
 * `http://` backend goes on a pooled connection without `node:http` (backend-exchange.ts), unless
 * `fastPath` is false (a differential test compares the two).
 */
export function serveStream(
  stream: ServerHttp2Stream,
  headers: Http2Headers,
  resolve: (token: string) => TunnelledShare | undefined,
  fastPath = true,
): void {
  stream.on('error', () => undefined);
  const token = shareTokenOf(headers[':authority']);
  const share = token ? resolve(token) : undefined;
  const route = headers[ROUTE_HEADER];
  const allowed = share && (share.shareMode === 'public' ? route === 'public' : route === 'access');
  if (!share || !allowed) return answer(stream, 404, `404: no share ${token ?? ''} on this agent\n`);
  if (share.tcpTarget) return serveTcpStream(stream, headers, share.tcpTarget);
  if (headers[':protocol'] === TCP_PROTOCOL) return answer(stream, 400, `400: share ${token} is not a TCP share\n`);

  const target = share.backendUrl;
  const websocket = headers[':method'] === 'CONNECT';
  if (websocket && headers[':protocol'] !== 'websocket') return answer(stream, 501, '501: only websockets\n');
  const out: OutgoingHttpHeaders = { ...tunnelHeaders(headers), host: target.host };
  if (route === 'access') stripIdentityHeaders(out as IncomingHttpHeaders);
  const path = joinPath(target.pathname, headers[':path'] ?? '/');
  const record = (): ExchangeObserver | undefined =>
    share.recorder?.(method(headers), headers[':path'] ?? '/', flat(out));
  // A request without a body (its HEADERS frame ended the stream) to a plain-HTTP backend takes the
  // pooled fast path (backend-exchange.ts) unless it is one only `node:http` sends.
  const pooled = !websocket && stream.endAfterHeaders && target.protocol === 'http:' && fastPath;
  if (pooled && serveFromPool(stream, { method: method(headers), path, headers: out, target }, record)) return;
  sendThroughNodeHttp(stream, { method: method(headers), path, headers: out, target, websocket }, record);
}

/**
 * Sends a stream's request to the backend through `node:http`: bodies, `https://` targets,
 * websocket upgrades and what the pooled path leaves (backend-exchange.ts).
 */
function sendThroughNodeHttp(
  stream: ServerHttp2Stream,
  job: { method: string; path: string; headers: OutgoingHttpHeaders; target: URL; websocket: boolean },
  record: () => ExchangeObserver | undefined,
): void {
  const { path, target, websocket, headers: out } = job;
  if (websocket) Object.assign(out, { connection: 'Upgrade', upgrade: 'websocket' });
  const secure = target.protocol === 'https:';
  const request = (secure ? https.request : httpRequest)({
    protocol: target.protocol,
    hostname: target.hostname,
    port: target.port,
    method: websocket ? 'GET' : job.method,
    path,
    headers: out,
    // An upgraded socket leaves the pool; keep-alive only for ordinary requests.
    agent: websocket ? false : secure ? agents.https : agents.http,
  });
  let settled = false;
  const observer = websocket ? undefined : record();
  request.on('response', (res) => {
    if (stream.closed) return void res.destroy();
    if (observer) observeResponse(observer, res);
    if (!relayHead(stream, { ...tunnelHeaders(res.headers), ':status': res.statusCode })) {
      res.destroy();
      return answer(
        stream,
        502,
        `502: the share backend answered status ${res.statusCode}, which HTTP/2 cannot carry\n`,
      );
    }
    res.on('end', () => (settled = true));
    res.on('error', () => undefined);
    // A backend that hangs up mid-body resets the stream: the visitor's connection is cut, not ended.
    relayBody(res, stream, () => resetStream(stream));
  });
  request.on('upgrade', (res, socket, head) => {
    settled = true;
    if (stream.closed) return void socket.destroy();
    if (!relayHead(stream, { ...tunnelHeaders(res.headers), ':status': 200 })) {
      socket.destroy();
      return answer(stream, 502, '502: the share backend answered headers HTTP/2 cannot carry\n');
    }
    if (head.length > 0) stream.write(head);
    socket.pipe(stream);
    stream.pipe(socket);
    socket.on('error', () => resetStream(stream));
    stream.on('close', () => socket.destroy());
  });
  request.on('error', (err) => {
    if (!stream.headersSent) answer(stream, 502, `502: the share backend did not answer: ${err.message}\n`);
    else resetStream(stream);
  });
  // A visitor who went away cancels the stream: the backend request is dropped too.
  stream.on('close', () => {
    if (!settled) request.destroy();
    observer?.end();
  });
  if (observer) stream.on('data', (chunk: Buffer) => observer.requestBody(chunk));
  // A request without a body (its HEADERS frame ended the stream) is sent at once, without a relay.
  if (websocket || stream.endAfterHeaders) request.end();
  // A request body cut short (the stream reset, the tunnel lost) never reaches the backend as whole.
  else relayBody(stream, request, () => request.destroy());
}

/** The target's path and the request's, as the frontend's proxy joins them (repeated slashes folded). */
export function joinPath(base: string, path: string): string {
  const query = path.indexOf('?');
  const pathname = query < 0 ? path : path.slice(0, query);
  const rest = query < 0 ? '' : path.slice(query);
  return `${[base, pathname].filter(Boolean).join('/').replace(/\/+/g, '/')}${rest}`;
}

function method(headers: Http2Headers): string {
  return headers[':method'] ?? 'GET';
}

/** Headers as a flat `[name, value, …]` list, a repeated one once per value. */
function flat(headers: OutgoingHttpHeaders): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const each of value) out.push(name, each);
    else out.push(name, String(value));
  }
  return out;
}

/** Shows a recorded exchange its response head and body as they are relayed. */
function observeResponse(observer: ExchangeObserver, res: IncomingMessage): void {
  observer.response(res.statusCode ?? 0, res.rawHeaders);
  res.on('data', (chunk: Buffer) => observer.responseBody(chunk));
}

function answer(stream: ServerHttp2Stream, status: number, text: string): void {
  if (stream.closed || stream.headersSent) return;
  stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8' });
  stream.end(text);
}
