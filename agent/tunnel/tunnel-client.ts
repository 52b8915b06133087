import type { TunnelLink } from '../../lib/tunnel/link.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../../lib/tunnel/protocol.ts';
import { Dialer, type DialTarget } from './dialer.ts';
import { serveStream, type TunnelledShare } from './serve-stream.ts';
import { serveOnLink } from '../../lib/tunnel/server-session.ts';
import { tunnelServer } from '../../lib/tunnel/http2.ts';

/** `url`: `ws(s)://<frontend>/api/v1/tunnel` */
export interface TunnelClientOptions extends DialTarget {
  /** The local share a stream's token names (public and private shares alike). */
  resolve(token: string): TunnelledShare | undefined;
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
  const server = tunnelServer(DEFAULT_TUNNEL_LIMITS);
  server.on('stream', (stream, headers) => serveStream(stream, headers, (token) => options.resolve(token)));
  let current: TunnelLink | undefined;
  server.on('sessionError', (err) => {
    options.logger.warn({ err: err.message }, 'tunnel: HTTP/2 session error');
    current?.terminate();
  });
  const dialer = new Dialer('tunnel', options, (link) => {
    current = link;
    const session = serveOnLink(server, link);
    options.onConnected?.();
    return session;
  });
  dialer.start();
  return {
    get connected() {
      return dialer.connected;
    },
    close: () => dialer.close(),
  };
}
