import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { SvcError } from './errors.ts';

/** Where a listener binds: an IP address (or host name) and a port; port 0 lets the system pick one. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

const IP_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/;

/**
 * The one parser of `ip:port` text, for every config field, flag and API field that names a
 * listener (`[::1]:8080` for IPv6; an empty host, `:8080`, means every interface). Callers report a
 * refusal with {@link listenAddressProblem}, so all of them accept the same text and word the
 * refusal the same way.
 */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const match = IP_PORT.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/** Why `text` is not a listen address; shown after the field path or flag that held it. */
export function listenAddressProblem(text: string): string {
  return `must be ip:port (for example 0.0.0.0:8080), got ${JSON.stringify(text)}`;
}

/**
 * Listens on `address` (port 0: the system picks one; read it with `portOf`). Binding problems
 * (port in use, address not available, permission) reject with a clear `bind_failed` SvcError
 * naming the address, prefixed with `label` when given, instead of an unhandled `error` event.
 */
export function listen(server: NetServer, address: ListenAddress, label?: string): Promise<void> {
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
export function portOf(server: NetServer): number {
  return (server.address() as AddressInfo).port;
}

/** Stops accepting and drops every open connection (keep-alive ones too), then resolves. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
