import http2 from 'node:http2';
import type { BackoffPolicy } from '../../lib/backoff.ts';
import type { Logger } from '../../lib/logger.ts';
import { DEFAULT_TUNNEL_LIMITS, SESSION_WINDOW_BYTES, clientSettings } from '../../lib/tunnel/protocol.ts';
import { CappedSession, type StreamTarget } from '../../lib/tunnel/stream-target.ts';
import { Dialer } from './dialer.ts';

export interface AccessClientOptions {
  /** `ws(s)://<frontend>/api/v1/tunnel/access` */
  readonly url: string;
  readonly token: string;
  readonly logger: Logger;
  readonly backoff?: BackoffPolicy;
  readonly pingIntervalMs?: number;
}

export interface RunningAccessClient {
  /** The connection to send an access's next stream through; undefined while disconnected. */
  target(): StreamTarget | undefined;
  close(): Promise<void>;
}

/**
 * The agent's connection for private accesses to shares of other machines of its account: here the
 * agent is the HTTP/2 client, and the frontend forwards each stream into the tunnel of the
 * environment that owns the share, after checking that the share is private and of the same account.
 */
export function startAccessClient(options: AccessClientOptions): RunningAccessClient {
  let current: CappedSession | undefined;
  const dialer = new Dialer({
    url: options.url,
    token: options.token,
    logger: options.logger,
    name: 'access',
    ...(options.backoff ? { backoff: options.backoff } : {}),
    ...(options.pingIntervalMs ? { pingIntervalMs: options.pingIntervalMs } : {}),
    onConnected: (duplex, socket) => {
      const session = http2.connect('http://access.invalid', {
        createConnection: () => duplex,
        settings: clientSettings(DEFAULT_TUNNEL_LIMITS),
        maxHeaderListPairs: 256,
      });
      session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW_BYTES));
      const capped = new CappedSession(session, DEFAULT_TUNNEL_LIMITS.maxStreamsPerTunnel);
      session.once('remoteSettings', () => (current = capped));
      session.on('error', (err: Error) => options.logger.warn({ err: err.message }, 'access: HTTP/2 session error'));
      session.on('close', () => socket.terminate());
      socket.once('close', () => {
        if (current === capped) current = undefined;
        session.destroy();
      });
    },
  });
  dialer.start();
  return { target: () => current, close: () => dialer.close() };
}
