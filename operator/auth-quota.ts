import { objectKey, type Share } from '../lib/kube/resources.ts';
import { findCondition } from './conditions.ts';
import { entryBytes } from './auth-shards.ts';
import type { Installation } from './frontend-secret.ts';
import type { ValidShare } from './share-children.ts';
import type { ShareMemo } from './share-memo.ts';
import type { Change, WatchSource } from './watches.ts';

/**
 * The default share of the auth endpoint's share list one namespace's OAuth shares may take: 512
 * KiB of the 16 MiB the 16 shard Secrets hold, so 32 namespaces at their quota fill the list. About
 * 2,000 shares with one email pattern, or 25 with 64 patterns of 320 characters.
 */
export const DEFAULT_AUTH_SHARE_QUOTA_BYTES = 512 * 1024;
/** The least quota: one share with the most email patterns the CRD allows fits (about 21 KB). */
export const MIN_AUTH_SHARE_QUOTA_BYTES = 32 * 1024;

/** Why a Share is left out of the auth endpoint's share list: its namespace's quota is used up. */
export interface OverQuota {
  readonly namespace: string;
  /** Its entry's bytes. */
  readonly bytes: number;
  /** The bytes of its namespace's older shares within the quota. */
  readonly used: number;
  readonly quota: number;
}

/** Oldest first (creation time), then by namespace and name: one order for every reader. */
export function olderFirst(a: Share, b: Share): number {
  const byTime = (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '');
  return byTime !== 0 ? byTime : objectKey(a).localeCompare(objectKey(b));
}

/**
 * The shares of `shares` (valid OAuth shares, oldest first) within their namespace's quota: each
 * namespace's shares are counted oldest first, and one whose entry would take the namespace past
 * `quotaBytes` is left out (a smaller newer one may still fit). Only a namespace's own shares count
 * against its quota, so no namespace can make another's shares go over.
 */
export function applyQuota(
  shares: readonly ValidShare[],
  quotaBytes: number,
): { admitted: ValidShare[]; over: Map<string, OverQuota> } {
  const used = new Map<string, number>();
  const admitted: ValidShare[] = [];
  const over = new Map<string, OverQuota>();
  for (const share of shares) {
    const bytes = entryBytes(share);
    const before = used.get(share.namespace) ?? 0;
    if (before + bytes > quotaBytes) {
      over.set(`${share.namespace}/${share.name}`, {
        namespace: share.namespace,
        bytes,
        used: before,
        quota: quotaBytes,
      });
      continue;
    }
    used.set(share.namespace, before + bytes);
    admitted.push(share);
  }
  return { admitted, over };
}

/** The Ready=False message of a Share over its namespace's quota. */
export function overQuotaMessage(o: OverQuota): string {
  return (
    `the OAuth shares of namespace ${o.namespace} would take more than their quota of ${o.quota} bytes of the ` +
    `auth endpoint's share list (older ones take ${o.used} bytes, this one ${o.bytes}), so logins to it ` +
    `cannot complete: delete older OAuth shares of this namespace or shorten their email patterns ` +
    `(the quota is the chart's operator.authShareQuotaBytes)`
  );
}

/**
 * The quota check of one Share, for the Share reconciler: the OAuth Shares by namespace, kept up to
 * date from the Share cache's events, validated through the memo the auth-config reconciler shares,
 * so both decide from the same {@link applyQuota}.
 */
export class AuthQuota {
  private readonly byNamespace = new Map<string, Map<string, Share>>();
  private readonly memo: ShareMemo;
  readonly quotaBytes: number;

  /** Register before the reconciler's own watches: its reconciles then see the index updated. */
  constructor(shares: WatchSource<Share>, memo: ShareMemo, quotaBytes = DEFAULT_AUTH_SHARE_QUOTA_BYTES) {
    this.memo = memo;
    this.quotaBytes = quotaBytes;
    shares.on({
      onAdd: (share) => this.set(share),
      onUpdate: (_old, share) => this.set(share),
      onDelete: (share) => this.byNamespace.get(share.metadata.namespace ?? '')?.delete(objectKey(share)),
    });
    for (const share of shares.list()) this.set(share);
  }

  /** Whether `share` (an OAuth Share) is over its namespace's quota, and by how much. */
  check(share: Share, installation: Installation | undefined): OverQuota | undefined {
    const valid = this.ordered(share.metadata.namespace ?? '').flatMap((s) => {
      const v = this.memo.validate(s, installation);
      return v.ok ? [v.value] : [];
    });
    return applyQuota(valid, this.quotaBytes).over.get(objectKey(share));
  }

  /**
   * The other OAuth Shares of the namespace whose verdict a change may turn: on a new, deleted or
   * respecified OAuth Share, the newer ones (they may go over) and those now over (they may fit).
   */
  affected(change: Change<Share>): string[] {
    const { object } = change;
    if (change.type === 'updated' && change.old.metadata.generation === object.metadata.generation) return [];
    if (!object.spec?.oauth && !(change.type === 'updated' && change.old.spec?.oauth)) return [];
    const self = objectKey(object);
    return this.ordered(object.metadata.namespace ?? '')
      .filter((s) => objectKey(s) !== self)
      .filter(
        (s) =>
          olderFirst(object, s) < 0 || findCondition(s.status?.conditions, 'Ready')?.reason === 'AuthQuotaExceeded',
      )
      .map(objectKey);
  }

  private ordered(namespace: string): Share[] {
    const shares = [...(this.byNamespace.get(namespace)?.values() ?? [])];
    return shares.filter((s) => !s.metadata.deletionTimestamp).sort(olderFirst);
  }

  private set(share: Share): void {
    const namespace = share.metadata.namespace ?? '';
    let shares = this.byNamespace.get(namespace);
    if (!shares) this.byNamespace.set(namespace, (shares = new Map<string, Share>()));
    if (share.spec?.oauth) shares.set(objectKey(share), share);
    else shares.delete(objectKey(share));
  }
}
