import { errorText } from '../../lib/errors.ts';
import { isConflict, isNotFound, type KubeClient } from '../../lib/kube/client.ts';
import { LEASES, resourcePath } from '../../lib/kube/resources.ts';
import type { Logger } from '../../lib/logger.ts';
import { leaseName, tunnelLease, type LeaseHolder } from './tunnel-leases.ts';

const MERGE_PATCH = 'application/merge-patch+json';

/**
 * Writes this replica's tunnel Leases. Writes for one environment run one after the other and are
 * level-based: each one looks at whether the environment is held *now* (`holds`) and makes the Lease
 * match (create or renew; delete), so an attach and a detach in quick succession end in the right
 * state whatever order the calls were queued in. A failed write is logged and redone by the next
 * renewal (every third of the lease duration).
 */
export class LeaseWriter {
  private readonly kube: KubeClient;
  private readonly holder: LeaseHolder;
  private readonly holds: (envZId: string) => boolean;
  private readonly logger: Logger;
  private readonly queues = new Map<string, Promise<void>>();
  private readonly waiting = new Map<string, Promise<void>>();
  private releasing = false;

  constructor(kube: KubeClient, holder: LeaseHolder, holds: (envZId: string) => boolean, logger: Logger) {
    this.kube = kube;
    this.holder = holder;
    this.holds = holds;
    this.logger = logger;
  }

  /** Makes the environment's Lease match whether this replica holds a tunnel of it. */
  sync(envZId: string): Promise<void> {
    // A write not yet started will read the state when it runs: one is enough, however many callers
    // asked (renewals keep coming while the API server is slow; the queue must not grow).
    const waiting = this.waiting.get(envZId);
    if (waiting) return waiting;
    const next = (this.queues.get(envZId) ?? Promise.resolve()).then(() => {
      this.waiting.delete(envZId);
      return this.write(envZId);
    });
    this.waiting.set(envZId, next);
    this.queues.set(envZId, next);
    void next.finally(() => {
      if (this.queues.get(envZId) === next) this.queues.delete(envZId);
    });
    return next;
  }

  /** Deletes a dead replica's Lease, unless it changed since it was read (renewed after all). */
  async collect(name: string, resourceVersion: string | undefined): Promise<void> {
    try {
      await this.kube.request('DELETE', resourcePath(LEASES, this.holder.namespace, name), {
        body: { preconditions: { resourceVersion } },
        signal: this.timeout(),
      });
      this.logger.info({ lease: name }, 'replica: removed the expired tunnel Lease of a gone replica');
    } catch (err) {
      if (!isNotFound(err) && !isConflict(err)) {
        this.logger.warn({ lease: name, err: errorText(err) }, 'replica: cannot remove an expired tunnel Lease');
      }
    }
  }

  /** From now on every environment counts as not held: each sync deletes (the replica is shutting down). */
  releaseAll(): void {
    this.releasing = true;
  }

  /** Waits for every queued write. */
  async settle(): Promise<void> {
    while (this.queues.size > 0) await Promise.all(this.queues.values());
  }

  private async write(envZId: string): Promise<void> {
    const { namespace, podName } = this.holder;
    const path = resourcePath(LEASES, namespace, leaseName(envZId, podName));
    try {
      if (this.releasing || !this.holds(envZId)) {
        await this.kube.request('DELETE', path, { signal: this.timeout() }).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
        return;
      }
      const lease = tunnelLease(envZId, this.holder, new Date());
      try {
        await this.kube.request('PATCH', path, { body: lease, contentType: MERGE_PATCH, signal: this.timeout() });
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await this.kube.request('POST', resourcePath(LEASES, namespace), { body: lease, signal: this.timeout() });
      }
    } catch (err) {
      this.logger.warn(
        { envZId, err: errorText(err) },
        'replica: cannot write the tunnel Lease; retrying at the next renewal',
      );
    }
  }

  private timeout(): AbortSignal {
    return AbortSignal.timeout(Math.max(1000, this.holder.durationSeconds * 1000));
  }
}
