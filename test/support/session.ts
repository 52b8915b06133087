import { createSealer } from '../../sidecar/seal.ts';
import type { Session } from '../../sidecar/session.ts';
import { TEST_ENCRYPTION_KEY, TEST_SIGNING_KEY } from './frontend.ts';

/**
 * Mints a session cookie exactly as the frontend seals it, with the test keys. Used by tests that
 * exercise what happens to an authenticated request (header and cookie handling, share binding);
 * the login flow itself is covered end to end against real providers.
 */
export function mintSessionCookie(
  session: Partial<Session> & { share: string; provider: string },
  keys = { signing: TEST_SIGNING_KEY, encryption: TEST_ENCRYPTION_KEY },
): string {
  const now = Date.now();
  const full: Session = {
    id: Math.random().toString(36).slice(2),
    email: 'alice@example.com',
    expiresAt: now + 3600_000,
    checkedAt: now,
    tokens: { accessToken: 'at-secret-value' },
    // A config-file share without `instance` has its token as identity.
    instance: session.share,
    ...session,
  };
  const sealer = createSealer(keys.signing, keys.encryption);
  return `svc-auth-session=${sealer.seal('session', { sessions: [full] }, full.expiresAt)}`;
}
