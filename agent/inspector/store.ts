import type { CaptureBudget, RecordedExchange } from './record.ts';

/** The inspector's memory bound (serve config `ui.inspector`, docs/agent.md). */
export interface InspectorLimits {
  /** Requests kept per share; the oldest goes first. */
  readonly requests: number;
  /** Bytes of each request or response body kept (the rest is counted, not kept). */
  readonly bodyBytes: number;
  /**
   * Bytes all shares' records may hold together; the oldest record of any share goes first. Bodies
   * of recordings still in progress draw on a second budget of the same size, so many slow
   * visitors hold at most this much more (a body past it is kept only as far as it got).
   */
  readonly memoryBytes: number;
}

export const DEFAULT_INSPECTOR_LIMITS: InspectorLimits = {
  requests: 100,
  bodyBytes: 16 * 1024,
  memoryBytes: 8 * 1024 * 1024,
};

/** Fixed cost counted per record besides its headers and bodies (object, strings' headers). */
const RECORD_OVERHEAD = 256;

/**
 * The recorded requests of every share, bounded by count per share and by bytes in all: adding a
 * record drops the share's oldest past `requests`, then the oldest records of any share until the
 * total is within `memoryBytes`. Listeners hear of each new record (the page's live stream).
 */
export class InspectorStore implements CaptureBudget {
  readonly limits: InspectorLimits;
  private inFlight = 0;
  private readonly byShare = new Map<string, RecordedExchange[]>();
  /** Every record in arrival order, for eviction across shares. */
  private order: RecordedExchange[] = [];
  private dropped = 0;
  private total = 0;
  private nextId = 1;
  private readonly listeners = new Set<(record: RecordedExchange) => void>();

  constructor(limits: InspectorLimits = DEFAULT_INSPECTOR_LIMITS) {
    this.limits = limits;
  }

  /** A fresh record id. */
  newId(): number {
    return this.nextId++;
  }

  reserve(wanted: number): number {
    const granted = Math.max(0, Math.min(wanted, this.limits.memoryBytes - this.inFlight));
    this.inFlight += granted;
    return granted;
  }

  release(bytes: number): void {
    this.inFlight = Math.max(0, this.inFlight - bytes);
  }

  /** Body bytes held by recordings in progress (never above `memoryBytes`). */
  get bytesInFlight(): number {
    return this.inFlight;
  }

  /** Bytes held now (never above `memoryBytes` after an add). */
  get bytes(): number {
    return this.total;
  }

  /** Keeps a finished record and tells the listeners. */
  add(record: RecordedExchange): void {
    record.bytes = sizeOf(record);
    if (record.bytes > this.limits.memoryBytes) return;
    let list = this.byShare.get(record.share);
    if (!list) this.byShare.set(record.share, (list = []));
    list.push(record);
    this.order.push(record);
    this.total += record.bytes;
    while (list.length > this.limits.requests) this.evict(list.shift() as RecordedExchange);
    while (this.total > this.limits.memoryBytes) this.evictOldest();
    this.compact();
    for (const listener of this.listeners) listener(record);
  }

  /** A share's records, newest first. */
  list(share: string): readonly RecordedExchange[] {
    return [...(this.byShare.get(share) ?? [])].reverse();
  }

  get(share: string, id: number): RecordedExchange | undefined {
    return this.byShare.get(share)?.find((r) => r.id === id);
  }

  /** Forgets a share's records (the share was stopped). */
  forget(share: string): void {
    for (const r of this.byShare.get(share) ?? []) this.evict(r);
    this.byShare.delete(share);
    this.compact();
  }

  /** Calls `listener` with every record added from now on; returns the unsubscribe function. */
  subscribe(listener: (record: RecordedExchange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private evict(record: RecordedExchange): void {
    if (record.bytes < 0) return;
    this.total -= record.bytes;
    record.bytes = -1;
    this.dropped++;
  }

  private evictOldest(): void {
    for (const oldest of this.order) {
      if (oldest.bytes < 0) continue;
      const list = this.byShare.get(oldest.share);
      list?.splice(list.indexOf(oldest), 1);
      this.evict(oldest);
      return;
    }
  }

  /** Drops evicted records from the arrival list once they are half of it. */
  private compact(): void {
    if (this.dropped * 2 < this.order.length) return;
    this.order = this.order.filter((r) => r.bytes >= 0);
    this.dropped = 0;
  }
}

function sizeOf(r: RecordedExchange): number {
  let n = RECORD_OVERHEAD + r.path.length + r.requestBody.kept.length + r.responseBody.kept.length;
  for (const [name, value] of r.requestHeaders) n += name.length + value.length;
  for (const [name, value] of r.responseHeaders) n += name.length + value.length;
  return n;
}
