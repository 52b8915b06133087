import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFrontendConfig } from '../../lib/config/frontend.ts';
import { sharePodOAuthSection } from '../../lib/config/share-pod.ts';
import { createLogger } from '../../lib/logger.ts';
import { deriveShareCredential, type ShareIdentity } from '../../lib/share-keys.ts';
import { staticShares } from '../../lib/share/source.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { createSealer } from '../../sidecar/seal.ts';
import type { Session } from '../../sidecar/session.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { TestClock } from '../support/clock.ts';
import { suiteFigures } from '../support/figures.ts';
import { LogCapture, TEST_ENCRYPTION_KEY, TEST_SIGNING_KEY } from '../support/frontend.ts';
import { cookiesFrom, get, type Reply } from '../support/http.ts';
import { issuerProvider } from '../support/issuer-login.ts';
import { authEndpointSection } from '../support/share-pod-login.ts';
import { testSession } from '../support/session.ts';
import { startTestIssuer, TEST_CLIENT_SECRET, type TestIssuer } from '../support/test-issuer.ts';

/**
 * A share pod holds only its own share's material (derived keys, a credential for the auth
 * endpoint's internal port, no client secret). Set up as on a cluster: an auth endpoint with the
 * installation's keys and client secret serving callbacks and the internal port, and two share pods
 * (alpha, beta) each with only the config the operator writes for it. Logins and refreshes of share
 * alpha work end to end; everything alpha's config holds, used against beta, is refused.
 */
const figures = suiteFigures('share-keys');
const forgery = figures.attackClass(
  'Cross-share session forgery with one share pod’s material (keys, credential, state, entries)',
  'every OAuth share pod held the installation’s signing and encryption keys and client secret; now each holds keys derived for its share only, and what needs the client secret happens at the auth endpoint',
);

const DOMAIN = 'svc.localhost';
const ALPHA: ShareIdentity = { token: 'alpha', instance: 'uid-alpha-1' };
const BETA: ShareIdentity = { token: 'beta', instance: 'uid-beta-1' };

let issuer: TestIssuer;
let backends: Record<'alpha' | 'beta', EchoBackend>;
let auth: RunningFrontend;
let pods: Record<'alpha' | 'beta', RunningFrontend>;
let podSections: Record<'alpha' | 'beta', Record<string, unknown>>;
const authLogs = new LogCapture();
const podLogs = new LogCapture();
const clock = new TestClock();
let authHost: string;

const shareEntry = (share: ShareIdentity, target: URL) => ({
  token: share.token,
  instance: share.instance,
  target: target.href,
  oauth_provider: 'corp',
  oauth_check_interval: '1m',
});

beforeAll(async () => {
  issuer = await startTestIssuer();
  backends = { alpha: await startEchoBackend(), beta: await startEchoBackend() };
  const installationSection = authEndpointSection(DOMAIN, [issuerProvider(issuer, 'corp')]);
  const authConfig = parseFrontendConfig({
    oauth: installationSection,
    shares: [shareEntry(ALPHA, backends.alpha.url), shareEntry(BETA, backends.beta.url)],
  });
  auth = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`http://auth.${DOMAIN}:${port}`),
    domain: DOMAIN,
    oauth: authConfig.oauth,
    shares: staticShares(authConfig.shares),
    logger: createLogger('auth-endpoint', { level: 'debug', destination: authLogs }),
    clock,
  });
  authHost = auth.endpointUrl.host;
  const internalUrl = `http://127.0.0.1:${auth.internalPort}`;
  const keys = { signingKey: TEST_SIGNING_KEY, encryptionKey: TEST_ENCRYPTION_KEY };
  const section = (share: ShareIdentity) => ({
    ...sharePodOAuthSection(installationSection, keys, share, internalUrl),
    endpoint_url: auth.endpointUrl.origin,
  });
  podSections = { alpha: section(ALPHA), beta: section(BETA) };
  const startPod = async (share: ShareIdentity, backend: EchoBackend) => {
    const config = parseFrontendConfig({
      oauth: podSections[share.token as 'alpha' | 'beta'],
      shares: [shareEntry(share, backend.url)],
    });
    return startFrontend({
      listen: { host: '127.0.0.1', port: 0 },
      endpointUrl: auth.endpointUrl,
      domain: DOMAIN,
      oauth: config.oauth,
      shares: staticShares(config.shares),
      logger: createLogger(`pod-${share.token}`, { level: 'debug', destination: podLogs }),
      clock,
    });
  };
  pods = { alpha: await startPod(ALPHA, backends.alpha), beta: await startPod(BETA, backends.beta) };
});

afterAll(async () => {
  figures.write();
  await Promise.all([auth?.close(), pods?.alpha.close(), pods?.beta.close()]);
  await Promise.all([issuer?.close(), backends?.alpha.close(), backends?.beta.close()]);
});

