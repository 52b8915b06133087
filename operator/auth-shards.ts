import { createHash } from 'node:crypto';
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

/** The shard of a Share: the first 4 bytes of sha256("<namespace>/<name>"), modulo {@link AUTH_SHARDS}. */
export function shardOf(namespace: string, name: string): number {
  return createHash('sha256').update(`${namespace}/${name}`).digest().readUInt32BE(0) % AUTH_SHARDS;
}

/** `<auth secret>-shares-NN`, NN two digits from 00. */
export function shardSecretName(authSecret: string, shard: number): string {
  return `${authSecret}-shares-${String(shard).padStart(2, '0')}`;
}

/** What goes into one shard Secret, and the shares that did not fit. */
export interface Shard {
  /** The `shares.yaml` text: a JSON list (YAML too), one entry a line, ordered by token. */
  readonly text: string;
  readonly count: number;
  /** Shares of this shard left out because the Secret would pass {@link MAX_SECRET_BYTES}. */
  readonly dropped: readonly ValidShare[];
}

/**
 * The shard contents for `shares` (valid OAuth shares, oldest first). Each entry targets the
 * share's in-cluster Service. A shard fills oldest first: a share whose entry would take the text
 * past `limitBytes` is left out (and reported by the caller), so existing shares keep their routes
 * when a shard is full. JSON because the frontend parses a JSON list without its YAML parser,
 * which at thousands of entries is the difference between milliseconds and seconds.
 */
export function renderShards(shares: readonly ValidShare[], limitBytes = MAX_SECRET_BYTES): Shard[] {
  const lines: { token: string; line: string }[][] = Array.from({ length: AUTH_SHARDS }, () => []);
  const sizes: number[] = new Array<number>(AUTH_SHARDS).fill(EMPTY_BYTES);
  const dropped: ValidShare[][] = Array.from({ length: AUTH_SHARDS }, () => []);
  for (const share of shares) {
    const shard = shardOf(share.namespace, share.name);
    const line = JSON.stringify(shareEntry(share, `http://${childName(share.name)}.${share.namespace}.svc:80`));
    // The line and its separator (",\n"); an upper bound that is exact once a shard has two entries.
    const bytes = Buffer.byteLength(line) + 2;
    if ((sizes[shard] as number) + bytes > limitBytes) {
      dropped[shard]?.push(share);
      continue;
    }
    sizes[shard] = (sizes[shard] as number) + bytes;
    lines[shard]?.push({ token: share.token, line });
  }
  return lines.map((entries, shard) => {
    entries.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
    const text = entries.length === 0 ? '[]\n' : `[\n${entries.map((e) => e.line).join(',\n')}\n]\n`;
    return { text, count: entries.length, dropped: dropped[shard] ?? [] };
  });
}

/** `[\n` and `\n]\n` around the entries. */
const EMPTY_BYTES = 4;
