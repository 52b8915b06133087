import type { IncomingMessage } from 'node:http';
import { AGENT_VERSION_HEADER } from '../../lib/tunnel/presence.ts';
import { SVC_VERSION } from '../../lib/version.ts';
import type { Http2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import type { BackoffPolicy } from '../../lib/backoff.ts';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { watchTunnel } from '../../lib/tunnel/liveness.ts';
import { webSocketDuplex } from '../../lib/tunnel/ws-duplex.ts';
import {
  CLOSE_REVOKED,
  CLOSE_TOO_MANY_TUNNELS,
  DEFAULT_TUNNEL_LIMITS,
  ENVIRONMENT_TOKEN_HEADER,
  MAX_FRAME_MESSAGE_BYTES,
  pingTimeoutFor,
} from '../../lib/tunnel/protocol.ts';
import { ReconnectingSocket } from '../websocket.ts';

/** Where and how an agent dials the installation: shared by the tunnel and the access connection. */
export interface DialTarget {
  /** `ws(s)://<frontend>/api/v1/tunnel` or `…/tunnel/access`. */
  readonly url: string;
  /** The environment token (never logged). */
  readonly token: string;
  readonly logger: Logger;
  readonly backoff?: BackoffPolicy;
  /** HTTP/2 PING interval and dead-peer timeout; `DEFAULT_TUNNEL_LIMITS`' when left out. */
  readonly pingIntervalMs?: number;
  readonly pingTimeoutMs?: number;
}

/**
 * Runs the protocol over one connected socket; called again after every reconnect. Returns the
 * connection's HTTP/2 session, which the dialer pings.
 */
export type OnConnected = (duplex: Duplex, socket: WebSocket) => Http2Session | undefined;

/**
 * The agent's outbound connection to the installation's frontend: a WebSocket (so it passes HTTP(S)
 * load balancers, Ingresses and TLS termination) authenticated by the environment token, kept alive
 * with pings, and re-dialled with jittered exponential backoff whenever it drops or is refused.
 */
export class Dialer extends ReconnectingSocket {
  private readonly name: string;
  private readonly options: DialTarget;
  private readonly onConnected: OnConnected;

  /** `name`: `tunnel` or `access`, for the logs. */
  constructor(name: string, options: DialTarget, onConnected: OnConnected) {
    super(options.backoff);
    this.name = name;
    this.options = options;
    this.onConnected = onConnected;
  }

  start(): void {
    this.dial();
  }

  protected open(): WebSocket {
    const { url, token, logger } = this.options;
    const { name } = this;
    const socket = new WebSocket(url, {
      headers: { [ENVIRONMENT_TOKEN_HEADER]: token, [AGENT_VERSION_HEADER]: SVC_VERSION },
      maxPayload: MAX_FRAME_MESSAGE_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
      // Masking (RFC 6455 §10.3) protects intermediaries from scripts in browsers; this client is no
      // browser, and an all-zero mask lets both ends skip an XOR over every byte of the tunnel.
      generateMask: (mask: Buffer) => void mask.fill(0),
    });
    socket.on('open', () => {
      this.succeeded();
      const duplex = webSocketDuplex(socket);
      duplex.on('error', () => undefined);
      logger.info({ url }, `${name}: connected to the installation`);
      const session = this.onConnected(duplex, socket);
      watchTunnel(socket, session, this.liveness(), (silentMs) =>
        logger.warn({ url, silentMs }, `${name}: the installation is silent; dropping the connection`),
      );
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
    return socket;
  }

  private liveness(): { pingIntervalMs: number; pingTimeoutMs: number } {
    const pingIntervalMs = this.options.pingIntervalMs ?? DEFAULT_TUNNEL_LIMITS.pingIntervalMs;
    const pingTimeoutMs =
      this.options.pingTimeoutMs ??
      (this.options.pingIntervalMs === undefined
        ? DEFAULT_TUNNEL_LIMITS.pingTimeoutMs
        : pingTimeoutFor(pingIntervalMs));
    return { pingIntervalMs, pingTimeoutMs };
  }

  protected shouldRetry(code: number, delayMs: number): boolean {
    const { logger } = this.options;
    const { name } = this;
    if (code === CLOSE_REVOKED) logger.warn(`${name}: the installation revoked this environment (svc disable?)`);
    if (code === CLOSE_TOO_MANY_TUNNELS) logger.warn(`${name}: the environment holds too many connections`);
    logger.info({ delayMs }, `${name}: disconnected; reconnecting`);
    return true;
  }
}