const visit = (share: 'alpha' | 'beta', cookie?: string): Promise<Reply> =>
  get(pods[share].port, `${share}.${DOMAIN}:${pods[share].port}`, '/page', cookie ? { headers: { cookie } } : {});

/** A login at `share`: its pod's redirect, the issuer's answer, the auth endpoint's callback. */
async function login(share: 'alpha' | 'beta', cookie = ''): Promise<{ reply: Reply; cookie: string }> {
  const visited = await visit(share, cookie || undefined);
  expect(visited.status).toBe(302);
  // The pod sends the browser to the auth endpoint's start path, which sets the login cookie.
  const startUrl = new URL(visited.headers.location ?? '');
  expect(startUrl.host).toBe(authHost);
  const start = await get(auth.port, authHost, `${startUrl.pathname}${startUrl.search}`);
  expect(start.status).toBe(302);
  const authorizeUrl = new URL(start.headers.location ?? '');
  const loginCookie = [cookie, cookiesFrom(start)].filter(Boolean).join('; ');
  const nonce = authorizeUrl.searchParams.get('nonce') ?? '';
  const claims = issuer.behaviour.claims;
  issuer.behaviour.claims = (base) => claims({ ...base, nonce });
  try {
    const back = `/corp/auth/callback?code=code-1&state=${encodeURIComponent(authorizeUrl.searchParams.get('state') ?? '')}&iss=${encodeURIComponent(issuer.issuer)}`;
    const done = await get(auth.port, authHost, back, { headers: { cookie: loginCookie } });
    if (done.status !== 302) return { reply: done, cookie: cookiesFrom(done) };
    // The auth endpoint hands the session over to the pod, which sets it for the browser holding its binding cookie.
    const handOver = new URL(done.headers.location ?? '');
    expect(handOver.pathname).toBe('/corp/auth/handover');
    const bound = [cookie, cookiesFrom(visited)].filter(Boolean).join('; ');
    const reply = await get(pods[share].port, handOver.host, `${handOver.pathname}${handOver.search}`, {
      headers: { cookie: bound },
    });
    return { reply, cookie: cookiesFrom(reply) };
  } finally {
    issuer.behaviour.claims = claims;
  }
}

const sessionOf = (cookie: string): string => /svc-auth-session=[^;]*/.exec(cookie)?.[0] ?? '';
const emailSeenBy = (backend: EchoBackend): string | undefined => {
  const last = backend.seen.at(-1);
  return last?.headers['svc-auth-email'] as string | undefined;
};

describe('a share pod with only its own share’s material', () => {
  it('holds no client secret and none of the installation’s keys', () => {
    const text = JSON.stringify(podSections);
    for (const secret of [TEST_CLIENT_SECRET, TEST_SIGNING_KEY, TEST_ENCRYPTION_KEY])
      expect(text).not.toContain(secret);
  });

  it('logs a visitor in end to end: the pod starts the login, the auth endpoint completes it', async () => {
    const { reply, cookie } = await login('alpha');
    expect(reply.status).toBe(302);
    expect(new URL(reply.headers.location ?? '').hostname).toBe(`alpha.${DOMAIN}`);
    expect(sessionOf(cookie)).toMatch(/^svc-auth-session=alpha~[A-Za-z0-9_-]+$/);
    const page = await visit('alpha', sessionOf(cookie));
    expect(page.status).toBe(200);
    expect(emailSeenBy(backends.alpha)).toBe('ada@example.com');
  });

  it('renews a session at its re-check through the auth endpoint’s internal port', async () => {
    const { cookie } = await login('alpha');
    const tokensBefore = issuer.requests.token;
    clock.advance(2 * 60_000);
    const page = await visit('alpha', sessionOf(cookie));
    expect(page.status).toBe(200);
    expect(issuer.requests.token).toBe(tokensBefore + 1);
    const renewed = sessionOf(cookiesFrom(page));
    expect(renewed).toMatch(/^svc-auth-session=alpha~/);
    expect(renewed).not.toBe(sessionOf(cookie));
    expect(authLogs.lines.some((l) => l.includes('share pod session renewal') && l.includes('"refreshed"'))).toBe(true);
    // Renewed: the next request is not due again.
    const tokens = issuer.requests.token;
    expect((await visit('alpha', renewed)).status).toBe(200);
    expect(issuer.requests.token).toBe(tokens);
  });

  it('keeps another share’s entry in the cookie it rewrites, untouched and still valid there', async () => {
    const beta = await login('beta');
    const both = await login('alpha', sessionOf(beta.cookie));
    expect(both.reply.status).toBe(302);
    const cookie = sessionOf(both.cookie);
    expect((await visit('beta', cookie)).status).toBe(200);
    expect((await visit('alpha', cookie)).status).toBe(200);
  });
});

