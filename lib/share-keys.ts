import { createHash, hkdfSync, timingSafeEqual } from 'node:crypto';

/** What a share's keys are bound to: its token (host) and its instance (a Share object's uid). */
export interface ShareIdentity {
  readonly token: string;
  readonly instance: string;
}

/** One share's own keys: what its cookie entries and login states are sealed with. */
export interface ShareKeys {
  readonly signingKey: string;
  readonly encryptionKey: string;
}

type Use = 'signing' | 'encryption' | 'credential';

/**
 * HKDF-SHA256 of an installation key with the share's identity as info: a share's keys open and
 * make only that share's entries, and a share created again with the same token (a new instance)
 * gets other keys. The info is a hash of an unambiguous encoding, so any instance string fits.
 */
function derive(installationKey: string, use: Use, share: ShareIdentity): string {
  const info = createHash('sha256')
    .update(JSON.stringify(['svc share key v1', use, share.token, share.instance]))
    .digest();
  return Buffer.from(hkdfSync('sha256', installationKey, 'svc-share', info, 32)).toString('base64url');
}

/** The share's sealing keys, derived from the installation's (the operator writes these into the share's namespace). */
export function deriveShareKeys(installation: ShareKeys, share: ShareIdentity): ShareKeys {
  return {
    signingKey: derive(installation.signingKey, 'signing', share),
    encryptionKey: derive(installation.encryptionKey, 'encryption', share),
  };
}

/**
 * The credential a share pod presents to the auth endpoint's internal port: derived from the
 * installation's signing key, so the auth endpoint recomputes it and stores nothing.
 */
export function deriveShareCredential(installation: ShareKeys, share: ShareIdentity): string {
  return derive(installation.signingKey, 'credential', share);
}

/** Constant-time comparison of a presented credential with the expected one. */
export function credentialMatches(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
