import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { startDevIdentityProvider, type DevIdentityProvider } from '../../devidp/provider.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { devLogin, launchBrowser } from '../support/browser.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { providerRedirect } from '../support/oauth-flow.ts';

/**
 * The whole identity flow in headless Chromium against the real oidc-provider: share → provider
 * login → callback → backend sees the identity headers; refusal, logout with revocation, share
 * binding, refresh and re-login at the check interval.
 */
describe('OIDC login in a real browser', () => {
  let idp: DevIdentityProvider;
  let idpNoRefresh: DevIdentityProvider;
  let backend: EchoBackend;
  let fe: TestFrontend;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let context: BrowserContext;

  beforeAll(async () => {
    let callbacks: string[] = [];
    idp = await startDevIdentityProvider({
      redirectUris: () => callbacks,
      requirePkce: true,
      unverifiedEmails: ['mallory@example.com'],
    });
    idpNoRefresh = await startDevIdentityProvider({ redirectUris: () => callbacks, refreshTokens: false });
    backend = await startEchoBackend();
    const oidc = (name: string, p: DevIdentityProvider) => ({
      name,
      type: 'oidc',
      client_id: p.clientId,
      client_secret: p.clientSecret,
      scopes: ['openid', 'email', 'profile'],
      issuer: p.issuer.href,
      supports_pkce: true,
    });
    const share = (token: string, extra: Record<string, unknown>) => ({ token, target: backend.url.href, ...extra });
    fe = await startTestFrontend({
      providers: [oidc('dev', idp), oidc('norefresh', idpNoRefresh)],
      shares: [
        share('alpha', { oauth_provider: 'dev', oauth_email_address_patterns: ['*@example.com'] }),
        share('beta', { oauth_provider: 'dev' }),
        share('strict', { oauth_provider: 'dev', oauth_email_address_patterns: ['boss@example.org'] }),
        share('quick', { oauth_provider: 'dev', oauth_check_interval: '2s' }),
        share('noref', { oauth_provider: 'norefresh', oauth_check_interval: '2s' }),
      ],
    });
    callbacks = ['dev', 'norefresh'].map((n) => `http://${fe.authHost}/${n}/auth/callback`);
    browser = await launchBrowser();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await fe?.close();
    await backend?.close();
    await idp?.close();
    await idpNoRefresh?.close();
  });

  const shareUrl = (token: string, path = '/') => `http://${fe.host(token)}${path}`;
  /** Opens a share URL, signing in on the provider's form if it asks (it does not while its own session lives). */
  const open = async (page: Page, token: string, email = 'Alice@Example.com', path = '/') => {
    const atProvider = (url: string) => url.startsWith(idp.issuer.origin) || url.startsWith(idpNoRefresh.issuer.origin);
    const response = await page.goto(shareUrl(token, path));
    if (!atProvider(page.url())) return response;
    const [final] = await Promise.all([
      page.waitForResponse((r) => r.request().isNavigationRequest() && !atProvider(r.url()) && r.status() < 300),
      devLogin(page, email),
    ]);
    await page.waitForLoadState();
    return final;
  };
  /**
   * `open`, then wait until the share's backend got the favicon Chromium fetches after a page loads:
   * a test that then moves the frontend's clock knows no request of this page arrives later (one
   * arriving after the jump would start a second login, racing the test's own).
   */
  const openSettled = async (page: Page, token: string, email?: string) => {
    const favicons = () =>
      backend.seen.filter((r) => r.url === '/favicon.ico' && r.headers['x-forwarded-host'] === fe.host(token)).length;
    const before = favicons();
    await open(page, token, email);
    await expect.poll(favicons).toBeGreaterThan(before);
  };
  const backendJson = async (page: Page) =>
    JSON.parse((await page.textContent('body')) ?? '{}') as { url: string; headers: Record<string, string> };

  it('logs in through the provider and forwards the three identity headers', async () => {
    const page = await context.newPage();
    await page.goto(shareUrl('alpha', '/deep/path?x=1'));
    expect(page.url()).toContain(idp.issuer.host);
    await devLogin(page, 'Alice@Example.com');
    await page.waitForURL(shareUrl('alpha', '/deep/path?x=1'));
    const seen = await backendJson(page);
    expect(seen.url).toBe('/deep/path?x=1');
    expect(seen.headers['svc-auth-provider']).toBe('dev');
    expect(seen.headers['svc-auth-email']).toBe('Alice@Example.com');
    const expires = Date.parse(seen.headers['svc-auth-expires'] ?? '');
    expect(seen.headers['svc-auth-expires']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(expires - Date.now()).toBeGreaterThan(5.9 * 3600_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(6 * 3600_000);
    expect(seen.headers.cookie ?? '').not.toContain('svc-auth');
    const cookie = (await context.cookies()).find((c) => c.name === 'svc-auth-session');
    // The share host's own cookie (host-only), the binding cookie cleared by the hand-over.
    expect(cookie).toMatchObject({
      domain: fe.host('alpha').split(':')[0],
      httpOnly: true,
      sameSite: 'Lax',
      secure: false,
    });
    expect((await context.cookies()).filter((c) => c.name.endsWith('-bind') || c.domain.startsWith('.'))).toEqual([]);
    await page.close();
  });

  it('does not accept the session of share A on share B', async () => {
    const page = await context.newPage();
    await open(page, 'alpha');
    await page.close();
    const cookies = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const onA = await get(fe.port, fe.host('alpha'), '/', { headers: { cookie: cookies } });
    expect(onA.status).toBe(200);
    const onB = await get(fe.port, fe.host('beta'), '/', { headers: { cookie: cookies } });
    expect(new URL((await providerRedirect(fe, onB)).headers.location ?? '').host).toBe(idp.issuer.host);
  });

  it('refuses an email that matches no pattern with a clear page', async () => {
    const page = await context.newPage();
    const response = await open(page, 'strict');
    expect(response?.status()).toBe(403);
    expect(await page.textContent('h1')).toBe('Access refused');
    expect(await page.textContent('body')).toContain('Alice@Example.com is not allowed to access this share');
    await page.close();
  });

  it('refreshes without a prompt when the check interval passes (in real time: no clock moved)', async () => {
    const page = await context.newPage();
    await open(page, 'quick');
    const before = idp.refreshes.count;
    await new Promise((r) => setTimeout(r, 2500));
    const navigations: string[] = [];
    page.on('request', (r) => navigations.push(r.url()));
    await page.reload();
    expect(page.url()).toBe(shareUrl('quick'));
    expect((await backendJson(page)).headers['svc-auth-email']).toBe('Alice@Example.com');
    expect(idp.refreshes.count).toBe(before + 1);
    expect(navigations.some((u) => u.includes(idp.issuer.host))).toBe(false);
    await page.close();
  });

  it('never refreshes a session into another share', async () => {
    const page = await context.newPage();
    await openSettled(page, 'quick');
    await page.close();
    const cookies = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    fe.clock.advance(2500);
    const before = idp.refreshes.count;
    // Due for a refresh, but presented on share beta: a new login, not a refresh of quick's session.
    const onBeta = await get(fe.port, fe.host('beta'), '/', { headers: { cookie: cookies } });
    expect(new URL((await providerRedirect(fe, onBeta)).headers.location ?? '').origin).toBe(idp.issuer.origin);
    expect(idp.refreshes.count).toBe(before);
    expect((onBeta.headers['set-cookie'] ?? []).some((c) => c.startsWith('svc-auth-session='))).toBe(false);
  });

  it('restarts the login at the check interval when the provider gives no refresh token', async () => {
    const page = await context.newPage();
    await openSettled(page, 'noref', 'bob@example.net');
    fe.clock.advance(2500);
    const navigations: string[] = [];
    page.on('request', (r) => navigations.push(r.url()));
    await page.reload();
    await page.waitForURL(shareUrl('noref'));
    expect(navigations.some((u) => u.startsWith(`${idpNoRefresh.issuer.origin}/auth`))).toBe(true);
    expect((await backendJson(page)).headers['svc-auth-email']).toBe('bob@example.net');
    await page.close();
  });

  it('keeps one session per share, so two shares are used side by side without new logins', async () => {
    const page = await context.newPage();
    await open(page, 'alpha');
    await open(page, 'beta');
    const navigations: string[] = [];
    page.on('request', (r) => navigations.push(r.url()));
    for (const token of ['alpha', 'beta', 'alpha']) {
      await page.goto(shareUrl(token, '/again'));
      expect(page.url()).toBe(shareUrl(token, '/again'));
      expect((await backendJson(page)).headers['svc-auth-email']).toBe('Alice@Example.com');
    }
    expect(navigations.filter((u) => u.startsWith(idp.issuer.origin))).toEqual([]);
    await page.close();
  });

  it('logout revokes at the provider, clears the session, and is harmless when repeated', async () => {
    const page = await context.newPage();
    await open(page, 'beta');
    const before = { ...idp.revocations };
    // On the share host: its session cookie is its own.
    const logoutUrl = `http://${fe.host('beta')}/dev/logout?redirect_url=${encodeURIComponent(shareUrl('beta', '/bye'))}`;
    const afterLogout: string[] = [];
    page.on('request', (r) => afterLogout.push(r.url()));
    const [logoutResponse] = await Promise.all([page.waitForResponse(logoutUrl), page.goto(logoutUrl)]);
    expect(logoutResponse.status()).toBe(302);
    expect(logoutResponse.headers()['location']).toBe(shareUrl('beta', '/bye'));
    expect(await logoutResponse.headerValue('set-cookie')).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    expect(idp.revocations.requests).toBeGreaterThan(before.requests);
    expect(idp.revocations.revokedGrants).toBeGreaterThan(before.revokedGrants);
    // The share asked for a login again (the provider session itself is the provider's business).
    expect(afterLogout.some((u) => u.startsWith(`${idp.issuer.origin}/auth`))).toBe(true);
    // Once more with the new session, then again with none: both are plain redirects, never errors.
    for (let i = 0; i < 2; i++) {
      const second = await get(fe.port, fe.host('beta'), '/dev/logout', {
        headers: { cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ') },
      });
      expect(second.status).toBe(302);
      expect(second.headers.location).toBe(idp.issuer.href);
      await context.clearCookies();
    }
    await page.close();
  });

  it('refuses an email address the provider has not verified', async () => {
    const fresh = await launchBrowser();
    try {
      const page = await fresh.context.newPage();
      await page.goto(shareUrl('beta'));
      const [refused] = await Promise.all([
        page.waitForResponse((r) => r.url().includes('/dev/auth/callback')),
        devLogin(page, 'mallory@example.com'),
      ]);
      expect(refused.status()).toBe(403);
      expect(await page.textContent('body')).toContain('mallory@example.com is not verified by the provider');
      expect((await fresh.context.cookies()).some((c) => c.name === 'svc-auth-session')).toBe(false);
    } finally {
      await fresh.close();
    }
  });
});
