import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import type * as Https from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ShareCookies } from './backend-cookies.ts';
import { connectionListed, withoutListed } from './hop-by-hop.ts';
import { MAX_RESPONSE_HEAD_BYTES } from './http-limits.ts';
import { request } from './node-http.ts';

/** What an upgrade is sent with: where, the backend's headers (Host the target's), and how long the backend may take to answer. */
export interface UpgradeTarget {
  readonly host: string;
  readonly port: number;
  readonly path: string;
  readonly secure: boolean;
  /** Flat `[name, value, …]` list, Connection and Upgrade included. */
  readonly headers: string[];
  readonly timeoutMs: number;
  /** Which of the backend's Set-Cookie headers reach the visitor (lib/backend-cookies.ts); all without. */
  readonly cookies?: ShareCookies;
}

/**
 * A WebSocket (or any HTTP/1.1 `Upgrade`) request passed on to the backend on a connection of its
 * own. When the backend switches protocols, its 101 goes back to the visitor and the two sockets
 * are joined both ways until either side closes; when it answers anything else, that answer goes
 * back and the visitor's connection is closed after it (its framing rewritten: a chunked body
 * arrives here decoded). A backend that does not answer within `timeoutMs`, or fails, closes the
 * visitor's socket.
 */
export function pipeUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: UpgradeTarget): void {
  const options: RequestOptions = {
    agent: false,
    host: target.host,
    port: target.port,
    method: req.method,
    path: target.path,
    headers: target.headers,
    maxHeaderSize: MAX_RESPONSE_HEAD_BYTES,
  };
  const upstream: ClientRequest = target.secure ? httpsRequest()(options) : request(options);
  upstream.setTimeout(target.timeoutMs, () => upstream.destroy());
  upstream.on('error', () => socket.destroy());
  // A visitor who goes away (or fails) before the switch ends the backend request too. Node's
  // server leaves an upgraded socket paused, which would hide the visitor's end until the backend
  // answers: it is read meanwhile, what arrives kept (up to a bound) for after the switch.
  socket.on('error', () => upstream.destroy());
  socket.on('close', () => upstream.destroy());
  const early: Buffer[] = [];
  let earlyBytes = 0;
  const onEarly = (chunk: Buffer): void => {
    early.push(chunk);
    earlyBytes += chunk.length;
    if (earlyBytes > MAX_EARLY_BYTES) socket.pause();
  };
  const onEarlyEnd = (): void => void socket.destroy();
  socket.on('data', onEarly);
  socket.on('end', onEarlyEnd);
  socket.resume();
  const switched = (): void => {
    socket.removeListener('data', onEarly);
    socket.removeListener('end', onEarlyEnd);
  };
  upstream.on('response', (res) => {
    socket.write(statusBlock(res, target.cookies, 'Connection', 'close'));
    res.pipe(socket);
    // The connection ends with this answer: what the visitor sent after its request (a pipelined
    // one) is read and dropped, or it would sit unread in front of the visitor's close, and the
    // socket would never close.
    switched();
    socket.resume();
  });
  upstream.on('upgrade', (res, backend: Socket, backendHead: Buffer) => {
    prepare(backend);
    prepare(socket);
    // Either side closing closes the other: `pipe` ends the other side only on a clean end, and a
    // destroyed socket (an error, a listener shut down) would leave its peer open.
    backend.on('close', () => socket.destroy());
    socket.on('close', () => backend.destroy());
    backend.on('error', () => socket.destroy());
    switched();
    socket.write(statusBlock(res, target.cookies));
    if (backendHead.length > 0) socket.write(backendHead);
    if (head.length > 0) backend.write(head);
    for (const chunk of early) backend.write(chunk);
    backend.pipe(socket).pipe(backend);
  });
  upstream.end();
}

/** What a visitor may send before the backend has answered its upgrade (a WebSocket client sends nothing). */
const MAX_EARLY_BYTES = 64 * 1024;

/** No timeout once joined (a quiet WebSocket stays open), no Nagle delay, TCP keep-alive probes. */
function prepare(stream: Duplex): void {
  const socket = stream as Partial<Socket>;
  socket.setTimeout?.(0);
  socket.setNoDelay?.(true);
  socket.setKeepAlive?.(true, 0);
}

/**
 * The backend's status line and headers as bytes for the visitor's socket, its own spelling kept.
 * With `extra` (an answer that is not a switch), Transfer-Encoding and the connection's own headers
 * are left out, as the body is relayed decoded and the connection closed after it, and `extra` added.
 * Either way the headers the backend's Connection names are left out (lib/hop-by-hop.ts), and its
 * Set-Cookie headers pass through `cookies`.
 */
function statusBlock(res: IncomingMessage, cookies: ShareCookies | undefined, ...extra: string[]): string {
  const raw = res.rawHeaders;
  const framing = extra.length > 0;
  const kept: string[] = [];
  let listed: readonly string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    let value: string | undefined = raw[i + 1] ?? '';
    if (lower === 'connection') listed = [...listed, ...connectionListed(value)];
    if (framing && (lower === 'transfer-encoding' || lower === 'connection' || lower === 'keep-alive')) continue;
    if (lower === 'set-cookie2') continue;
    if (lower === 'set-cookie' && cookies) value = cookies.filter(value);
    if (value !== undefined) kept.push(name, value);
  }
  if (listed.length > 0) withoutListed(kept, listed);
  kept.push(...extra);
  const lines = [`HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}`];
  for (let i = 0; i < kept.length; i += 2) lines.push(`${kept[i] as string}: ${kept[i + 1] as string}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** node:https's request, loaded on the first upgrade to a `wss://`/`https://` backend only. */
function httpsRequest(): typeof Https.request {
  const https: typeof Https = process.getBuiltinModule('node:https');
  return https.request;
}
