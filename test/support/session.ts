import type { Session } from '../../sidecar/session.ts';
import { installationKeyRing } from '../../sidecar/share-keys.ts';
import { TEST_ENCRYPTION_KEY, TEST_SIGNING_KEY } from './frontend.ts';

/**
 * Mints a session cookie exactly as the frontend seals it, with the test keys (the entry sealed
 * under the share's keys derived from them). Used by tests that
 * exercise what happens to an authenticated request (header and cookie handling, share binding);
 * the login flow itself is covered end to end against real providers.
 */
export function mintSessionCookie(
  session: Partial<Session> & { share: string; provider: string },
  keys = { signing: TEST_SIGNING_KEY, encryption: TEST_ENCRYPTION_KEY },
): string {
  const full = testSession(session);
  const ring = installationKeyRing({ signingKey: keys.signing, encryptionKey: keys.encryption });
  const sealer = ring.sealerFor({ token: full.share, instance: full.instance });
  return `svc-auth-session=${full.share}~${sealer?.seal('session', full, full.expiresAt) ?? ''}`;
}

/** A session valid for an hour from `now` (alice, an access token), with `session`'s fields over it. */
export function testSession(
  session: Partial<Session> & { share: string; provider: string },
  now = Date.now(),
): Session {
  return {
    id: Math.random().toString(36).slice(2),
    email: 'alice@example.com',
    expiresAt: now + 3600_000,
    checkedAt: now,
    tokens: { accessToken: 'at-secret-value' },
    // A config-file share without `instance` has its token as identity.
    instance: session.share,
    ...session,
  };
}
