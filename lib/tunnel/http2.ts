import http2, { type Http2Server } from 'node:http2';
import type { TunnelLink } from './link.ts';
import { SESSION_WINDOW_BYTES, clientSettings, serverSettings, type TunnelLimits } from './protocol.ts';
import { CappedSession } from './stream-target.ts';

/** Header pairs one request or response may carry over a tunnel (Node's default is 128). */
const MAX_HEADER_PAIRS = 256;

/**
 * The HTTP/2 client end of a tunnel or access connection, over its link (either transport): the
 * project's SETTINGS, the connection window widened once connected (the 64 KiB default costs a round
 * trip per 64 KiB), and a cap on the streams open at once.
 */
export function tunnelClientSession(link: TunnelLink, limits: TunnelLimits): CappedSession {
  const session = http2.connect('http://tunnel.invalid', {
    createConnection: () => link.stream,
    settings: clientSettings(limits),
    maxHeaderListPairs: MAX_HEADER_PAIRS,
  });
  session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW_BYTES));
  link.bind(session);
  return new CappedSession(session, limits.maxStreamsPerTunnel);
}

/**
 * The HTTP/2 server end of a tunnel or access connection; hand it connections with
 * `serveOnLink` (server-session.ts). Same SETTINGS and windows as the client end.
 */
export function tunnelServer(limits: TunnelLimits): Http2Server {
  const server = http2.createServer({ settings: serverSettings(limits), maxHeaderListPairs: MAX_HEADER_PAIRS });
  server.on('session', (session) =>
    session.once('localSettings', () => session.setLocalWindowSize(SESSION_WINDOW_BYTES)),
  );
  return server;
}
