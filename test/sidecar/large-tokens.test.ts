import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseFrontendConfig } from '../../lib/config/frontend.ts';
import { sharePodOAuthSection } from '../../lib/config/share-pod.ts';
import { createLogger } from '../../lib/logger.ts';
import { staticShares } from '../../lib/share/source.ts';
import { MAX_COOKIE_BYTES } from '../../sidecar/cookies.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { TestClock } from '../support/clock.ts';
import {
  LogCapture,
  startTestFrontend,
  TEST_ENCRYPTION_KEY,
  TEST_SIGNING_KEY,
  type TestFrontend,
} from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { issuerProvider, loginThroughIssuer } from '../support/issuer-login.ts';
import { authEndpointSection, loginAtSharePod, sessionPair, type SharePodShape } from '../support/share-pod-login.ts';
import { startTestIssuer, type TestIssuer } from '../support/test-issuer.ts';

/**
 * Provider tokens too large for a cookie, as Azure AD issues them with group claims: an access
 * token of about 4.5 KB (a signed JWT listing the user's groups) and a 1.5 KB refresh token. The
 * session cookie keeps the refresh token and drops the access token; the login's hand-over ticket
 * and a share pod's renew answer carry that same session, so the login completes and renewals work
 * (svc serve shape, and a share pod with its auth endpoint).
 */
const DOMAIN = 'svc.localhost';
let issuer: TestIssuer;
let backend: EchoBackend;
let refreshToken = '';
let accessTokenLength = 0;

/** The issuer's tokens for this suite: a signed access token with ~90 group ids, an opaque 1500-character refresh token. */
function largeTokens(): void {
  issuer.behaviour.tokens = async (sign) => {
    const groups = Array.from({ length: 88 }, () => randomUUID());
    const access = await sign({ iss: issuer.issuer, sub: 'user-1', aud: 'api://svc', groups });
    accessTokenLength = access.length;
    refreshToken = randomBytes(1125).toString('base64url');
    return { access, refresh: refreshToken };
  };
}

beforeAll(async () => {
  issuer = await startTestIssuer();
  backend = await startEchoBackend();
});
beforeEach(() => {
  issuer.reset();
  largeTokens();
});
afterAll(async () => {
  await Promise.all([issuer?.close(), backend?.close()]);
});

describe('one frontend with the installation keys (svc serve)', () => {
  let fe: TestFrontend;
  beforeAll(async () => {
    fe = await startTestFrontend({
      providers: [issuerProvider(issuer, 'corp')],
      shares: [{ token: 'one', target: backend.url.href, oauth_provider: 'corp' }],
    });
  });
  afterAll(() => fe?.close());

  it('completes a login with a 4.5 KB access token and a 1.5 KB refresh token; logout revokes the refresh token', async () => {
    const { reply, cookie } = await loginThroughIssuer(fe, issuer, 'one', 'corp');
    expect(accessTokenLength).toBeGreaterThan(4400);
    expect(reply.body).not.toContain('Login failed');
    expect(reply.status).toBe(302);
    const session = sessionPair(cookie);
    expect(session).toMatch(/^svc-auth-session=one~/);
    const set = (reply.headers['set-cookie'] ?? []).find((c) => c.startsWith('svc-auth-session='));
    expect(set?.length).toBeLessThanOrEqual(MAX_COOKIE_BYTES);
    expect((await get(fe.port, fe.host('one'), '/page', { headers: { cookie: session } })).status).toBe(200);
    const out = await get(fe.port, fe.host('one'), '/corp/logout', { headers: { cookie: session } });
    expect(out.status).toBe(302);
    // The cookie kept what revocation needs: the refresh token (the access token did not fit).
    expect(issuer.revocations).toEqual([{ hint: 'refresh_token', token: refreshToken }]);
  });
});

describe('a share pod and its auth endpoint', () => {
  const clock = new TestClock();
  const share = { token: 'alpha', instance: 'uid-alpha-1' };
  let auth: RunningFrontend;
  let pod: RunningFrontend;
  let shape: SharePodShape;

  beforeAll(async () => {
    const shares = [{ ...share, target: backend.url.href, oauth_provider: 'corp', oauth_check_interval: '1m' }];
    const installation = authEndpointSection(DOMAIN, [issuerProvider(issuer, 'corp')]);
    const start = async (oauth: Record<string, unknown>, name: string): Promise<RunningFrontend> => {
      const config = parseFrontendConfig({ oauth, shares });
      return startFrontend({
        listen: { host: '127.0.0.1', port: 0 },
        endpointUrl: new URL(`http://auth.${DOMAIN}:1`),
        domain: DOMAIN,
        oauth: config.oauth,
        shares: staticShares(config.shares),
        logger: createLogger(name, { level: 'info', destination: new LogCapture() }),
        clock,
      });
    };
    auth = await start(installation, 'auth-endpoint');
    const keys = { signingKey: TEST_SIGNING_KEY, encryptionKey: TEST_ENCRYPTION_KEY };
    pod = await start(sharePodOAuthSection(installation, keys, share, `http://127.0.0.1:${auth.internalPort}`), 'pod');
    shape = { podPort: pod.port, authPort: auth.port, shareHost: `alpha.${DOMAIN}:1`, provider: 'corp' };
  });
  afterAll(async () => {
    await Promise.all([auth?.close(), pod?.close()]);
  });

  it('completes the login and renews the session through the internal port at its re-check', async () => {
    const { reply, cookie } = await loginAtSharePod(shape, issuer);
    expect(reply.body).not.toContain('Login failed');
    expect(reply.status).toBe(302);
    const session = sessionPair(cookie);
    expect(session).toMatch(/^svc-auth-session=alpha~/);
    const tokens = issuer.requests.token;
    clock.advance(2 * 60_000);
    const page = await get(pod.port, shape.shareHost, '/page', { headers: { cookie: session } });
    expect(page.status).toBe(200);
    expect(issuer.requests.token).toBe(tokens + 1);
    const renewed = sessionPair(cookiesFrom(page));
    expect(renewed).toMatch(/^svc-auth-session=alpha~/);
    expect(renewed).not.toBe(session);
  });
});
