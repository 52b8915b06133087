import { systemClock, type Clock } from '../lib/clock.ts';
import { deriveShareKeys, type ShareIdentity, type ShareKeys } from '../lib/share-keys.ts';
import { createSealer, type Sealer } from './seal.ts';

export type { ShareIdentity, ShareKeys } from '../lib/share-keys.ts';

/** The sealers a frontend can use: every share's (installation keys) or one share's (a share pod). */
export interface KeyRing {
  /** The sealer of this share, or undefined when this frontend does not hold its keys. */
  sealerFor(share: ShareIdentity): Sealer | undefined;
  /** The installation's keys; absent in a share pod. */
  readonly installation?: ShareKeys;
}

/** Derived sealers kept per share; a frontend serves at most this many shares' keys at once. */
const SEALER_CACHE_SIZE = 10_000;

/**
 * A key ring holding the installation's keys: it derives any share's sealer, once per share (HKDF
 * and key import are not repeated per request), and keeps a bounded number of them.
 */
export function installationKeyRing(installation: ShareKeys, clock: Clock = systemClock): KeyRing {
  const sealers = new Map<string, Sealer>();
  return {
    installation,
    sealerFor(share) {
      const key = JSON.stringify([share.token, share.instance]);
      let sealer = sealers.get(key);
      if (!sealer) {
        const keys = deriveShareKeys(installation, share);
        sealer = createSealer(keys.signingKey, keys.encryptionKey, clock);
        if (sealers.size >= SEALER_CACHE_SIZE) sealers.delete(sealers.keys().next().value as string);
        sealers.set(key, sealer);
      }
      return sealer;
    },
  };
}

/**
 * A share pod's key ring: its own share's keys, used only for the share it serves (`serves`: the
 * token and instance in its config); every other share has none.
 */
export function shareKeyRing(
  keys: ShareKeys,
  serves: (share: ShareIdentity) => boolean,
  clock: Clock = systemClock,
): KeyRing {
  const sealer = createSealer(keys.signingKey, keys.encryptionKey, clock);
  return { sealerFor: (share) => (serves(share) ? sealer : undefined) };
}
