import http2, { type Http2Session, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { listen, portOf, type ListenAddress } from '../../lib/listen.ts';
import type { Logger } from '../../lib/logger.ts';
import { forwardStream } from '../../lib/tunnel/forward.ts';
import { ROUTE_HEADER, SESSION_WINDOW_BYTES, serverSettings, type TunnelLimits } from '../../lib/tunnel/protocol.ts';
import type { StreamTarget } from '../../lib/tunnel/stream-target.ts';
import type { PeerStreamCounter } from './peer-traffic.ts';
import { PEER_CREDENTIAL_HEADER, PEER_ENV_HEADER, credentialMatches, peerStreamCap } from './peer-protocol.ts';

export interface PeerServerOptions {
  readonly listen: ListenAddress;
  readonly credential: string;
  /** The tunnel of the environment held by *this* replica; never another replica's (no forwarding loops). */
  readonly local: (envZId: string) => StreamTarget | undefined;
  readonly limits: TunnelLimits;
  readonly logger: Logger;
  /** Counts the requests of the streams served here in the share's traffic (peer-traffic.ts); none without it. */
  readonly count?: PeerStreamCounter;
}

export interface PeerServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The listener other replicas forward streams to: h2c on the pod network. A stream is served only
 * with the replicas' shared credential (401 and a log line without it otherwise) and only into a
 * tunnel this replica holds (503 when it holds none: the Lease the sender read was stale). The
 * stream goes into the tunnel with `forwardStream`, as a private access does, keeping the route
 * (`public` or `access`) the first replica decided. With `count`, the request of a stream for a
 * public share of that environment is counted here: the forwarding replica leaves it to this one.
 */
export async function startPeerServer(options: PeerServerOptions): Promise<PeerServer> {
  const { credential, local, limits, logger } = options;
  const server = http2.createServer({
    settings: { ...serverSettings(limits), maxConcurrentStreams: peerStreamCap(limits) },
    maxHeaderListPairs: 256,
  });
  const sessions = new Set<Http2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.once('localSettings', () => session.setLocalWindowSize(SESSION_WINDOW_BYTES));
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    stream.on('error', () => undefined);
    const envZId = typeof headers[PEER_ENV_HEADER] === 'string' ? headers[PEER_ENV_HEADER] : undefined;
    const peer = stream.session?.socket?.remoteAddress;
    if (!credentialMatches(headers[PEER_CREDENTIAL_HEADER], credential)) {
      logger.warn({ peer, envZId }, 'replica: peer stream refused: missing or wrong replica credential');
      return answer(stream, 401, '401: this port takes streams from the other frontend replicas only\n');
    }
    const route = headers[ROUTE_HEADER];
    if (!envZId || (route !== 'public' && route !== 'access')) {
      return answer(stream, 400, `400: a peer stream names the environment and the route\n`);
    }
    const target = local(envZId);
    if (!target) {
      logger.info({ peer, envZId }, 'replica: peer stream for an environment whose tunnel is not here');
      return answer(stream, 503, '503: share offline: its agent is not connected to this replica\n', {
        'retry-after': '5',
      });
    }
    delete headers[PEER_ENV_HEADER];
    delete headers[PEER_CREDENTIAL_HEADER];
    const record = options.count?.(envZId, headers);
    forwardStream(stream, headers, target, { route, idleMs: limits.streamIdleMs, ...(record ? { record } : {}) });
  });
  await listen(server, options.listen, 'replica peer listener');
  return {
    port: portOf(server),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const session of sessions) session.destroy();
      }),
  };
}

function answer(stream: ServerHttp2Stream, status: number, text: string, extra: Record<string, string> = {}): void {
  if (stream.closed || stream.headersSent) return;
  stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8', ...extra });
  stream.end(text);
}
