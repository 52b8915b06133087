import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

interface Waiting {
  readonly res: ServerResponse;
  readonly handle: () => void;
}

/** Per connection with a request being handled: the requests pipelined behind it, in order. */
const WAITING = new WeakMap<Socket, Waiting[]>();

/**
 * Handles the requests of one connection one at a time, each once the response before it is
 * complete (or its connection gone). Node's server hands over pipelined requests as soon as it has
 * parsed them, and a proxy that forwards them at once, each on a backend connection of its own,
 * lets a request behind a POST reach the backend before it; RFC 9112 §9.3.2 says not to send
 * requests behind a non-idempotent one before its answer. Browsers do not pipeline, so this costs
 * them nothing.
 */
export function inTurn(req: IncomingMessage, res: ServerResponse, handle: () => void): void {
  const socket = req.socket;
  const waiting = WAITING.get(socket);
  if (waiting) waiting.push({ res, handle });
  else {
    WAITING.set(socket, []);
    run(socket, { res, handle });
  }
}

function run(socket: Socket, turn: Waiting): void {
  // 'close' comes once the response is finished or cannot be (the visitor left).
  turn.res.once('close', () => {
    // With the connection gone, the requests behind are dropped unhandled, as Node's server drops them.
    const next = socket.destroyed ? undefined : WAITING.get(socket)?.shift();
    if (next) run(socket, next);
    else WAITING.delete(socket);
  });
  turn.handle();
}
