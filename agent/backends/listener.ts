import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SvcError } from '../../lib/errors.ts';
import type { BackendHandler } from './types.ts';

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

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
  const server = http.createServer((req, res) => handler.request(req, res));
  server.on('upgrade', (req, socket, head) => {
    if (handler.upgrade) handler.upgrade(req, socket, head);
    else socket.destroy();
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await bind(server, address);
  const info = server.address() as AddressInfo;
  return {
    host: address.host,
    port: info.port,
    close: () =>
      new Promise<void>((resolve) => {
        handler.close();
        server.close(() => resolve());
        server.closeIdleConnections();
        for (const s of sockets) s.destroy();
      }),
  };
}

/** Listens and translates bind errors; shared by every listener the agent opens. */
export function bind(server: http.Server, address: ListenAddress): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(bindError(err, address));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(address.port, address.host);
  });
}

export function bindError(err: NodeJS.ErrnoException, address: ListenAddress): SvcError {
  const where = formatAddress(address);
  const reason =
    err.code === 'EADDRINUSE'
      ? 'address already in use'
      : err.code === 'EADDRNOTAVAIL'
        ? 'address not available on this machine'
        : err.code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges)'
          : err.message;
  return new SvcError('bind_failed', `cannot listen on ${where}: ${reason}`, { status: 409, cause: err });
}

export function formatAddress(address: ListenAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
