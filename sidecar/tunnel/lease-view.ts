import { Informer, apiSource } from '../../lib/kube/informer.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import type { Lease } from '../../lib/kube/lease.ts';
import { LEASES, objectKey, resourcePath } from '../../lib/kube/resources.ts';
import type { Logger } from '../../lib/logger.ts';
import { ENV_LABEL, locationOf, type TunnelLocation } from './tunnel-leases.ts';

/** How long `start` waits for the first list before answering from an empty view. */
const SYNC_WAIT_MS = 10_000;

/**
 * Every replica's tunnel Leases of the namespace, kept in memory by a watch (label selector
 * `svc.dev/tunnel-env`) and indexed by environment, because the frontend asks on every request and
 * cannot wait for the API server. The informer relists on `410 Gone` and backs off on errors; while
 * the API server is away the view keeps its last state, and Leases simply run out on their own.
 */
export class LeaseView {
  private readonly informer: Informer<Lease>;
  private readonly byEnvironment = new Map<string, Map<string, TunnelLocation>>();
  private readonly environmentOf = new Map<string, string>();

  constructor(kube: KubeClient, namespace: string, logger: Logger) {
    this.informer = new Informer<Lease>({
      name: 'tunnel-leases',
      source: apiSource(kube, resourcePath(LEASES, namespace)),
      logger,
      labelSelector: ENV_LABEL,
      backoff: { baseMs: 500, maxMs: 15_000 },
    });
    this.informer.on({
      onAdd: (lease) => this.put(lease),
      onUpdate: (old, lease) => {
        this.remove(old);
        this.put(lease);
      },
      onDelete: (lease) => this.remove(lease),
    });
  }

  /** Starts the watch; resolves once the first list is in (or after a bounded wait, so start-up never hangs). */
  async start(): Promise<void> {
    this.informer.start();
    for (let waited = 0; !this.informer.hasSynced && waited < SYNC_WAIT_MS; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** The locations of an environment's tunnels, live or not. */
  locations(envZId: string): Iterable<TunnelLocation> {
    return this.byEnvironment.get(envZId)?.values() ?? [];
  }

  /** Every tunnel Lease with the object's name and resourceVersion (for garbage collection). */
  all(): { name: string; resourceVersion: string | undefined; location: TunnelLocation }[] {
    return this.informer.list().flatMap((lease) => {
      const location = locationOf(lease);
      return location ? [{ name: lease.metadata.name, resourceVersion: lease.metadata.resourceVersion, location }] : [];
    });
  }

  private put(lease: Lease): void {
    const location = locationOf(lease);
    if (!location) return;
    const held = this.byEnvironment.get(location.envZId) ?? new Map<string, TunnelLocation>();
    held.set(objectKey(lease), location);
    this.byEnvironment.set(location.envZId, held);
    this.environmentOf.set(objectKey(lease), location.envZId);
  }

  private remove(lease: Lease): void {
    const key = objectKey(lease);
    const envZId = this.environmentOf.get(key);
    if (envZId === undefined) return;
    this.environmentOf.delete(key);
    const held = this.byEnvironment.get(envZId);
    if (held?.delete(key) && held.size === 0) this.byEnvironment.delete(envZId);
  }
}
