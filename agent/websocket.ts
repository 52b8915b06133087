import { backoffDelay, type BackoffPolicy } from '../lib/backoff.ts';
import WebSocket from 'ws';

/** Drops a connection at once (no close handshake) and resolves when it is closed; nothing to do for none. */
export function terminateSocket(socket: WebSocket | undefined): Promise<void> {
  if (!socket || socket.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.terminate();
  });
}

/**
 * An outbound WebSocket the agent keeps open (remoting to the controller, tunnel and access
 * connections to the installation): re-dialled with jittered exponential backoff (lib/backoff.ts)
 * whenever it drops or is refused, until `close()`. Subclasses create the socket with their
 * headers and handlers in `open`, call `succeeded()` once it is usable, and may end the retries
 * for good by answering `false` from `shouldRetry` (a close code that means "do not come back").
 */
export abstract class ReconnectingSocket {
  protected stopped = false;
  private socket: WebSocket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private readonly backoff: BackoffPolicy;

  constructor(backoff: BackoffPolicy | undefined) {
    this.backoff = backoff ?? DEFAULT_RECONNECT_BACKOFF;
  }

  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const socket = this.socket;
    this.socket = undefined;
    return terminateSocket(socket);
  }

  /** Creates one connection attempt's socket with its handlers. */
  protected abstract open(): WebSocket;

  /** Whether to dial again after the socket closed with `code`; the delay is logged by the caller. */
  protected abstract shouldRetry(code: number, delayMs: number): boolean;

  protected dial(): void {
    if (this.stopped) return;
    const socket = this.open();
    this.socket = socket;
    socket.on('close', (code: number) => {
      if (this.socket === socket) this.socket = undefined;
      if (this.stopped) return;
      this.failures++;
      const delay = backoffDelay(this.backoff, this.failures);
      if (!this.shouldRetry(code, delay)) {
        this.stopped = true;
        return;
      }
      this.timer = setTimeout(() => this.dial(), delay);
    });
  }

  /** The connection works: the next drop starts the backoff from its base again. */
  protected succeeded(): void {
    this.failures = 0;
  }
}

const DEFAULT_RECONNECT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };
