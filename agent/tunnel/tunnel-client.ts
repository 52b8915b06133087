import http2 from 'node:http2';
import type { WebSocket } from 'ws';
import type { BackoffPolicy } from '../../lib/backoff.ts';
import type { Logger } from '../../lib/logger.ts';
import { DEFAULT_TUNNEL_LIMITS, SESSION_WINDOW_BYTES, serverSettings } from '../../lib/tunnel/protocol.ts';
import { Dialer } from './dialer.ts';
import { serveStream, type TunnelledShare } from './serve-stream.ts';
import { serveOverWebSocket } from '../../lib/tunnel/server-session.ts';

export interface TunnelClientOptions {
  /** `ws(s)://<frontend>/api/v1/tunnel` */
  readonly url: string;
  readonly token: string;
  readonly logger: Logger;
  /** The local share a stream's token names (public and private shares alike). */
  resolve(token: string): TunnelledShare | undefined;
  readonly backoff?: BackoffPolicy;
  readonly pingIntervalMs?: number;
  /** Called after every (re)connect: the agent reconciles its shares with the registry then. */
  readonly onConnected?: () => void;
}

export interface RunningTunnel {
  readonly connected: boolean;
  close(): Promise<void>;
}

/**
 * The agent's tunnel: it dials the installation's frontend and serves HTTP/2 over the connection,
 * one stream per visitor request, from its local shares. The frontend can do nothing but open
 * streams (the agent's server never pushes and never dials anything the frontend names: a stream
 * reaches only a share the agent itself holds).
 */
export function startTunnel(options: TunnelClientOptions): RunningTunnel {
  const server = http2.createServer({
    settings: serverSettings(DEFAULT_TUNNEL_LIMITS),
    maxHeaderListPairs: 256,
  });
  server.on('session', (session) =>
    session.once('localSettings', () => session.setLocalWindowSize(SESSION_WINDOW_BYTES)),
  );
  server.on('stream', (stream, headers) => serveStream(stream, headers, (token) => options.resolve(token)));
  let current: WebSocket | undefined;
  server.on('sessionError', (err) => {
    options.logger.warn({ err: err.message }, 'tunnel: HTTP/2 session error');
    current?.terminate();
  });
  const dialer = new Dialer({
    url: options.url,
    token: options.token,
    logger: options.logger,
    name: 'tunnel',
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.pingIntervalMs ? { pingIntervalMs: options.pingIntervalMs } : {}),
    onConnected: (duplex, socket) => {
      current = socket;
      serveOverWebSocket(server, duplex, socket);
      options.onConnected?.();
    },
  });
  dialer.start();
  return {
    get connected() {
      return dialer.connected;
    },
    close: () => dialer.close(),
  };
}
