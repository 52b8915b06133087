import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { createWebSocketStream } from 'ws';
import { backoffDelay, type BackoffPolicy } from '../../lib/backoff.ts';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { keepAlive } from '../../lib/tunnel/keepalive.ts';
import {
  CLOSE_REVOKED,
  CLOSE_TOO_MANY_TUNNELS,
  DEFAULT_TUNNEL_LIMITS,
  ENVIRONMENT_TOKEN_HEADER,
  MAX_FRAME_MESSAGE_BYTES,
} from '../../lib/tunnel/protocol.ts';
import { terminateSocket } from '../websocket.ts';

export interface DialerOptions {
  /** `ws(s)://<frontend>/api/v1/tunnel` or `…/tunnel/access`. */
  readonly url: string;
  /** The environment token (never logged). */
  readonly token: string;
  readonly logger: Logger;
  /** `tunnel` or `access`, for the logs. */
  readonly name: string;
  readonly backoff?: BackoffPolicy;
  readonly pingIntervalMs?: number;
  /** Runs the protocol over one connected socket; called again after every reconnect. */
  onConnected(duplex: Duplex, socket: WebSocket): void;
}

const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };

/**
 * The agent's outbound connection to the installation's frontend: a WebSocket (so it passes HTTP(S)
 * load balancers, Ingresses and TLS termination) authenticated by the environment token, kept alive
 * with pings, and re-dialled with jittered exponential backoff whenever it drops or is refused.
 */
export class Dialer {
  private readonly options: DialerOptions;
  private socket: WebSocket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(options: DialerOptions) {
    this.options = options;
  }

  get connected(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  start(): void {
    this.dial();
  }

  close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const socket = this.socket;
    this.socket = undefined;
    return terminateSocket(socket);
  }

  private dial(): void {
    if (this.stopped) return;
    const { url, token, logger, name } = this.options;
    const socket = new WebSocket(url, {
      headers: { [ENVIRONMENT_TOKEN_HEADER]: token },
      maxPayload: MAX_FRAME_MESSAGE_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
      // Masking (RFC 6455 §10.3) protects intermediaries from scripts in browsers; this client is no
      // browser, and an all-zero mask lets both ends skip an XOR over every byte of the tunnel.
      generateMask: (mask: Buffer) => void mask.fill(0),
    });
    this.socket = socket;
    socket.on('open', () => {
      this.failures = 0;
      keepAlive(socket, this.options.pingIntervalMs ?? DEFAULT_TUNNEL_LIMITS.pingIntervalMs);
      const duplex = createWebSocketStream(socket);
      duplex.on('error', () => undefined);
      logger.info({ url }, `${name}: connected to the installation`);
      this.options.onConnected(duplex, socket);
    });
    socket.on('unexpected-response', (_req, res: IncomingMessage) => {
      res.resume();
      const status = res.statusCode ?? 0;
      logger.warn(
        { url, status },
        status === 401
          ? `${name}: the installation refused this environment's token (disabled? run svc enable again)`
          : `${name}: the installation refused the connection`,
      );
      socket.terminate();
    });
    socket.on('error', (err) => logger.warn({ url, err: errorText(err) }, `${name}: connection failed; retrying`));
    socket.on('close', (code: number) => {
      if (this.socket === socket) this.socket = undefined;
      if (this.stopped) return;
      if (code === CLOSE_REVOKED) logger.warn(`${name}: the installation revoked this environment (svc disable?)`);
      if (code === CLOSE_TOO_MANY_TUNNELS) logger.warn(`${name}: the environment holds too many connections`);
      this.failures++;
      const delay = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, this.failures);
      logger.info({ delayMs: delay }, `${name}: disconnected; reconnecting`);
      this.timer = setTimeout(() => this.dial(), delay);
    });
  }
}
