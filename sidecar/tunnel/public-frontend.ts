import { hostname } from 'node:os';
import type { OAuthConfig } from '../../lib/config/frontend.ts';
import type { Readiness } from '../../lib/health.ts';
import type { ListenAddress } from '../../lib/listen.ts';
import type { Logger } from '../../lib/logger.ts';
import type { ShareDirectory } from '../../lib/tunnel/directory.ts';
import type { TunnelLimits } from '../../lib/tunnel/protocol.ts';
import { EnvironmentPresence } from '../../lib/tunnel/presence.ts';
import type { TrafficCounter } from '../../lib/share/traffic.ts';
import { TrafficTally } from '../../lib/share/traffic-tally.ts';
import { startFrontend, type RunningFrontend } from '../frontend.ts';
import type { PublicFrontendConfig } from './public-frontend-config.ts';
import { RemoteShareDirectory } from './remote-directory.ts';
import { TunnelEndpoint } from './endpoint.ts';
import { LocalTunnels, type TunnelLocator } from './locator.ts';
import { peerStreamCounter, type PeerStreamCounter } from './peer-traffic.ts';
import { ReplicaLocator, startReplicaLocator } from './replicas.ts';
import { ReplicaReporter } from './reporter.ts';
import { tunnelledShares } from './routes.ts';

export interface TunnelFrontendOptions {
  readonly directory: ShareDirectory;
  /** Where tunnels are found (chooseLocator); this process's own tunnels when absent. */
  readonly locator?: ClosableLocator;
  readonly limits: TunnelLimits;
  readonly listen: ListenAddress;
  readonly endpointUrl: URL | ((boundPort: number) => URL);
  readonly domain: string;
  readonly oauth?: OAuthConfig;
  readonly metricsListen?: ListenAddress;
  readonly ready?: () => Readiness;
  readonly logger: Logger;
  /** Per-share request counters (the installation's console reads them, or a replica reports them). */
  readonly traffic?: TrafficCounter;
  /** Which environments hold a tunnel here (the installation's console reads it). */
  readonly presence?: EnvironmentPresence;
}

export interface RunningTunnelFrontend {
  readonly frontend: RunningFrontend;
  readonly endpoint: TunnelEndpoint;
  close(): Promise<void>;
}

/** A locator with whatever it holds open (the replica locator's watch, Leases and peer listener). */
export type ClosableLocator = TunnelLocator & { close?(): Promise<void> };

/**
 * Where this frontend looks for an environment's tunnel, the one place that decides: with a
 * `replicas` section the Lease-based locator across replicas (replicas.ts), which shares the
 * frontend credential as the replicas' peer credential and counts the requests other replicas
 * forward here with `count`; otherwise this process's own tunnels, all a single frontend needs.
 */
export async function chooseLocator(
  config: PublicFrontendConfig,
  logger: Logger,
  count?: PeerStreamCounter,
): Promise<ClosableLocator> {
  if (!config.replicas) return new LocalTunnels(config.tunnel.maxTunnelsPerEnvironment);
  return startReplicaLocator(config.replicas, {
    limits: config.tunnel,
    logger,
    credential: config.controller.credential,
    ...(count ? { count } : {}),
  });
}

/**
 * The public frontend for tunnelled shares: startFrontend with the registry's public shares
 * (tunnelledShares) and the agents' tunnel and access endpoint on every non-share host
 * (`/api/v1/tunnel`, `/api/v1/tunnel/access`). Used by the installation on one VM with the
 * controller's registry in the same process, and by `svc public-frontend` with the registry read
 * from the controller's API.
 */
export async function startTunnelFrontend(options: TunnelFrontendOptions): Promise<RunningTunnelFrontend> {
  const { directory, limits, logger, traffic, presence } = options;
  const locator: ClosableLocator = options.locator ?? new LocalTunnels(limits.maxTunnelsPerEnvironment);
  const endpoint = new TunnelEndpoint({ directory, locator, limits, logger, ...(presence ? { presence } : {}) });
  let frontend: RunningFrontend;
  try {
    frontend = await startFrontend({
      listen: options.listen,
      endpointUrl: options.endpointUrl,
      domain: options.domain,
      ...(options.oauth ? { oauth: options.oauth } : {}),
      shares: tunnelledShares({ directory, locator, limits, logger, ...(traffic ? { traffic } : {}) }),
      logger,
      onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
      ...(options.metricsListen ? { metricsListen: options.metricsListen } : {}),
      ...(options.ready ? { ready: options.ready } : {}),
    });
  } catch (err) {
    endpoint.close();
    await locator.close?.();
    throw err;
  }
  return {
    frontend,
    endpoint,
    // The locator last: the replica locator deletes this replica's Leases once nothing is served here.
    close: async () => {
      endpoint.close();
      await frontend.close();
      await locator.close?.();
    },
  };
}

export interface RunningPublicFrontend extends RunningTunnelFrontend {
  readonly directory: RemoteShareDirectory;
  /** The name this replica reports under (the pod name, else `host:port`). */
  readonly replicaName: string;
  /** The bound peer listener, with a `replicas` section (`peer_listen` may say port 0). */
  readonly peerPort?: number;
}

/**
 * `svc public-frontend`: a frontend replica in its own process (Kubernetes Deployment), reading the
 * share registry from the controller (RemoteShareDirectory). `/readyz` answers 503 until the first
 * registry snapshot arrived; while the controller is unreachable it keeps serving its last view.
 */
export async function startPublicFrontend(
  config: PublicFrontendConfig,
  logger: Logger,
): Promise<RunningPublicFrontend> {
  const directory = new RemoteShareDirectory({
    controllerUrl: config.controller.url,
    credential: config.controller.credential,
    logger,
  });
  const { frontend: f } = config;
  const presence = new EnvironmentPresence();
  const tally = new TrafficTally();
  let running: RunningTunnelFrontend;
  let locator: ClosableLocator;
  try {
    locator = await chooseLocator(config, logger, peerStreamCounter(directory, tally));
    running = await startTunnelFrontend({
      directory,
      locator,
      limits: config.tunnel,
      listen: f.listen,
      endpointUrl: f.endpointUrl ?? ((port) => new URL(`http://${f.domain}:${port}`)),
      domain: f.domain,
      ...(config.oauth ? { oauth: config.oauth } : {}),
      ...(f.metricsListen ? { metricsListen: f.metricsListen } : {}),
      ready: () => ({ ok: directory.isReady, detail: directory.isReady ? 'ok' : 'no share registry snapshot yet' }),
      logger,
      presence,
      traffic: tally,
    });
  } catch (err) {
    await directory.close();
    throw err;
  }
  const replicaName = reportName(config.replicas?.podName ?? `${hostname()}:${running.frontend.port}`);
  const reporter = new ReplicaReporter({
    controllerUrl: config.controller.url,
    credential: config.controller.credential,
    replica: replicaName,
    presence,
    tally,
    ticketOf: (envZId) => directory.ticketOf(envZId),
    logger,
  });
  return {
    ...running,
    directory,
    replicaName,
    ...(locator instanceof ReplicaLocator ? { peerPort: locator.peerPort } : {}),
    close: async () => {
      await running.close();
      await reporter.close();
      await directory.close();
    },
  };
}

/** A name the controller accepts for a replica: lower case, letters, digits, `.`, `:` and `-`. */
function reportName(name: string): string {
  const cleaned = name
    .toLowerCase()
    .replace(/[^a-z0-9.:-]/g, '-')
    .replace(/^[^a-z0-9]+/, '');
  return (cleaned || 'replica').slice(0, 81);
}
