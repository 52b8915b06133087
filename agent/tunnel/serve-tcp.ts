import { connect } from 'node:net';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import type { TcpTarget } from '../../lib/share/tcp-target.ts';
import { TCP_PROTOCOL } from '../../lib/tunnel/protocol.ts';
import { refuseTcpStream, socketEnd, spliceEnds, streamEnd } from '../../lib/tunnel/tcp-relay.ts';

/** How long dialing a TCP share's target may take before the stream is answered 504. */
const DIAL_TIMEOUT_MS = 10_000;

/**
 * One TCP connection of a private TCP share, arriving as an extended CONNECT stream on the tunnel:
 * the agent dials the share's own target (never anything the stream names), answers 200 once
 * connected and splices the socket and the stream (lib/tunnel/tcp-relay.ts). A target that refuses
 * or does not answer is reported with 502 or 504, which the access maps to closing its client's
 * connection.
 */
export function serveTcpStream(stream: ServerHttp2Stream, headers: Http2Headers, target: TcpTarget): void {
  if (headers[':method'] !== 'CONNECT' || headers[':protocol'] !== TCP_PROTOCOL) {
    return refuseTcpStream(stream, 400, 'this is a TCP share: reach it with a TCP access');
  }
  const socket = connect({ host: target.host, port: target.port, allowHalfOpen: true, noDelay: true });
  socket.setTimeout(DIAL_TIMEOUT_MS, () => {
    refuseTcpStream(stream, 504, 'the share target did not answer in time');
    socket.destroy();
  });
  const abandon = () => socket.destroy();
  stream.once('close', abandon);
  socket.once('error', (err: NodeJS.ErrnoException) => {
    refuseTcpStream(stream, 502, `the share target did not answer: ${err.code ?? err.message}`);
  });
  socket.once('connect', () => {
    socket.setTimeout(0);
    stream.off('close', abandon);
    if (stream.closed || stream.destroyed) return void socket.destroy();
    stream.respond({ ':status': 200 });
    spliceEnds(streamEnd(stream), socketEnd(socket));
  });
}
