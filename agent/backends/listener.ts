import { createServer } from '../../lib/node-http.ts';
import type { Server as NetServer, Socket } from 'node:net';
import { listen, portOf, type ListenAddress } from '../../lib/listen.ts';
import { guardUpgradeSocket } from '../../lib/upgrade-socket.ts';
import type { BackendHandler } from './types.ts';

export interface RunningListener {
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves one backend handler on an HTTP listener. Binding problems (port in use, address not
 * available, permission) become a clear SvcError naming the address instead of an unhandled event.
 */
export async function listenHandler(handler: BackendHandler, address: ListenAddress): Promise<RunningListener> {
  const server = createServer((req, res) => handler.request(req, res));
  server.on('upgrade', (req, socket, head) => {
    guardUpgradeSocket(socket);
    if (handler.upgrade) handler.upgrade(req, socket, head);
    else socket.destroy();
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  return listenClosing(server, address, () => {
    handler.close();
    server.closeIdleConnections();
  });
}

/**
 * Listens on `address` and returns the listener; its `close` stops accepting, calls `beforeClose`
 * and cuts every connection still open, resolving once the server has closed.
 */
export async function listenClosing(
  server: NetServer,
  address: ListenAddress,
  beforeClose: () => void = () => undefined,
): Promise<RunningListener> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await listen(server, address);
  return {
    host: address.host,
    port: portOf(server),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        beforeClose();
        for (const s of sockets) s.destroy();
      }),
  };
}
