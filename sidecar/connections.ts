import type { IncomingMessage, Server } from 'node:http';
import { createServer } from '../lib/node-http.ts';
import type { Socket } from 'node:net';

/**
 * How long a client may take, and how many connections it may hold, before the frontend closes on
 * it; and how long a backend may stay silent. Slow clients (slowloris: headers one byte at a time, or a connection that never sends
 * anything) must not be able to hold the frontend's sockets and memory; the figures a test measured
 * with these defaults are in docs/security.md.
 */
export interface FrontendLimits {
  /** Time from connect (or from the end of the previous response) to the end of the request headers. */
  readonly headersTimeoutMs: number;
  /**
   * Time to receive a whole request, body included. Generous, so that uploads through a share on a
   * slow link still complete; a trickled body is also cut by the proxy's idle timeout.
   */
  readonly requestTimeoutMs: number;
  /** Idle time allowed between requests on a kept-alive connection (above the usual 60 s of load balancers). */
  readonly keepAliveTimeoutMs: number;
  /**
   * Open connections one peer address may hold. In Kubernetes the peer is the ingress controller,
   * so this is far above what a browser opens (6 per host) and bounds only a single abusive client.
   */
  readonly maxConnectionsPerIp: number;
  /** Open connections in total; beyond it the operating system's backlog queues new ones. */
  readonly maxConnections: number;
  /** Silence allowed from a share's backend (waiting for its response, or between its bytes): then 504. */
  readonly backendTimeoutMs: number;
  /**
   * A request body streamed on to a backend (sidecar/upload-gate.ts) must bring at least
   * `bodyMinBytesPerWindow` bytes in every window of this length, unless the backend is the one
   * not reading; a slower one is cut (408), like nginx's `client_body_timeout` but for a rate.
   */
  readonly bodyRateWindowMs: number;
  readonly bodyMinBytesPerWindow: number;
}

export const DEFAULT_FRONTEND_LIMITS: FrontendLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 600_000,
  keepAliveTimeoutMs: 65_000,
  maxConnectionsPerIp: 512,
  maxConnections: 8_192,
  backendTimeoutMs: 120_000,
  bodyRateWindowMs: 30_000,
  bodyMinBytesPerWindow: 30 * 1024,
};

/**
 * Takes an accepted connection before Node's HTTP server (the fast path, sidecar/fast-path/):
 * `attach` gives it to the server's parser, `started` tells that its first request has begun.
 */
export type TakeConnection = (socket: Socket, attach: (socket: Socket) => void, started: () => void) => void;

/**
 * The per-peer count of open connections: one slot per accepted socket, taken when it is accepted
 * and given back on that socket's own 'close' (exactly once, keyed by the socket), whatever path
 * the connection took (fast path, Node's server, an upgrade) and however it ended.
 */
export class ConnectionSlots {
  private readonly perPeer = new Map<string, number>();
  private readonly holders = new WeakMap<Socket, string>();
  private total = 0;
  private readonly onChange: ((total: number) => void) | undefined;

  /** `onChange` is told the total after every change (for a gauge). */
  constructor(onChange?: (total: number) => void) {
    this.onChange = onChange;
  }

  /** Open connections of `peer`, or of every peer. */
  open(peer?: string): number {
    return peer === undefined ? this.total : (this.perPeer.get(peer) ?? 0);
  }

  /** Takes a slot for `socket` unless its peer holds `max`; false when refused. */
  take(socket: Socket, peer: string, max: number): boolean {
    const open = this.perPeer.get(peer) ?? 0;
    if (open >= max) return false;
    this.perPeer.set(peer, open + 1);
    this.holders.set(socket, peer);
    this.total += 1;
    this.onChange?.(this.total);
    socket.once('close', () => this.give(socket));
    return true;
  }

  private give(socket: Socket): void {
    const peer = this.holders.get(socket);
    if (peer === undefined) return;
    this.holders.delete(socket);
    this.total -= 1;
    this.onChange?.(this.total);
    const left = (this.perPeer.get(peer) ?? 1) - 1;
    if (left > 0) this.perPeer.set(peer, left);
    else this.perPeer.delete(peer);
  }
}

const REFUSED = 'HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\nretry-after: 5\r\n\r\n';

/**
 * An HTTP server that enforces `limits`. Node enforces the headers timeout only once a request has
 * started (a connection that sends nothing at all is never closed by it), so a connection must
 * start its first request within the headers timeout too. Connections above the per-peer cap are
 * answered 503 and closed at once, before any byte of theirs is parsed; `onRefused` is told (for
 * logs and metrics).
 */
export function createLimitedServer(
  limits: FrontendLimits,
  onRefused: (peer: string) => void,
  takeConnection?: TakeConnection,
  slots: ConnectionSlots = new ConnectionSlots(),
): Server {
  // Node checks the headers and request timeouts on this interval; its default (30 s) would let a
  // slow client hold its connection up to 30 s past the timeout.
  const checkingIntervalMs = Math.min(1_000, limits.headersTimeoutMs);
  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node checks the two timeouts above on this interval; the default (30 s) would let a slow
    // client hold its connection up to 30 s past the timeout.
    connectionsCheckingInterval: checkingIntervalMs,
  });
  server.maxConnections = limits.maxConnections;
  const awaitingFirstRequest = new WeakMap<Socket, NodeJS.Timeout>();
  const started = (socket: Socket): void => {
    clearTimeout(awaitingFirstRequest.get(socket));
    awaitingFirstRequest.delete(socket);
  };
  // The HTTP server's own connection listener (which attaches the request parser) runs only for
  // connections within the cap: a refused one is answered and closed without ever being parsed.
  const [attachParser] = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? '';
    if (!attachParser || !slots.take(socket, peer, limits.maxConnectionsPerIp)) {
      onRefused(peer);
      socket.on('error', () => socket.destroy());
      socket.end(REFUSED, () => socket.destroy());
      return;
    }
    const attach = (handed: Socket): void => void attachParser.call(server, handed);
    if (takeConnection) takeConnection(socket, attach, () => started(socket));
    else attach(socket);
    // Past Node's own check of a started request, so that one is answered 408 by Node first.
    const deadline = limits.headersTimeoutMs + checkingIntervalMs;
    awaitingFirstRequest.set(socket, setTimeout(() => socket.destroy(), deadline).unref());
    // Once the frontend has sent its last byte, the connection is the visitor's to close; one that
    // does not (or whose close is never read) is cut after the headers timeout, so that no path
    // can keep a socket, and its slot, open for good.
    let lingering: NodeJS.Timeout | undefined;
    socket.once('finish', () => {
      lingering = setTimeout(() => socket.destroy(), limits.headersTimeoutMs).unref();
    });
    socket.once('close', () => {
      clearTimeout(lingering);
      started(socket);
    });
  });
  // The socket's bytes go straight to Node's C++ parser, so the first request is noticed here.
  server.prependListener('request', (req: IncomingMessage) => started(req.socket));
  server.prependListener('upgrade', (req: IncomingMessage) => started(req.socket));
  return server;
}
