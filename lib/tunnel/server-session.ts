import type { Http2Server, ServerHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

/**
 * Hands a WebSocket's stream to an HTTP/2 server as one connection, and destroys that connection's
 * session as soon as the WebSocket closes. Returns the session (to ping it).
 *
 * Why: the session runs over Node's JSStreamSocket (any Duplex). Left alone, the closed WebSocket
 * ends the Duplex, the socket shuts down, and nghttp2 still writes its GOAWAY afterwards — which
 * trips an internal assertion in JSStreamSocket.doWrite (ERR_INTERNAL_ASSERTION, an uncaught
 * exception that would take the whole process down). Destroying the session first, synchronously in
 * the WebSocket's `close` event and before the Duplex's `end` is delivered, leaves nothing to write.
 */
export function serveOverWebSocket(
  server: Http2Server,
  duplex: Duplex,
  socket: WebSocket,
): ServerHttp2Session | undefined {
  let session: ServerHttp2Session | undefined;
  const take = (s: ServerHttp2Session): void => {
    session = s;
  };
  server.once('session', take);
  server.emit('connection', duplex);
  server.off('session', take);
  socket.once('close', () => session?.destroy());
  return session;
}
