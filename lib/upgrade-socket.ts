import type { Duplex } from 'node:stream';

/**
 * Gives an upgrade's socket an 'error' listener the moment Node's server hands it over. Node takes
 * its own listener off an upgraded socket, and an upgrade often waits for something first (a token
 * checked against the controller or the store): a client that resets the connection meanwhile
 * (ECONNRESET) would raise an 'error' nothing listens to, which ends the process with every other
 * connection in it. Such a socket is destroyed; handlers add their own listeners as before.
 */
export function guardUpgradeSocket(socket: Duplex): void {
  socket.on('error', () => socket.destroy());
}