describe('alpha’s material used against beta', () => {
  const alphaSealer = () =>
    createSealer(podSections.alpha.signing_key as string, podSections.alpha.encryption_key as string, clock);
  const betaSession = (): Session =>
    testSession(
      { share: BETA.token, instance: BETA.instance, provider: 'corp', email: 'mallory@example.com' },
      clock.now(),
    );

  /** Beta's pod sends the visitor to log in and its backend sees nothing. */
  async function refusedAtBeta(cookie: string): Promise<void> {
    const seen = backends.beta.seen.length;
    const reply = await visit('beta', cookie);
    expect(reply.status).toBe(302);
    expect(new URL(reply.headers.location ?? '').host).toBe(authHost);
    expect(backends.beta.seen.length).toBe(seen);
  }

  it('a session for beta sealed with alpha’s keys is refused by beta’s pod', () =>
    forgery.run(async () => {
      const sealed = alphaSealer().seal('session', betaSession(), clock.now() + 3600_000);
      await refusedAtBeta(`svc-auth-session=beta~${sealed}`);
    }));

  it('alpha’s genuine entry relabelled as beta’s is refused by beta’s pod', () =>
    forgery.run(async () => {
      const { cookie } = await login('alpha');
      await refusedAtBeta(sessionOf(cookie).replace('=alpha~', '=beta~'));
    }));

  it('a login state made with alpha’s keys for beta does not complete at the auth endpoint', () =>
    forgery.run(async () => {
      const state = alphaSealer().seal(
        'state',
        { id: 'x', provider: 'corp', share: BETA.token, instance: BETA.instance, path: '/' },
        clock.now() + 60_000,
      );
      const login = alphaSealer().seal(
        'login',
        { id: 'x', nonce: 'n', codeVerifier: 'v'.repeat(43), expiresAt: clock.now() + 60_000 },
        clock.now() + 60_000,
      );
      const tokens = issuer.requests.token;
      const reply = await get(auth.port, authHost, `/corp/auth/callback?code=c&state=beta~${state}`, {
        headers: { cookie: `svc-auth-session-login=beta~${login}` },
      });
      expect(reply.status).toBe(400);
      expect(issuer.requests.token).toBe(tokens);
      expect(reply.headers['set-cookie'] ?? []).not.toContainEqual(expect.stringMatching(/^svc-auth-session=/));
    }));

  it('a login start ticket made with alpha’s keys for beta starts nothing at the auth endpoint', () =>
    forgery.run(async () => {
      const ticket = alphaSealer().seal(
        'start',
        { provider: 'corp', share: BETA.token, instance: BETA.instance, path: '/' },
        clock.now() + 60_000,
      );
      const reply = await get(auth.port, authHost, `/corp/auth/start?ticket=beta~${ticket}`);
      expect(reply.status).toBe(400);
      expect(reply.headers['set-cookie']).toBeUndefined();
    }));

  it('alpha’s credential does not renew beta’s session at the internal port, nor does a wrong one', () =>
    forgery.run(async () => {
      const beta = await login('beta');
      const entry = sessionOf(beta.cookie).slice('svc-auth-session=beta~'.length);
      const renew = (share: string, credential: string, body = JSON.stringify({ session: entry })) =>
        get(auth.internalPort as number, `127.0.0.1:${auth.internalPort}`, '/internal/v1/renew', {
          method: 'POST',
          headers: { 'svc-share': share, authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
          body,
        });
      const alphaCredential = (podSections.alpha.auth_service as { credential: string }).credential;
      expect((await renew('beta', alphaCredential)).status).toBe(401);
      expect((await renew('beta', `${alphaCredential}x`)).status).toBe(401);
      // Its own name with its own credential, but beta's entry: the entry does not open as alpha's.
      expect((await renew('alpha', alphaCredential)).status).toBe(400);
      const keys = { signingKey: TEST_SIGNING_KEY, encryptionKey: TEST_ENCRYPTION_KEY };
      expect((await renew('beta', deriveShareCredential(keys, BETA))).status).toBe(200);
      expect((await renew('beta', deriveShareCredential(keys, BETA), 'x'.repeat(20_000))).status).toBe(413);
    }));
});

describe('the internal port', () => {
  it('answers only POST /internal/v1/renew, and is not the public listener', async () => {
    const at = (path: string, method = 'GET') =>
      get(auth.internalPort as number, `127.0.0.1:${auth.internalPort}`, path, { method });
    expect((await at('/internal/v1/renew')).status).toBe(405);
    expect((await at('/corp/auth/callback')).status).toBe(404);
    expect((await get(auth.port, authHost, '/internal/v1/renew', { method: 'POST' })).status).not.toBe(200);
    expect(podLogs.lines.join('\n')).not.toContain(TEST_SIGNING_KEY);
  });
});
