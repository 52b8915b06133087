import { createHash, createHmac } from 'node:crypto';
import { childName, shareEntry, type ValidShare } from './share-children.ts';

/**
 * The auth endpoint's shares are spread over this many Secrets `<auth secret>-shares-NN`, so the
 * installation holds 16 times what one Secret (at most 1 MiB) can (docs/kubernetes.md, "The OAuth
 * endpoint host"). Changing it moves most shares to another Secret: it is part of the chart's
 * mounts (charts/svc/templates/auth.yaml lists every shard).
 */
export const AUTH_SHARDS = 16;
/** The key of a shard Secret, one list of shares in the frontend config's `shares:` format. */
export const SHARD_KEY = 'shares.yaml';
/** The most data the API server stores in one Secret (the sum of its values). */
export const MAX_SECRET_BYTES = 1024 * 1024;
/**
 * The auth endpoint's `share_directory`, relative to its config file: the chart mounts the config
 * Secret at /etc/svc/frontend and the shards at /etc/svc/auth-shares.
 */
export const AUTH_SHARE_DIRECTORY = '../auth-shares';

/**
 * The key of the shard choice, derived from the installation's `signing_key`: a tenant cannot
 * compute which shard a Share name lands in, so it cannot aim its Shares at the shard of another
 * namespace's. Rotating the signing key moves shares between shards once (every shard rewritten).
 */
export function shardKey(signingKey: string): Buffer {
  return createHash('sha256').update(`svc auth shards\n${signingKey}`).digest();
}

/** The shard of a Share: the first 4 bytes of HMAC-SHA256(key, "<namespace>/<name>"), modulo {@link AUTH_SHARDS}. */
export function shardOf(namespace: string, name: string, key: Buffer): number {
  return createHmac('sha256', key).update(`${namespace}/${name}`).digest().readUInt32BE(0) % AUTH_SHARDS;
}

/** `<auth secret>-shares-NN`, NN two digits from 00. */
export function shardSecretName(authSecret: string, shard: number): string {
  return `${authSecret}-shares-${String(shard).padStart(2, '0')}`;
}

/** A share's line in its shard: its entry targeting the share's in-cluster Service. */
function entryLine(share: ValidShare): string {
  return JSON.stringify(shareEntry(share, `http://${childName(share.name)}.${share.namespace}.svc:80`));
}

const lineBytes = new WeakMap<ValidShare, number>();

/**
 * What a share takes of the auth endpoint's share list: its line and separator (",\n"), an upper
 * bound that is exact once a shard has two entries. Remembered per validated share (the Share
 * memo hands out the same object while the spec is unchanged).
 */
export function entryBytes(share: ValidShare): number {
  let bytes = lineBytes.get(share);
  if (bytes === undefined) lineBytes.set(share, (bytes = Buffer.byteLength(entryLine(share)) + 2));
  return bytes;
}

/** What goes into one shard Secret, and the shares that did not fit. */
export interface Shard {
  /** The `shares.yaml` text: a JSON list (YAML too), one entry a line, ordered by token. */
  readonly text: string;
  readonly count: number;
  /** Shares of this shard left out because the Secret would pass the limit. */
  readonly dropped: readonly ValidShare[];
}

/**
 * The shard contents for `shares` (valid OAuth shares, oldest first, each within its namespace's
 * quota: operator/auth-quota.ts). Each entry targets the share's in-cluster Service. When a shard
 * would pass `limitBytes`, the namespace taking the most of the whole list loses its newest share
 * in that shard first, and so on until the shard fits: no namespace's shares push out those of a
 * namespace that uses less. JSON because the frontend parses a JSON list without its YAML parser,
 * which at thousands of entries is the difference between milliseconds and seconds.
 */
export function renderShards(shares: readonly ValidShare[], key: Buffer, limitBytes = MAX_SECRET_BYTES): Shard[] {
  const members: ValidShare[][] = Array.from({ length: AUTH_SHARDS }, () => []);
  const usage = new Map<string, number>();
  for (const share of shares) {
    members[shardOf(share.namespace, share.name, key)]?.push(share);
    usage.set(share.namespace, (usage.get(share.namespace) ?? 0) + entryBytes(share));
  }
  return members.map((entries) => {
    const dropped = fitShard(entries, usage, limitBytes);
    const kept = entries.filter((s) => !dropped.has(s)).map((s) => ({ token: s.token, line: entryLine(s) }));
    kept.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
    const text = kept.length === 0 ? '[]\n' : `[\n${kept.map((e) => e.line).join(',\n')}\n]\n`;
    return { text, count: kept.length, dropped: [...dropped] };
  });
}

/**
 * The shares to leave out of one shard (`entries` oldest first) so it fits `limitBytes`: the
 * newest share of the namespace with the most bytes in the whole list (`usage`, lowered by each
 * share left out) goes first; between namespaces using the same, the one with the newer share.
 */
function fitShard(entries: readonly ValidShare[], usage: Map<string, number>, limitBytes: number): Set<ValidShare> {
  const dropped = new Set<ValidShare>();
  let size = entries.reduce((n, s) => n + entryBytes(s), EMPTY_BYTES);
  if (size <= limitBytes) return dropped;
  // Per namespace, its shares in this shard, oldest first; the position breaks ties (newer loses).
  const byNamespace = new Map<string, { share: ValidShare; at: number }[]>();
  entries.forEach((share, at) => {
    const list = byNamespace.get(share.namespace) ?? [];
    list.push({ share, at });
    byNamespace.set(share.namespace, list);
  });
  while (size > limitBytes) {
    let loser: { namespace: string; used: number; at: number } | undefined;
    for (const [namespace, list] of byNamespace) {
      const newest = list[list.length - 1];
      if (!newest) continue;
      const used = usage.get(namespace) ?? 0;
      if (!loser || used > loser.used || (used === loser.used && newest.at > loser.at))
        loser = { namespace, used, at: newest.at };
    }
    const out = loser && byNamespace.get(loser.namespace)?.pop();
    if (!loser || !out) break;
    dropped.add(out.share);
    size -= entryBytes(out.share);
    usage.set(loser.namespace, loser.used - entryBytes(out.share));
  }
  return dropped;
}

/** `[\n` and `\n]\n` around the entries. */
const EMPTY_BYTES = 4;
