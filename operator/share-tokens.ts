import { objectKey, type Share } from '../lib/kube/resources.ts';
import type { WatchSource } from './watches.ts';

/** The token a Share holds or asks for: the spec's, else the one its status already reports. */
function tokenOf(share: Share): string | undefined {
  return share.spec?.token ?? share.status?.token;
}

/**
 * The Shares by token, kept up to date from the Share cache's events. Every reconcile asks which
 * other Share holds its token; scanning the whole cache for that made reconciling N Shares O(N²).
 */
export class ShareTokens {
  private readonly byToken = new Map<string, Map<string, Share>>();
  private readonly tokenByKey = new Map<string, string>();

  /** Register before the reconciler's own watches: its reconciles then see the index updated. */
  constructor(shares: WatchSource<Share>) {
    shares.on({
      onAdd: (share) => this.set(share),
      onUpdate: (_old, share) => this.set(share),
      onDelete: (share) => this.remove(objectKey(share)),
    });
    for (const share of shares.list()) this.set(share);
  }

  /** Every cached Share with this token. */
  sharing(token: string): Share[] {
    return [...(this.byToken.get(token)?.values() ?? [])];
  }

  private set(share: Share): void {
    const key = objectKey(share);
    this.remove(key);
    const token = tokenOf(share);
    if (!token) return;
    let holders = this.byToken.get(token);
    if (!holders) this.byToken.set(token, (holders = new Map<string, Share>()));
    holders.set(key, share);
    this.tokenByKey.set(key, token);
  }

  private remove(key: string): void {
    const token = this.tokenByKey.get(key);
    if (token === undefined) return;
    this.tokenByKey.delete(key);
    const holders = this.byToken.get(token);
    holders?.delete(key);
    if (holders?.size === 0) this.byToken.delete(token);
  }
}
