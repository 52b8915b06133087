import WebSocket from 'ws';

/** Drops a connection at once (no close handshake) and resolves when it is closed; nothing to do for none. */
export function terminateSocket(socket: WebSocket | undefined): Promise<void> {
  if (!socket || socket.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.terminate();
  });
}
