import type { Clock } from './clock.ts';

/** Entries an {@link ExpiringIds} keeps at most unless told otherwise (about 15 MB of short ids). */
export const DEFAULT_MAX_IDS = 100_000;

/**
 * A set of ids that each expire, for replay guards and revocation lists that anyone may grow (a
 * login state is minted for anonymous visitors). Adding is amortised O(1): expired entries are swept
 * when the set has doubled since the last sweep, not on every add, so a flood of adds never costs a
 * scan each. Past `maxEntries` the oldest entry is dropped: memory stays bounded whatever the rate,
 * and what is lost is the guard on the oldest id, not the service.
 */
export class ExpiringIds {
  private readonly until = new Map<string, number>();
  private readonly clock: Clock;
  private readonly maxEntries: number;
  private sweepAt = 1024;

  constructor(clock: Clock, maxEntries = DEFAULT_MAX_IDS) {
    this.clock = clock;
    this.maxEntries = maxEntries;
  }

  /** Entries held, expired ones not yet swept included. */
  get size(): number {
    return this.until.size;
  }

  /** Adds `id` until `until`; false when it is already there and not expired (a replay). */
  add(id: string, until: number): boolean {
    if (this.get(id) !== undefined) return false;
    this.until.delete(id);
    if (this.until.size >= this.sweepAt) this.sweep();
    if (this.until.size >= this.maxEntries) this.dropOldest();
    this.until.set(id, until);
    return true;
  }

  /** Until when `id` is held, or undefined when it is not (or has expired). */
  get(id: string): number | undefined {
    const end = this.until.get(id);
    return end !== undefined && end > this.clock.now() ? end : undefined;
  }

  /** The entries still valid, as [id, until]. */
  *entries(): IterableIterator<[string, number]> {
    const now = this.clock.now();
    for (const entry of this.until) if (entry[1] > now) yield entry;
  }

  private sweep(): void {
    const now = this.clock.now();
    for (const [id, end] of this.until) if (end <= now) this.until.delete(id);
    this.sweepAt = Math.max(1024, this.until.size * 2);
  }

  private dropOldest(): void {
    const oldest = this.until.keys().next();
    if (!oldest.done) this.until.delete(oldest.value);
  }
}
