import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock } from '../lib/clock.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { startHealthServer, type HealthServer, type Readiness } from '../lib/health.ts';
import { closeServer, listen, portOf, type ListenAddress } from '../lib/listen.ts';
import type { Logger } from '../lib/logger.ts';
import type { ShareSource } from '../lib/share/source.ts';
import { startInternalEndpoint, type InternalEndpoint } from './auth-service.ts';
import { ConnectionSlots, createLimitedServer, DEFAULT_FRONTEND_LIMITS, type FrontendLimits } from './connections.ts';
import { FastPath } from './fast-path/fast-path.ts';
import { fastPathRoute } from './fast-path-route.ts';
import { buildFrontendParts } from './frontend-parts.ts';
import { attachRouter } from './frontend-router.ts';
import { FrontendMetrics } from './metrics.ts';
import type { SharedState } from './shared-state.ts';

export interface FrontendOptions {
  readonly listen: ListenAddress;
  /**
   * Public base URL: its host serves login start, callback and logout; its scheme and port are used
   * for share URLs. A function receives the bound port (for listeners on port 0, as tests and
   * `--dev` use).
   */
  readonly endpointUrl: URL | ((boundPort: number) => URL);
  /** Share hosts are `<token>.<domain>`. */
  readonly domain: string;
  readonly oauth?: OAuthConfig;
  readonly shares: ShareSource;
  readonly logger: Logger;
  readonly metricsListen?: ListenAddress;
  /** Timeouts and connection caps against slow or greedy clients (defaults in connections.ts). */
  readonly limits?: Partial<FrontendLimits>;
  /** Time of sessions, login state and re-checks; the system clock unless a test moves time itself. */
  readonly clock?: Clock;
  /**
   * A further readiness condition for `/readyz`, next to the identity providers' (the public
   * frontend waits for its first registry snapshot).
   */
  readonly ready?: () => Readiness;
  /** The replay guard and logged-out sessions, when several worker processes share them (sidecar/shared-state.ts). */
  readonly sharedState?: SharedState;
  /** Takes an upgrade on a host that is not a share's (the tunnel endpoint); true when it did. */
  readonly onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
}

export interface RunningFrontend {
  readonly port: number;
  readonly endpointUrl: URL;
  readonly metricsPort?: number;
  /** The auth endpoint's internal port (share pods' renew calls), when `oauth.internal_address` is set. */
  readonly internalPort?: number;
  readonly metrics: FrontendMetrics;
  /** Open client connections of one peer address, or of all (each holds a slot of its address's cap). */
  openConnections(peer?: string): number;
  close(): Promise<void>;
}

/**
 * The public frontend: one listener that routes by host. `<token>.<domain>` reaches a share
 * (sidecar/share-handler.ts, through OAuth when the share asks for it); endpoint_url's host serves
 * the OAuth login start, callback and logout; `/healthz` and `/readyz` answer by exact path on any other host
 * (probes use the pod IP). Each connection starts on the fast path (fast-path/fast-path.ts, routed by
 * fast-path-route.ts); what it does not take goes to Node's server (frontend-router.ts).
 */
export async function startFrontend(options: FrontendOptions): Promise<RunningFrontend> {
  const { logger: log, domain } = options;
  const metrics = new FrontendMetrics();
  const limits = { ...DEFAULT_FRONTEND_LIMITS, ...options.limits };
  const slots = new ConnectionSlots((total) => metrics.connectionsOpen.set(total));
  // The fast path routes with the public URL, which with port 0 is known only once the server
  // listens; it is set right after, before any connection can arrive.
  let fastPath: FastPath | undefined = undefined;
  const server = createLimitedServer(
    limits,
    (peer) => {
      metrics.connectionsRefused.inc();
      log.warn({ peer }, 'connection refused: too many open connections from this address');
    },
    (socket, attach, started) => (fastPath ? fastPath.take(socket, attach, started) : attach(socket)),
    slots,
  );
  await listen(server, options.listen);
  const endpointUrl =
    typeof options.endpointUrl === 'function' ? options.endpointUrl(portOf(server)) : options.endpointUrl;
  const parts = buildFrontendParts({ ...options, endpointUrl, limits, metrics, log });
  fastPath = new FastPath({ route: fastPathRoute(parts), limits, metrics, log });
  attachRouter(server, parts, options.onUpgrade);

  const metricsServer: HealthServer | undefined = options.metricsListen
    ? await startHealthServer(options.metricsListen, { ...parts.health, registry: metrics.registry })
    : undefined;
  log.info(
    { address: options.listen.host, port: portOf(server), endpoint: endpointUrl.origin, domain },
    'frontend listening',
  );
  const internal: InternalEndpoint | undefined =
    parts.auth && options.oauth?.internalAddress
      ? await startInternalEndpoint(options.oauth.internalAddress, parts.auth, log)
      : undefined;

  return {
    port: portOf(server),
    endpointUrl,
    ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    ...(internal ? { internalPort: internal.port } : {}),
    metrics,
    openConnections: (peer) => slots.open(peer),
    async close() {
      parts.readiness.stop();
      fastPath?.close();
      parts.proxy.close();
      await Promise.all([closeServer(server), metricsServer?.close(), internal?.close()]);
    },
  };
}
