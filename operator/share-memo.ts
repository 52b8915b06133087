import type { Result } from '../lib/errors.ts';
import { objectKey, type Share } from '../lib/kube/resources.ts';
import type { Installation } from './frontend-secret.ts';
import { validateShare, type ShareChildren, type ValidShare } from './share-children.ts';
import type { WatchSource } from './watches.ts';
import { reservedTokens } from '../lib/share/reserved-tokens.ts';

/**
 * The installation's own hosts a Share's token must not take (lib/share/reserved-tokens.ts): the
 * share domain, and hosts besides the auth endpoint's (which the installation settings name).
 */
export interface ReservedHosts {
  readonly domain: string;
  readonly hosts: readonly string[];
}

interface Entry {
  /** uid and spec (its generation): what validation and the desired children depend on besides the installation. */
  readonly fingerprint: string;
  readonly installation: Installation | undefined;
  readonly validation: Result<ValidShare>;
  children?: ShareChildren;
}

/**
 * Validation and desired children per Share, computed once per (uid, spec, installation settings).
 * A Share is reconciled again whenever its status or a child changes, and the auth-endpoint config
 * validates every OAuth Share on each run; both would otherwise re-run the spec checks, the
 * sidecar's config parse and its YAML rendering for an unchanged spec (a third of the operator's
 * CPU while 1,000 Shares were created). Level-based still: the memo only answers for the exact
 * inputs it was computed from, and a deleted Share's entry is dropped.
 */
export class ShareMemo {
  private readonly entries = new Map<string, Entry>();
  private readonly reserved: ReservedHosts | undefined;
  /** The reserved tokens per installation settings (the auth endpoint's host is among them). */
  private readonly tokensOf = new WeakMap<Installation, Map<string, string>>();

  constructor(shares: WatchSource<Share>, reserved?: ReservedHosts) {
    this.reserved = reserved;
    shares.on({ onDelete: (share) => this.entries.delete(objectKey(share)) });
  }

  validate(share: Share, installation: Installation | undefined): Result<ValidShare> {
    return this.entry(share, installation).validation;
  }

  /** The desired children of a valid Share; `compute` runs only when the inputs changed. */
  children(share: Share, installation: Installation | undefined, compute: () => ShareChildren): ShareChildren {
    const entry = this.entry(share, installation);
    entry.children ??= compute();
    return entry.children;
  }

  private entry(share: Share, installation: Installation | undefined): Entry {
    const key = objectKey(share);
    // The API server bumps metadata.generation on every spec change (the status is a subresource);
    // serializing the spec is the fallback for objects without one.
    const { uid = '', generation } = share.metadata;
    const fingerprint = `${uid}\n${generation ?? JSON.stringify(share.spec ?? {})}`;
    const hit = this.entries.get(key);
    if (hit && hit.fingerprint === fingerprint && hit.installation === installation) return hit;
    const validation = validateShare(share, installation, this.reservedTokens(installation));
    const entry: Entry = { fingerprint, installation, validation };
    this.entries.set(key, entry);
    return entry;
  }

  private reservedTokens(installation: Installation | undefined): Map<string, string> | undefined {
    if (!this.reserved) return undefined;
    const { domain, hosts } = this.reserved;
    if (!installation) return reservedTokens(hosts, domain);
    let tokens = this.tokensOf.get(installation);
    if (!tokens) {
      tokens = reservedTokens([installation.oauth.endpointUrl.hostname, ...hosts], domain);
      this.tokensOf.set(installation, tokens);
    }
    return tokens;
  }
}
