import type * as Jose from 'jose';
import type { JWTVerifyGetKey } from 'jose';
import type { Clock } from '../../lib/clock.ts';
import { errorText } from '../../lib/errors.ts';
import { providerRequest } from './http.ts';
import { ProviderError, statusFailure } from './types.ts';

/** How a provider's key set is kept. */
export interface KeySetPolicy {
  /** A key set older than this is fetched again before use, so a key the provider removed stops being trusted. */
  readonly maxAgeMs: number;
  /**
   * A token whose `kid` the key set lacks (key rotation) has the set fetched again, at most once per
   * this interval: a flood of forged `kid`s costs the provider one request per interval, not one each.
   */
  readonly unknownKidRefetchMs: number;
}

/** jose's remote key set keeps 10 minutes and waits 30 s between fetches; the same here. */
export const KEY_SET_POLICY: KeySetPolicy = { maxAgeMs: 10 * 60_000, unknownKidRefetchMs: 30_000 };

/** One fetched key set. */
export interface KeySet {
  readonly getKey: JWTVerifyGetKey;
  readonly fetchedAt: number;
}

/** The key set of one provider's `jwks_uri`, fetched once for all concurrent callers (single flight). */
export interface KeySetCache {
  /** The key set to verify with: the kept one while younger than `maxAgeMs`, else a fresh one. */
  current(): Promise<KeySet>;
  /**
   * After `used` lacked the key of a token whose verification began at `since`: a newer set to try
   * (one another caller fetched meanwhile, the fetch under way, or a new fetch if the interval
   * allows), or undefined when there is none.
   */
  afterUnknownKey(used: KeySet, since: number): Promise<KeySet | undefined>;
}

export function keySetCache(
  provider: string,
  jwksUri: URL,
  jose: () => Promise<typeof Jose>,
  clock: Clock,
  policy: KeySetPolicy = KEY_SET_POLICY,
): KeySetCache {
  let kept: KeySet | undefined;
  let inFlight: Promise<KeySet> | undefined;
  let lastUnknownKidFetch = Number.NEGATIVE_INFINITY;

  const fetchKeys = async (): Promise<KeySet> => {
    const what = `key set ${jwksUri.href}`;
    const startedAt = clock.now();
    const response = await providerRequest(provider, what, jwksUri, {
      method: 'GET',
      headers: { accept: 'application/jwk-set+json, application/json' },
    });
    if (response.status !== 200)
      throw statusFailure(provider, `${what} failed: HTTP ${response.status}`, response.status);
    try {
      kept = { getKey: (await jose()).createLocalJWKSet(response.json as never), fetchedAt: startedAt };
    } catch (err) {
      throw new ProviderError(provider, `${what} failed: ${errorText(err)}`, err);
    }
    return kept;
  };

  const load = (): Promise<KeySet> =>
    (inFlight ??= fetchKeys().finally(() => {
      inFlight = undefined;
    }));

  return {
    current() {
      if (kept && clock.now() - kept.fetchedAt < policy.maxAgeMs) return Promise.resolve(kept);
      return load();
    },
    async afterUnknownKey(used, since) {
      if (inFlight) return inFlight;
      if (kept && kept !== used) return kept;
      // A set fetched for this very token (or by a caller it waited on) cannot be any newer.
      if (used.fetchedAt >= since) return undefined;
      const now = clock.now();
      if (now - lastUnknownKidFetch < policy.unknownKidRefetchMs) return undefined;
      lastUnknownKidFetch = now;
      return load();
    },
  };
}
