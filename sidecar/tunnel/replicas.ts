import { KubeClient } from '../../lib/kube/client.ts';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { SvcError } from '../../lib/errors.ts';
import { formatAddress } from '../../lib/listen.ts';
import type { Logger } from '../../lib/logger.ts';
import type { TunnelLimits } from '../../lib/tunnel/protocol.ts';
import type { StreamTarget } from '../../lib/tunnel/stream-target.ts';
import { LeaseView } from './lease-view.ts';
import { LeaseWriter } from './lease-writer.ts';
import { LocalTunnels, type HeldTunnel, type TunnelLocator } from './locator.ts';
import { PeerSessions } from './peer-client.ts';
import { MIN_FRONTEND_CREDENTIAL_LENGTH as MIN_CREDENTIAL_LENGTH } from '../../lib/tunnel/frontend-api.ts';
import { startPeerServer, type PeerServer } from './peer-server.ts';
import type { PeerStreamCounter } from './peer-traffic.ts';
import type { ReplicaSettings } from './replica-settings.ts';

export type { ReplicaSettings } from './replica-settings.ts';

export interface ReplicaDeps {
  readonly limits: TunnelLimits;
  readonly logger: Logger;
  /** Shared by every replica; proves a peer stream comes from one of them. At least 32 characters. */
  readonly credential: string;
  /**
   * The API client; by default `KubeConfig.loadFromDefault`: $KUBECONFIG, else ~/.kube/config, else
   * the pod's service account (in-cluster).
   */
  readonly kube?: KubeClient;
  /** Judges Lease expiry; the system clock unless a test moves time. */
  readonly clock?: Clock;
  /** Counts the requests other replicas forward here (peer-traffic.ts); none are counted without it. */
  readonly count?: PeerStreamCounter;
}

/**
 * The tunnel locator of a frontend that runs as several replicas in Kubernetes (docs/design.md,
 * "More than one frontend replica"). Tunnels of this replica are held by a `LocalTunnels`; each
 * environment it holds is announced by a Lease naming this pod's peer address, renewed every third
 * of the lease duration and deleted on the last detach. `find` answers the local tunnel first, else
 * a live Lease of another replica: a StreamTarget over an HTTP/2 session to that replica, which
 * forwards the stream into its own tunnel (peer-server.ts).
 */
export class ReplicaLocator implements TunnelLocator {
  private readonly local: LocalTunnels;
  private readonly view: LeaseView;
  private readonly writer: LeaseWriter;
  private readonly peers: PeerSessions;
  private readonly server: PeerServer;
  private readonly podName: string;
  private readonly clock: Clock;
  private readonly ownedKube: KubeClient | undefined;
  private readonly timer: NodeJS.Timeout;
  private closing = false;

  /** Use {@link startReplicaLocator}. */
  constructor(parts: {
    local: LocalTunnels;
    view: LeaseView;
    writer: LeaseWriter;
    peers: PeerSessions;
    server: PeerServer;
    podName: string;
    clock: Clock;
    renewEveryMs: number;
    ownedKube: KubeClient | undefined;
  }) {
    this.local = parts.local;
    this.view = parts.view;
    this.writer = parts.writer;
    this.peers = parts.peers;
    this.server = parts.server;
    this.podName = parts.podName;
    this.clock = parts.clock;
    this.ownedKube = parts.ownedKube;
    this.timer = setInterval(() => this.renew(), parts.renewEveryMs);
    this.timer.unref();
  }

  /** The port other replicas forward streams to (bound; `peer_listen` may say 0). */
  get peerPort(): number {
    return this.server.port;
  }

  attach(envZId: string, tunnel: HeldTunnel): boolean {
    if (!this.local.attach(envZId, tunnel)) return false;
    void this.writer.sync(envZId);
    return true;
  }

  detach(envZId: string, tunnel: HeldTunnel): void {
    this.local.detach(envZId, tunnel);
    if (!this.local.find(envZId)) void this.writer.sync(envZId);
  }

