import type { Logger } from '../lib/logger.ts';
import { Sleeper } from '../lib/sleeper.ts';
import { errorText } from '../lib/errors.ts';
import { isConflict, isNotFound, type KubeClient } from '../lib/kube/client.ts';
import { microTime, type Lease, type LeaseSpec } from '../lib/kube/lease.ts';
import { LEASES, apiVersion, resourcePath } from '../lib/kube/resources.ts';

/**
 * The lease record this candidate should write, or undefined when another holder's lease is still
 * live. Expiry is judged by `expired`, which the caller derives from its *own* clock (the time it
 * first saw the current record), never by comparing timestamps written by another machine —
 * client-go's rule, so clock skew between replicas cannot make two of them lead.
 */
export function nextLease(
  current: LeaseSpec | undefined,
  identity: string,
  now: Date,
  durationSeconds: number,
  expired: boolean,
): LeaseSpec | undefined {
  const stamp = microTime(now);
  if (current?.holderIdentity === identity) {
    return { ...current, leaseDurationSeconds: durationSeconds, renewTime: stamp };
  }
  if (current?.holderIdentity && !expired) return undefined;
  return {
    holderIdentity: identity,
    leaseDurationSeconds: durationSeconds,
    acquireTime: stamp,
    renewTime: stamp,
    leaseTransitions: current ? (current.leaseTransitions ?? 0) + (current.holderIdentity ? 1 : 0) : 0,
  };
}

/** Tracks when this replica last saw the lease record change, on its own monotonic-enough clock. */
export class LeaseObserver {
  private record = '';
  private seenAt = 0;

  observe(spec: LeaseSpec | undefined, nowMs: number): void {
    const record = JSON.stringify([spec?.holderIdentity, spec?.renewTime, spec?.leaseDurationSeconds]);
    if (record !== this.record) {
      this.record = record;
      this.seenAt = nowMs;
    }
  }

  expired(spec: LeaseSpec | undefined, nowMs: number): boolean {
    if (!spec?.holderIdentity) return true;
    return this.seenAt + (spec.leaseDurationSeconds ?? 15) * 1000 < nowMs;
  }
}

export interface LeaderElectorOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly logger: Logger;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly onStartedLeading: () => void;
  /**
   * Must stop all reconciling before it resolves (or give up at a deadline shorter than what is
   * left of the lease): another replica may lead right after. `lost`: the lease was lost (not
   * renewed in time, or taken), after which this elector does not campaign again; otherwise this
   * replica is shutting down.
   */
  readonly onStoppedLeading: (lost: boolean) => Promise<void>;
}

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go does it: candidates try every
 * retry period; the leader renews every retry period and steps down when it has not renewed within
 * the renew deadline, which is shorter than the lease duration, so it has stopped before anyone
 * else may take over. A leader that lost its lease does not campaign again: the process exits and
 * restarts clean (as controller-runtime's managers do). `stop()` releases the lease so a standby
 * takes over at once.
 */
export class LeaderElector {
  private readonly options: Required<Omit<LeaderElectorOptions, 'onStartedLeading' | 'onStoppedLeading'>> &
    Pick<LeaderElectorOptions, 'onStartedLeading' | 'onStoppedLeading'>;
  private readonly observer = new LeaseObserver();
  private leading = false;
  private lastRenewMs = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private readonly sleeper = new Sleeper();
  private lease: Lease | undefined;

  constructor(options: LeaderElectorOptions) {
    this.options = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, ...options };
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sleeper.wake();
    await this.loop;
    if (this.leading) {
      await this.stepDown('shutting down', false);
      await this.release();
    }
  }

  private get path(): string {
    return resourcePath(LEASES, this.options.namespace, this.options.name);
  }

  private async run(): Promise<void> {
    const { logger, retryPeriodMs, renewDeadlineMs } = this.options;
    while (!this.stopped) {
      let ok = false;
      try {
        ok = await this.tryAcquireOrRenew();
      } catch (err) {
        logger.warn({ lease: this.options.name }, `lease update failed: ${errorText(err)}`);
      }
      if (this.stopped) break;
      const now = Date.now();
      if (ok) {
        this.lastRenewMs = now;
        if (!this.leading) {
          this.leading = true;
          logger.info({ lease: this.options.name, identity: this.options.identity }, 'became leader');
          this.options.onStartedLeading();
        }
      } else if (this.leading && (now - this.lastRenewMs > renewDeadlineMs || this.heldByOther())) {
        await this.stepDown('lost the lease', true);
        break;
      }
      await this.sleeper.sleep(this.leading ? retryPeriodMs : retryPeriodMs * (1 + Math.random() * 0.5));
    }
  }

  private heldByOther(): boolean {
    const holder = this.lease?.spec?.holderIdentity;
    return holder !== undefined && holder !== '' && holder !== this.options.identity;
  }

  private async stepDown(why: string, lost: boolean): Promise<void> {
    this.leading = false;
    this.options.logger.warn({ lease: this.options.name, identity: this.options.identity }, `stopped leading: ${why}`);
    await this.options.onStoppedLeading(lost);
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, identity, leaseDurationMs, retryPeriodMs } = this.options;
    const signal = AbortSignal.timeout(Math.max(retryPeriodMs, 1000));
    const durationSeconds = Math.round(leaseDurationMs / 1000);
    const now = new Date();
    let lease: Lease | undefined;
    try {
      lease = (await client.request('GET', this.path, { signal })) as Lease;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.lease = lease;
    this.observer.observe(lease?.spec, now.getTime());
    const spec = nextLease(
      lease?.spec,
      identity,
      now,
      durationSeconds,
      this.observer.expired(lease?.spec, now.getTime()),
    );
    if (!spec) return false;
    const body: Lease = {
      apiVersion: apiVersion(LEASES),
      kind: LEASES.kind,
      metadata: lease ? { ...lease.metadata } : { name: this.options.name, namespace: this.options.namespace },
      spec,
    };
    try {
      const written = lease
        ? ((await client.request('PUT', this.path, { body, signal })) as Lease)
        : ((await client.request('POST', resourcePath(LEASES, this.options.namespace), { body, signal })) as Lease);
      this.lease = written;
      this.observer.observe(written.spec, Date.now());
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  /** Gives the lease up (empty holder, 1 s duration) so a standby need not wait for expiry. */
  private async release(): Promise<void> {
    const lease = this.lease;
    if (!lease || lease.spec?.holderIdentity !== this.options.identity) return;
    const stamp = microTime(new Date());
    const body: Lease = {
      ...lease,
      spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: stamp, acquireTime: stamp },
    };
    try {
      await this.options.client.request('PUT', this.path, { body, signal: AbortSignal.timeout(3000) });
    } catch (err) {
      this.options.logger.warn({ lease: this.options.name }, `lease release failed: ${errorText(err)}`);
    }
  }
}
