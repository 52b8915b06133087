import { connect, createServer, type Socket } from 'node:net';
import type { ListenAddress } from '../../lib/listen.ts';
import type { Logger } from '../../lib/logger.ts';
import type { TcpTarget } from '../../lib/share/tcp-target.ts';
import { socketEnd, spliceEnds, streamEnd, tcpStreamHeaders } from '../../lib/tunnel/tcp-relay.ts';
import type { StreamTarget } from '../../lib/tunnel/stream-target.ts';
import { listenClosing, type RunningListener } from '../backends/listener.ts';

/** What an access does with each TCP connection its listener accepts. */
export type TcpConnectionHandler = (socket: Socket) => void;

/**
 * A TCP access's listener at `address`: every accepted connection goes to `handle`, half-open
 * allowed (a client's FIN ends only its direction). Closing it cuts the connections still open.
 */
export function listenTcp(handle: TcpConnectionHandler, address: ListenAddress): Promise<RunningListener> {
  const server = createServer({ allowHalfOpen: true, noDelay: true }, handle);
  return listenClosing(server, address);
}

/**
 * A TCP access to a share of another machine of the account: each connection becomes one TCP
 * stream to the installation over the access connection, and is spliced to it once the share's
 * agent has dialed the target. Any refusal (not connected, busy, unknown share, target down) closes
 * the client's connection with nothing sent, and is logged with its reason.
 */
export function remoteTcpAccess(
  target: () => StreamTarget | undefined,
  shareToken: string,
  logger: Logger,
): TcpConnectionHandler {
  return (socket) => {
    socket.on('error', () => undefined);
    const refuse = (reason: string) => {
      logger.warn({ share: shareToken, reason }, 'access: TCP connection refused');
      socket.destroy();
    };
    const session = target();
    if (!session) return refuse('the installation is not connected');
    let stream;
    try {
      stream = session.open(tcpStreamHeaders(shareToken, 'access'));
    } catch (err) {
      return refuse((err as Error).message);
    }
    stream.on('error', () => undefined);
    let answered = false;
    stream.once('response', (headers) => {
      answered = true;
      const status = Number(headers[':status']);
      if (status === 200) return spliceEnds(socketEnd(socket), streamEnd(stream));
      let text = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => (text += text.length < 500 ? chunk : ''));
      stream.once('end', () => refuse(`${status}: ${text.trim().replace(/^\d+: /, '')}`));
    });
    stream.once('close', () => {
      if (!answered) refuse('the installation closed the stream');
    });
    socket.once('close', () => {
      if (!answered) stream.close();
    });
  };
}

/** A TCP access to a share of this machine: each connection is spliced to a connection to the target. */
export function localTcpAccess(tcpTarget: TcpTarget, logger: Logger): TcpConnectionHandler {
  return (socket) => {
    socket.on('error', () => undefined);
    const out = connect({ host: tcpTarget.host, port: tcpTarget.port, allowHalfOpen: true, noDelay: true });
    out.once('error', (err: NodeJS.ErrnoException) => {
      logger.warn({ target: `${tcpTarget.host}:${tcpTarget.port}`, err: err.code }, 'access: TCP target refused');
      socket.destroy();
    });
    out.once('connect', () => spliceEnds(socketEnd(socket), socketEnd(out)));
    socket.once('close', () => {
      if (out.connecting) out.destroy();
    });
  };
}