  find(envZId: string): StreamTarget | undefined {
    const here = this.local.find(envZId);
    if (here) return here;
    const now = this.clock.now();
    let best: { peer: string; renewedAt: number } | undefined;
    for (const location of this.view.locations(envZId)) {
      if (location.holder === this.podName || location.expiresAt <= now) continue;
      if (!best || location.renewedAt > best.renewedAt) best = location;
    }
    return best ? this.peers.target(best.peer, envZId) : undefined;
  }

  closeEnvironment(envZId: string, code: number, reason: string): void {
    this.local.closeEnvironment(envZId, code, reason);
    void this.writer.sync(envZId);
  }

  connected(): string[] {
    return this.local.connected();
  }

  /**
   * Stops renewing, deletes this replica's Leases (other replicas stop routing here at once rather
   * than when they expire), then closes the peer listener and sessions.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.timer);
    this.writer.releaseAll();
    await this.writer.settle();
    const mine = new Set(this.local.connected());
    for (const { location } of this.view.all()) if (location.holder === this.podName) mine.add(location.envZId);
    await Promise.all([...mine].map((envZId) => this.writer.sync(envZId)));
    await this.view.stop();
    await this.server.close();
    this.peers.close();
    this.ownedKube?.close();
  }

  /**
   * Every third of the lease duration: renew the Leases of the environments held here, delete ours
   * that no longer match (a write that failed, a restarted pod with the same name), collect Leases
   * expired for more than twice their duration (a replica that died without cleaning up), and close
   * sessions to peers no live Lease names.
   */
  private renew(): void {
    for (const envZId of this.local.connected()) void this.writer.sync(envZId);
    const now = this.clock.now();
    const live = new Set<string>();
    for (const { name, resourceVersion, location } of this.view.all()) {
      const duration = location.expiresAt - location.renewedAt;
      if (location.holder === this.podName) {
        if (!this.local.find(location.envZId)) void this.writer.sync(location.envZId);
      } else if (location.expiresAt > now) {
        live.add(location.peer);
      } else if (now > location.expiresAt + 2 * duration) {
        void this.writer.collect(name, resourceVersion);
      }
    }
    this.peers.retain(live);
  }
}

/**
 * Starts the Kubernetes tunnel locator: the peer listener on `settings.peerListen`, the watch of the
 * namespace's tunnel Leases, and the renewal timer.
 */
export async function startReplicaLocator(settings: ReplicaSettings, deps: ReplicaDeps): Promise<ReplicaLocator> {
  const { limits, logger, credential } = deps;
  if (credential.length < MIN_CREDENTIAL_LENGTH) {
    throw new SvcError(
      'invalid_config',
      `the replicas' shared credential must be at least ${MIN_CREDENTIAL_LENGTH} characters`,
      { status: 400 },
    );
  }
  const ownedKube = deps.kube ? undefined : await defaultKubeClient();
  const kube = deps.kube ?? ownedKube;
  if (!kube) throw new SvcError('kube_config', 'no Kubernetes API client for the tunnel Leases', { status: 500 });
  const local = new LocalTunnels(limits.maxTunnelsPerEnvironment);
  const server = await startPeerServer({
    listen: settings.peerListen,
    credential,
    local: (envZId) => local.find(envZId),
    limits,
    logger,
    ...(deps.count ? { count: deps.count } : {}),
  });
  const holder = {
    namespace: settings.namespace,
    podName: settings.podName,
    peer: formatAddress({ host: settings.podIp, port: server.port }),
    durationSeconds: Math.max(1, Math.round(settings.leaseDurationMs / 1000)),
  };
  const writer = new LeaseWriter(kube, holder, (envZId) => local.find(envZId) !== undefined, logger);
  const view = new LeaseView(kube, settings.namespace, logger);
  await view.start();
  const locator = new ReplicaLocator({
    local,
    view,
    writer,
    peers: new PeerSessions(limits, credential, logger),
    server,
    podName: settings.podName,
    clock: deps.clock ?? systemClock,
    renewEveryMs: Math.max(200, Math.floor(settings.leaseDurationMs / 3)),
    ownedKube,
  });
  logger.info(
    { namespace: settings.namespace, pod: settings.podName, peer: holder.peer },
    'replica: tunnel Leases watched; peer listener up',
  );
  return locator;
}

async function defaultKubeClient(): Promise<KubeClient> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return KubeClient.create(kc);
}
