import WebSocket from 'ws';

/**
 * Pings a WebSocket every `intervalMs` and terminates it when the previous ping got no pong: a
 * tunnel whose peer vanished without a FIN (a laptop closed, a NAT entry dropped) is closed within two
 * intervals instead of holding requests until TCP gives up. Both ends run it. Returns a stopper.
 */
export function keepAlive(socket: WebSocket, intervalMs: number): () => void {
  let answered = true;
  socket.on('pong', () => (answered = true));
  const timer = setInterval(() => {
    if (socket.readyState !== WebSocket.OPEN) return;
    if (!answered) {
      socket.terminate();
      return;
    }
    answered = false;
    socket.ping();
  }, intervalMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  socket.once('close', stop);
  return stop;
}
