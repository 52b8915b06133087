/**
 * One replica of the frontend that serves tunnelled shares, as the replica tests run it: the share
 * registry of a controller data directory (read through the file store), the tunnel endpoint, and a
 * ReplicaLocator writing Leases to a real API server. Imported by the test for a replica it stops
 * cleanly; run as a script (`node test/k8s/replica-frontend.ts '<json options>'`) for the replica the
 * test kills with SIGKILL, where it prints `ready {"port":…,"peerPort":…}`.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { ShareRegistry } from '../../controller/share-registry.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { createLogger } from '../../lib/logger.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../../lib/tunnel/protocol.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import { startReplicaLocator, type ReplicaLocator } from '../../sidecar/tunnel/replicas.ts';
import { tunnelledShares } from '../../sidecar/tunnel/routes.ts';

export interface ReplicaOptions {
  readonly dataDir: string;
  readonly kubeconfigPath: string;
  readonly namespace: string;
  readonly podName: string;
  readonly credential: string;
  readonly leaseDurationMs: number;
  readonly domain: string;
}

export interface RunningReplica {
  readonly port: number;
  readonly peerPort: number;
  readonly locator: ReplicaLocator;
  close(): Promise<void>;
}

export async function startReplicaFrontend(
  options: ReplicaOptions,
  destination: NodeJS.WritableStream = process.stderr,
): Promise<RunningReplica> {
  const logger = createLogger(`frontend-${options.podName}`, { destination });
  const limits = DEFAULT_TUNNEL_LIMITS;
  const directory = await ShareRegistry.open(new ControllerFileStore(options.dataDir), [], logger);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(options.kubeconfigPath);
  const kube = await KubeClient.create(kubeConfig);
  const locator = await startReplicaLocator(
    {
      namespace: options.namespace,
      podName: options.podName,
      podIp: '127.0.0.1',
      peerListen: { host: '127.0.0.1', port: 0 },
      leaseDurationMs: options.leaseDurationMs,
    },
    { limits, logger, credential: options.credential, kube },
  );
  const endpoint = new TunnelEndpoint({ directory, locator, limits, logger });
  const frontend: RunningFrontend = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`http://${options.domain}:${port}`),
    domain: options.domain,
    shares: tunnelledShares({ directory, locator, limits, logger }),
    logger,
    onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
  });
  return {
    port: frontend.port,
    peerPort: locator.peerPort,
    locator,
    close: async () => {
      endpoint.close();
      await frontend.close();
      await locator.close();
      kube.close();
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const options = JSON.parse(process.argv[2] ?? '{}') as ReplicaOptions;
  const replica = await startReplicaFrontend(options);
  process.stdout.write(`ready ${JSON.stringify({ port: replica.port, peerPort: replica.peerPort })}\n`);
}
