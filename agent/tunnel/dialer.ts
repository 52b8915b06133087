import type { Http2Session } from 'node:http2';
import { backoffDelay, type BackoffPolicy } from '../../lib/backoff.ts';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { TunnelLink } from '../../lib/tunnel/link.ts';
import { watchTunnel } from '../../lib/tunnel/liveness.ts';
import {
  CLOSE_REVOKED,
  CLOSE_TOO_MANY_TUNNELS,
  DEFAULT_TUNNEL_LIMITS,
  pingTimeoutFor,
} from '../../lib/tunnel/protocol.ts';
import { dialLink, UpgradeRefused, type TransportChoice } from './transport.ts';

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
  /** The transport to dial (agent/tunnel/transport.ts); `auto` when left out. */
  readonly transport?: TransportChoice;
}

/**
 * Runs the protocol over one connected link; called again after every reconnect. Returns the
 * connection's HTTP/2 session, which the dialer pings.
 */
export type OnConnected = (link: TunnelLink) => Http2Session | undefined;

const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };
const HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * The agent's outbound connection to the installation's frontend: an HTTP/1.1 upgrade (so it passes
 * HTTP(S) load balancers, Ingresses and TLS termination) authenticated by the environment token,
 * carried directly or in a WebSocket (`dialLink`), kept alive with pings, and re-dialled with
 * jittered exponential backoff whenever it drops or is refused, until `close()`.
 */
export class Dialer {
  private readonly name: string;
  private readonly options: DialTarget;
  private readonly onConnected: OnConnected;
  private stopped = false;
  private link: TunnelLink | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failures = 0;

  /** `name`: `tunnel` or `access`, for the logs. */
  constructor(name: string, options: DialTarget, onConnected: OnConnected) {
    this.name = name;
    this.options = options;
    this.onConnected = onConnected;
  }

  get connected(): boolean {
    return this.link?.open ?? false;
  }

  start(): void {
    void this.dial();
  }

  close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const link = this.link;
    this.link = undefined;
    if (!link?.open) return Promise.resolve();
    return new Promise((resolve) => {
      link.onClose(() => resolve());
      link.terminate();
    });
  }

  private async dial(): Promise<void> {
    const { url, token, logger } = this.options;
    const { name } = this;
    let link: TunnelLink;
    try {
      link = await dialLink(
        { url, token, handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS },
        this.options.transport ?? 'auto',
        (why) => logger.info({ url, why }, `${name}: no direct transport here; using a WebSocket`),
      );
    } catch (err) {
      this.refused(err);
      return this.retry();
    }
    if (this.stopped) return link.terminate();
    this.link = link;
    this.failures = 0;
    logger.info({ url, transport: link.transport }, `${name}: connected to the installation`);
    const session = this.onConnected(link);
    watchTunnel(link, session, this.liveness(), (silentMs) =>
      logger.warn({ url, silentMs }, `${name}: the installation is silent; dropping the connection`),
    );
    link.onClose((code) => {
      if (this.link === link) this.link = undefined;
      if (this.stopped) return;
      if (code === CLOSE_REVOKED) logger.warn(`${name}: the installation revoked this environment (svc disable?)`);
      if (code === CLOSE_TOO_MANY_TUNNELS) logger.warn(`${name}: the environment holds too many connections`);
      this.retry();
    });
  }

  private refused(err: unknown): void {
    const { url, logger } = this.options;
    const { name } = this;
    if (!(err instanceof UpgradeRefused)) {
      logger.warn({ url, err: errorText(err) }, `${name}: connection failed; retrying`);
      return;
    }
    logger.warn(
      { url, status: err.status },
      err.status === 401
        ? `${name}: the installation refused this environment's token (disabled? run svc enable again)`
        : `${name}: the installation refused the connection`,
    );
  }

  private retry(): void {
    if (this.stopped) return;
    this.failures++;
    const delayMs = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, this.failures);
    this.options.logger.info({ delayMs }, `${this.name}: disconnected; reconnecting`);
    this.timer = setTimeout(() => void this.dial(), delayMs);
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
}
