import type { Http2Server, ServerHttp2Session } from 'node:http2';
import type { TunnelLink } from './link.ts';

/**
 * Hands a tunnel link's stream to an HTTP/2 server as one connection, and destroys that connection's
 * session as soon as the link closes. Returns the session (to ping it), bound to the link.
 *
 * Why: over a WebSocket the session runs on Node's JSStreamSocket (any Duplex). Left alone, the
 * closed WebSocket ends the Duplex, the socket shuts down, and nghttp2 still writes its GOAWAY
 * afterwards — which trips an internal assertion in JSStreamSocket.doWrite (ERR_INTERNAL_ASSERTION,
 * an uncaught exception that would take the whole process down). Destroying the session first,
 * synchronously in the link's close and before the Duplex's `end` is delivered, leaves nothing to
 * write. A direct link needs no such care, and gets it all the same.
 */
export function serveOnLink(server: Http2Server, link: TunnelLink): ServerHttp2Session | undefined {
  let session: ServerHttp2Session | undefined;
  const take = (s: ServerHttp2Session): void => {
    session = s;
  };
  server.once('session', take);
  server.emit('connection', link.stream);
  server.off('session', take);
  if (session) link.bind(session);
  link.onClose(() => session?.destroy());
  return session;
}
