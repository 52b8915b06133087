import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SvcError } from './errors.ts';

export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Listens on `address` (port 0: the system picks one; read it with `portOf`). Binding problems
 * (port in use, address not available, permission) reject with a clear `bind_failed` SvcError
 * naming the address, prefixed with `label` when given, instead of an unhandled `error` event.
 */
export function listen(server: Server, address: ListenAddress, label?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      const error = bindError(err, address);
      reject(
        label ? new SvcError(error.code, `${label}: ${error.message}`, { status: error.status, cause: err }) : error,
      );
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(address.port, address.host);
  });
}

function bindError(err: NodeJS.ErrnoException, address: ListenAddress): SvcError {
  const reason =
    err.code === 'EADDRINUSE'
      ? 'address already in use'
      : err.code === 'EADDRNOTAVAIL'
        ? 'address not available on this machine'
        : err.code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges)'
          : err.message;
  return new SvcError('bind_failed', `cannot listen on ${formatAddress(address)}: ${reason}`, {
    status: 409,
    cause: err,
  });
}

/** `host:port`, with an IPv6 host in brackets. */
export function formatAddress(address: ListenAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

/** The port a listening TCP server is bound to. */
export function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}

/** Stops accepting and drops every open connection (keep-alive ones too), then resolves. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
