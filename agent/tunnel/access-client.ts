import { DEFAULT_TUNNEL_LIMITS } from '../../lib/tunnel/protocol.ts';
import type { CappedSession, StreamTarget } from '../../lib/tunnel/stream-target.ts';
import { Dialer, type DialTarget } from './dialer.ts';
import { tunnelClientSession } from '../../lib/tunnel/http2.ts';

/** `url`: `ws(s)://<frontend>/api/v1/tunnel/access` */
export type AccessClientOptions = DialTarget;

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
  const dialer = new Dialer('access', options, (link) => {
    const capped = tunnelClientSession(link, DEFAULT_TUNNEL_LIMITS);
    const { session } = capped;
    session.once('remoteSettings', () => (current = capped));
    session.on('error', (err: Error) => options.logger.warn({ err: err.message }, 'access: HTTP/2 session error'));
    session.on('close', () => link.terminate());
    link.onClose(() => {
      if (current === capped) current = undefined;
      session.destroy();
    });
    return session;
  });
  dialer.start();
  return { target: () => current, close: () => dialer.close() };
}
