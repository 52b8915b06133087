import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { resolveDataDir } from '../lib/data-dir.ts';
import type { Logger } from '../lib/logger.ts';
import { closeServer, formatAddress, listen, portOf } from '../lib/listen.ts';
import { agentsLine } from '../lib/reachable-urls.ts';
import { operations } from './api.ts';
import type { AgentControllerConfig, ControllerSettings, StoreChoice } from './config.ts';
import { ControllerFileStore } from './file-store.ts';
import { StoreLiveness } from './liveness.ts';
import { FrontendApi } from './frontend-api.ts';
import { ReplicaReports } from './replica-reports.ts';
import { openApi } from './openapi.ts';
import { RemotingHub } from './remoting-hub.ts';
import { API_PREFIX, createApiServer } from './server.ts';
import type { ControllerStore } from './store.ts';
import type { ShareRegistry } from './share-registry.ts';
import { createConsole, type ConsoleOptions } from './console/console.ts';
import type { ConsoleSources } from './console/views.ts';
import { tunnelOperations, type TunnelOffer } from './tunnel-api.ts';

export interface ControllerOptions {
  readonly settings: ControllerSettings;
  readonly agentController?: AgentControllerConfig;
  /** The store; the embedded file store under `dataDir` when absent. */
  readonly store?: ControllerStore;
  readonly dataDir?: string;
  readonly logger: Logger;
  /** `/healthz` fails when the store answered nothing for this long while asked (controller/liveness.ts). */
  readonly storeStallMs?: number;
  /** The share registry and what agents are told about their tunnel, when a frontend serves tunnels. */
  readonly tunnel?: {
    readonly registry: ShareRegistry;
    readonly offer: TunnelOffer;
    /** The frontend replicas' credential: serves `/api/v1/frontend/*` (controller/frontend-api.ts). */
    readonly frontendCredential?: string;
    /** The tunnel endpoint also answers on the API listener, so agents need to reach only the API host. */
    readonly onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  };
  /** The web console under `/console` (controller/console); none without it. */
  readonly console?: ControllerConsole;
}

/** What the console needs beyond the controller's own parts. */
export interface ControllerConsole
  extends
    Pick<ConsoleOptions, 'config' | 'sealer' | 'providers'>,
    Pick<ConsoleSources, 'traffic' | 'presence' | 'replicas'> {}

export interface RunningController {
  readonly port: number;
  /** `http://<host>:<port>/api/v1`, reachable from this machine (loopback for an unspecified host). */
  readonly apiUrl: string;
  /** The banner line naming where agents on other machines reach the API (lib/reachable-urls.ts). */
  readonly agentsLine: string;
  close(): Promise<void>;
}

/**
 * Starts the controller: store → remoting hub (only with `agent_controller`) → API server on its
 * own listener. Composed by the mains of `svc controller` (serve/controller-main.ts) and `svc serve`.
 */
export async function startController(options: ControllerOptions): Promise<RunningController> {
  const { logger, settings } = options;
  const liveness = new StoreLiveness(
    options.store ?? new ControllerFileStore(options.dataDir ?? resolveDataDir()),
    options.storeStallMs,
  );
  const { store } = liveness;
  const hub = options.agentController
    ? new RemotingHub({ store, identity: options.agentController.identity, logger, timeoutMs: settings.agentTimeoutMs })
    : undefined;
  const { tunnel } = options;
  const { frontendApi, reports } = frontendParts(tunnel, logger);
  const apiOperations = operations({
    store,
    logger,
    ...(hub && options.agentController ? { remoting: { hub, identity: options.agentController.identity } } : {}),
    ...(options.tunnel ? { registry: options.tunnel.registry } : {}),
  });
  const openapi = openApi();
  const bound = { port: 0 };
  const host = settings.listen.host === '0.0.0.0' ? '127.0.0.1' : settings.listen.host;
  const webConsole = options.console
    ? consoleOf(options.console, {
        sources: {
          store,
          operations: apiOperations,
          ...(hub ? { hub } : {}),
          ...(tunnel ? { registry: tunnel.registry } : {}),
          ...(reports
            ? { traffic: reports.traffic, presence: reports, replicas: () => Promise.resolve(reports.reporting()) }
            : {}),
        },
        openapi,
        logger,
        listenHost: settings.listen.host,
        origin: () => new URL(`http://${formatAddress({ host, port: bound.port })}`),
      })
    : undefined;
  const server = createApiServer({
    store,
    logger,
    openapi,
    operations: apiOperations,
    environmentOperations: tunnelOperations(options.tunnel),
    maxBodyBytes: settings.maxBodyBytes,
    live: liveness.live,
    ...(hub ? { hub } : {}),
    ...(frontendApi ? { frontendApi } : {}),
    ...(options.tunnel?.onUpgrade ? { onUpgrade: options.tunnel.onUpgrade } : {}),
    ...(webConsole ? { console: webConsole } : {}),
  });
  await listen(server, settings.listen, 'controller');
  const port = portOf(server);
  bound.port = port;
  const apiUrl = `http://${formatAddress({ host, port })}${API_PREFIX}`;
  if (options.agentController) {
    logger.info({ zId: options.agentController.zId, apiUrl }, 'controller ready; agent remoting enabled');
  } else {
    logger.info({ apiUrl }, 'controller ready; agent remoting not configured (no agent_controller section)');
  }
  return {
    port,
    apiUrl,
    agentsLine: agentsLine(settings.listen, port, API_PREFIX),
    close: async () => {
      hub?.close();
      webConsole?.close();
      tunnel?.registry.revisions.close();
      await closeServer(server);
      await store.close();
    },
  };
}

/**
 * With the replicas' credential: the frontend API and the replicas' reports it collects (presence
 * and traffic for the console).
 */
function frontendParts(
  tunnel: ControllerOptions['tunnel'],
  logger: Logger,
): { frontendApi?: FrontendApi; reports?: ReplicaReports } {
  if (tunnel?.frontendCredential === undefined) return {};
  const { registry } = tunnel;
  const reports = new ReplicaReports({ shares: (token) => registry.lookup(token) });
  return {
    reports,
    frontendApi: new FrontendApi({ registry, credential: tunnel.frontendCredential, logger, reports }),
  };
}

/** The console over the controller's parts; its origin is `console.public_url` when set. */
function consoleOf(
  given: ControllerConsole,
  parts: Pick<ConsoleOptions, 'openapi' | 'logger' | 'listenHost' | 'origin'> & { sources: ConsoleSources },
) {
  const { publicUrl } = given.config;
  return createConsole({
    ...parts,
    config: given.config,
    sealer: given.sealer,
    ...(given.providers ? { providers: given.providers } : {}),
    sources: {
      ...parts.sources,
      ...(given.traffic ? { traffic: given.traffic } : {}),
      ...(given.presence ? { presence: given.presence } : {}),
      ...(given.replicas ? { replicas: given.replicas } : {}),
    },
    origin: publicUrl ? () => publicUrl : parts.origin,
  });
}

/**
 * The store a validated `--store` names (`svc controller`, `svc admin create account`); undefined =
 * the embedded file store under the data directory.
 */
export async function openStore(choice: StoreChoice): Promise<ControllerStore | undefined> {
  if (choice.kind === 'file') return undefined;
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { KubeControllerStore } = await import('./kube-store.ts');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return KubeControllerStore.create(kc, choice.namespace);
}
