import { ConfigReader, join } from '../config-reader.ts';
import type { Problem } from '../errors.ts';
import { readShareOptions } from '../share/config-file.ts';
import { SHARE_KEYS, type ShareRoute } from '../share/spec.ts';

/**
 * One item of a share list as validated on its own: its problems, in the order found, and the share
 * when it has none. A whole file that is not a list is one item with the file's problems. Items
 * hold everything but the cross-list duplicate check, so a file's items can be kept and reused.
 */
export interface ShareItem {
  /** Where the share is (`path[i]`), as a duplicate names it. */
  readonly at: string;
  readonly problems: readonly Problem[];
  readonly share?: ShareRoute;
}

/** Validates each share of the list at `path`; `providerNames` are the config's providers (if valid). */
export function validateShareList(
  items: readonly unknown[],
  path: string,
  providerNames: readonly string[] | undefined,
): ShareItem[] {
  const r = new ConfigReader();
  return items.map((item, index) => {
    const at = join(path, index);
    const before = r.problems.length;
    const o = r.object(item, at);
    if (o) r.unknownKeys(o, at, SHARE_KEYS);
    const share = o ? readShareOptions(r, o, at, providerNames) : undefined;
    return { at, problems: r.problems.slice(before), ...(share ? { share } : {}) };
  });
}

/**
 * Records the problems of `items` in `r` and appends their shares to `result`; `seen` maps each token
 * read so far to where it was, so a token twice anywhere is a problem naming both places.
 */
export function addShareItems(
  r: ConfigReader,
  items: readonly ShareItem[],
  seen: Map<string, string>,
  result: ShareRoute[],
): void {
  for (const { at, problems, share } of items) {
    for (const p of problems) r.problem(p.path, p.message, p.code);
    if (!share) continue;
    const before = seen.get(share.token);
    if (before !== undefined)
      r.problem(join(at, 'token'), `duplicate share token ${JSON.stringify(share.token)} (also at ${before})`);
    else seen.set(share.token, at);
    result.push(share);
  }
}
