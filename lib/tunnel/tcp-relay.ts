import type { OutgoingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ROUTE_HEADER, TCP_PROTOCOL, shareTokenOf, type TunnelRoute } from './protocol.ts';
import { onceSettled, relayHead, resetStream } from './relay.ts';
import { watchStuck } from './stuck.ts';
import { TunnelUnavailable, type StreamTarget } from './stream-target.ts';

/** One end of a relayed TCP connection: a socket or an HTTP/2 stream, and how to cut it. */
export interface RelayEnd {
  readonly duplex: Duplex;
  /** Cuts this end so its peer sees a failure (a TCP reset, an RST_STREAM), never a clean end. */
  abort(): void;
}

/** A socket as a relay end; cut with a TCP reset. */
export function socketEnd(socket: Socket): RelayEnd {
  socket.on('error', () => undefined);
  return { duplex: socket, abort: () => (socket.destroyed ? undefined : socket.resetAndDestroy()) };
}

/** An HTTP/2 stream as a relay end; cut with RST_STREAM. */
export function streamEnd(stream: Duplex & Parameters<typeof resetStream>[0]): RelayEnd {
  stream.on('error', () => undefined);
  return { duplex: stream, abort: () => resetStream(stream) };
}

/**
 * Joins two ends of one TCP connection: bytes piped both ways under each end's flow control (a
 * slow reader slows its writer; nothing is buffered beyond the pipes' marks and the HTTP/2
 * windows), each direction half-closed on its own (a FIN or END_STREAM ends only that direction),
 * and a failure of either end (reset, error, its tunnel lost) cuts the other instead of ending it.
 * Sockets must be made with `allowHalfOpen`, so a FIN read does not end the other direction too.
 * With `stuckMs`, both ends are cut once bytes wait in the connection and none moved either way for
 * that long (stuck.ts); a quiet connection with nothing waiting is left open.
 */
export function spliceEnds(a: RelayEnd, b: RelayEnd, stuckMs?: number): void {
  const readDone = new Map<RelayEnd, boolean>([
    [a, false],
    [b, false],
  ]);
  const direction = (from: RelayEnd, into: RelayEnd): void => {
    from.duplex.pipe(into.duplex, { end: false });
    onceSettled(from.duplex, (complete) => {
      if (!complete) return into.abort();
      readDone.set(from, true);
      into.duplex.end();
    });
  };
  direction(a, b);
  direction(b, a);
  // An end that closes with either direction unfinished leaves the other end nothing to finish.
  for (const [self, other] of [
    [a, b],
    [b, a],
  ] as const) {
    self.duplex.once('close', () => {
      if (!readDone.get(self) || !self.duplex.writableFinished) other.abort();
    });
  }
  if (stuckMs !== undefined) {
    watchStuck([a.duplex, b.duplex], stuckMs, () => {
      a.abort();
      b.abort();
    });
  }
}

/** The header block of a TCP stream towards the share `token`. */
export function tcpStreamHeaders(token: string, route: TunnelRoute): OutgoingHttpHeaders {
  return {
    ':method': 'CONNECT',
    ':protocol': TCP_PROTOCOL,
    ':scheme': 'http',
    ':path': '/',
    ':authority': `${token}.access.invalid`,
    [ROUTE_HEADER]: route,
  };
}

/**
 * A TCP stream (from an access's agent, or from another frontend replica) forwarded into a tunnel:
 * the same CONNECT with our route marker; answered with the far end's status once it has dialed the
 * target, then spliced. A quiet connection stays open as long as the tunnels under it are alive
 * (their pings notice a dead peer); one whose bytes are stuck (an end that stopped reading) is cut
 * after `stuckMs` without progress, so it cannot hold the frontend's buffers for ever.
 */
export function forwardTcpStream(
  incoming: ServerHttp2Stream,
  headers: Http2Headers,
  target: StreamTarget,
  route: TunnelRoute,
  stuckMs?: number,
): void {
  incoming.on('error', () => undefined);
  const token = shareTokenOf(headers[':authority']) ?? '';
  let outgoing;
  try {
    outgoing = target.open(tcpStreamHeaders(token, route));
  } catch (err) {
    const busy = err instanceof TunnelUnavailable && err.reason === 'busy';
    return refuseTcpStream(incoming, busy ? 503 : 502, busy ? 'the tunnel is busy' : 'the tunnel is closed');
  }
  outgoing.on('error', () => undefined);
  let answered = false;
  outgoing.once('response', (h) => {
    answered = true;
    const status = Number(h[':status']);
    if (incoming.closed) return resetStream(outgoing);
    if (
      !relayHead(incoming, { ':status': status, ...(h['content-type'] ? { 'content-type': h['content-type'] } : {}) })
    ) {
      resetStream(outgoing);
      return refuseTcpStream(incoming, 502, "the share's agent answered a status that cannot be relayed");
    }
    if (status !== 200) return void outgoing.pipe(incoming);
    spliceEnds(streamEnd(incoming), streamEnd(outgoing), stuckMs);
  });
  outgoing.once('close', () => {
    if (!incoming.headersSent) refuseTcpStream(incoming, 502, "the share's agent did not answer");
  });
  incoming.once('close', () => {
    if (!answered) resetStream(outgoing);
  });
}

/** Answers a TCP stream that will not be relayed: a status and one line saying why. */
export function refuseTcpStream(stream: ServerHttp2Stream, status: number, text: string): void {
  if (stream.closed || stream.destroyed || stream.headersSent) return;
  stream.respond({ ':status': status, 'content-type': 'text/plain; charset=utf-8' });
  stream.end(`${status}: ${text}\n`);
}
