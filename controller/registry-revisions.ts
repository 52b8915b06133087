import { randomBytes } from 'node:crypto';
import type { RevokedEnvironment } from '../lib/tunnel/frontend-api.ts';

/** How long a revoked environment stays listed for frontends that missed the revision. */
export const REVOKED_RETENTION_MS = 60 * 60_000;
/** At most this many revocations are listed; the oldest go first. */
const MAX_REVOKED = 10_000;

/**
 * The share registry's revision and the frontends waiting for it to change (the long poll of
 * `GET /api/v1/frontend/registry`). A revision is `<run>.<counter>`: the run id changes with every
 * controller start, so a frontend can tell a restarted registry from an unchanged one. Revoked
 * environments are remembered with the revision that revoked them for {@link REVOKED_RETENTION_MS},
 * so a frontend that missed revisions still learns it must close their tunnels.
 */
export class RegistryRevisions {
  private readonly run = randomBytes(6).toString('hex');
  private counter = 0;
  private readonly waiters = new Set<() => void>();
  private revokedList: RevokedEnvironment[] = [];
  /** The revision from which `revokedList` is complete (older entries expired). */
  private completeSince: string;
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
    this.completeSince = this.current;
  }

  get current(): string {
    return `${this.run}.${this.counter}`;
  }

  /** A new revision; every waiting poll answers. */
  bump(): void {
    this.counter++;
    for (const wake of [...this.waiters]) wake();
  }

  /** Records a revoked environment at a new revision. */
  revoke(envZId: string): void {
    this.bump();
    this.revokedList.push({ envZId, revision: this.current, revokedAt: new Date(this.now()).toISOString() });
  }

  /** The revocations still kept, and the revision from which they are complete. */
  revoked(): { revoked: RevokedEnvironment[]; revokedSince: string } {
    const horizon = this.now() - REVOKED_RETENTION_MS;
    const keep = this.revokedList.filter((r) => Date.parse(r.revokedAt) >= horizon).slice(-MAX_REVOKED);
    if (keep.length !== this.revokedList.length) {
      const dropped = this.revokedList[this.revokedList.length - keep.length - 1];
      if (dropped) this.completeSince = dropped.revision;
      this.revokedList = keep;
    }
    return { revoked: [...this.revokedList], revokedSince: this.completeSince };
  }

  /**
   * Resolves when the revision differs from `after` (at once when it already does), or after
   * `timeoutMs`, or when `signal` aborts (the client went away).
   */
  changed(after: string | undefined, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (after === undefined || after !== this.current || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
      signal?.addEventListener('abort', done);
    });
  }

  /** Answers every waiting poll (shutdown). */
  close(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
