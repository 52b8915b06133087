import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { callback, providerRedirect, shareUrl, startLogin } from '../support/oauth-flow.ts';
import { s256, startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { startIdp2Server, type Idp2Server } from '../support/idp2-server.ts';

/**
 * The idp1 (web-search company) provider type end to end against a local server implementing its
 * OAuth 2.0 contract: the frontend under test is driven over HTTP the way a browser would, with
 * redirects followed by hand and cookies carried explicitly.
 */
describe('idp1 provider flow', () => {
  let idp1: Idp1Server;
  let idp2: Idp2Server;
  let backend: EchoBackend;
  let fe: TestFrontend;
  /** Same shares, but the login must finish within intermediate_lifetime = 2s. */
  let shortFe: TestFrontend;

  beforeAll(async () => {
    [idp1, idp2, backend] = await Promise.all([startIdp1Server(), startIdp2Server(), startEchoBackend()]);
    const share = (token: string, extra: Record<string, unknown>) => ({ token, target: backend.url.href, ...extra });
    const shares = [
      share('one', { oauth_provider: 'idp1', oauth_email_address_patterns: ['*@example.com'] }),
      share('open1', { oauth_provider: 'idp1' }),
      share('quick1', { oauth_provider: 'idp1', oauth_check_interval: '1s' }),
      share('two', { oauth_provider: 'idp2' }),
    ];
    const providers = [idp1.providerConfig('idp1'), idp2.providerConfig('idp2')];
    // Same keys and domain, and share `flip` under another provider: as if the share's provider changed.
    fe = await startTestFrontend({ providers, shares: [...shares, share('flip', { oauth_provider: 'idp1' })] });
    shortFe = await startTestFrontend({
      providers,
      shares: [...shares, share('flip', { oauth_provider: 'idp2' })],
      oauth: { intermediate_lifetime: '2s' },
    });
    idp1.redirectUris = [fe, shortFe].map((f) => `http://${f.authHost}/idp1/auth/callback`);
    idp2.redirectUris = [fe, shortFe].map((f) => `http://${f.authHost}/idp2/auth/callback`);
  });

  afterEach(() => {
    idp1.nextUser = { email: 'alice@example.com', email_verified: true };
    idp1.denyWith = undefined;
    idp1.tokenFailure = undefined;
    idp1.revokeStatus = undefined;
  });

  afterAll(async () => {
    await Promise.all([fe?.close(), shortFe?.close()]);
    await Promise.all([idp1?.close(), idp2?.close(), backend?.close()]);
  });

  /** Share → provider → callback → share; returns the session cookie and the backend's view. */
  const login = async (token: string, path = '/', f = fe) => {
    const { authorizeUrl, loginCookie } = await startLogin(f, token, path);
    const done = await callback(f, await idp1.authorize(authorizeUrl), loginCookie);
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe(shareUrl(f, token, path));
    const session = cookiesFrom(done);
    const page = await get(f.port, f.host(token), path, { headers: { cookie: session } });
    expect(page.status).toBe(200);
    const seen = JSON.parse(page.body) as { url: string; headers: Record<string, string | undefined> };
    return { session, seen, accessToken: idp1.issuedTokens.at(-1) as string, callbackReply: done };
  };

  /** A logout on a share host of the provider (the session cookie is that host's own). */
  const logout = (path: string, cookie?: string, token = path.startsWith('/idp2/') ? 'two' : 'open1') =>
    get(fe.port, fe.host(token), path, cookie === undefined ? {} : { headers: { cookie } });

  it('logs in and forwards provider, email and expiry to the backend', async () => {
    const { authorizeUrl } = await startLogin(fe, 'one', '/deep/path?x=1');
    expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(new URL('/o/oauth2/v2/auth', idp1.url).href);
    const params = authorizeUrl.searchParams;
    expect(params.get('client_id')).toBe(idp1.clientId);
    expect(params.get('response_type')).toBe('code');
    expect(params.get('redirect_uri')).toBe(`http://${fe.authHost}/idp1/auth/callback`);
    expect(params.get('scope')).toBe('openid email');
    expect(params.get('code_challenge_method')).toBe('S256');

    const { seen, session, accessToken, callbackReply } = await login('one', '/deep/path?x=1');
    expect(seen.url).toBe('/deep/path?x=1');
    expect(seen.headers['svc-auth-provider']).toBe('idp1');
    expect(seen.headers['svc-auth-email']).toBe('alice@example.com');
    const expires = seen.headers['svc-auth-expires'] ?? '';
    expect(expires).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(Date.parse(expires) - Date.now()).toBeGreaterThan(6 * 3600_000 - 60_000);
    expect(Date.parse(expires) - Date.now()).toBeLessThanOrEqual(6 * 3600_000);
    expect(seen.headers.cookie ?? '').not.toContain('svc-auth');
    expect(callbackReply.headers['set-cookie']?.join('\n')).toMatch(
      /svc-auth-session=\S+; Path=\/; Max-Age=(21600|2159\d); HttpOnly; SameSite=Lax/,
    );

    // The server checked the verifier against the challenge it was given, and the token worked at user info.
    const exchange = idp1.tokenRequests.at(-1);
    expect(exchange?.error).toBeUndefined();
    const challenge = idp1.authorizeRequests.at(-1)?.get('code_challenge');
    expect(s256(exchange?.codeVerifier ?? '')).toBe(challenge);
    expect(idp1.userInfoRequests.at(-1)).toBe(accessToken);
    // Neither the provider's token nor the client secret nor the cookie reaches the logs.
    expect(fe.logs.text).not.toContain(accessToken);
    expect(fe.logs.text).not.toContain(idp1.clientSecret);
    expect(fe.logs.text).not.toContain(session.split('=')[1] ?? '');
  });

  it('the provider really checks the PKCE verifier', async () => {
    // Directly: a code redeemed with the wrong verifier is refused.
    const { authorizeUrl } = await startLogin(fe, 'open1');
    const code = (await idp1.authorize(authorizeUrl)).searchParams.get('code') ?? '';
    const wrong = await fetch(new URL('/token', idp1.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: authorizeUrl.searchParams.get('redirect_uri') ?? '',
        client_id: idp1.clientId,
        client_secret: idp1.clientSecret,
        code_verifier: 'x'.repeat(43),
      }),
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid code verifier.' });

    // Through the frontend: a code obtained in login B injected into login A's callback fails,
    // because A's verifier does not match B's challenge.
    const a = await startLogin(fe, 'open1');
    const b = await startLogin(fe, 'open1');
    const backA = await idp1.authorize(a.authorizeUrl);
    const backB = await idp1.authorize(b.authorizeUrl);
    backA.searchParams.set('code', backB.searchParams.get('code') ?? '');
    const injected = await callback(fe, backA, a.loginCookie);
    expect(injected.status).toBe(502);
    expect(injected.body).toContain('<h1>Login failed</h1>');
    expect(injected.body).toContain('invalid_grant: Invalid code verifier.');
    expect(idp1.tokenRequests.at(-1)?.error).toBe('invalid_grant');
    expect(cookiesFrom(injected)).toBe('');
  });

  it('refuses an email the provider has not verified', async () => {
    idp1.nextUser = { email: 'alice@example.com', email_verified: false };
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'open1');
    const reply = await callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('<h1>Access refused</h1>');
    expect(reply.body).toContain('the email address alice@example.com is not verified by the provider');
    expect(cookiesFrom(reply)).toBe('');
  });

  it('matches email patterns case-insensitively and anchored', async () => {
    idp1.nextUser = { email: 'eve@example.com.evil.io', email_verified: true };
    const evil = await startLogin(fe, 'one');
    const refused = await callback(fe, await idp1.authorize(evil.authorizeUrl), evil.loginCookie);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('eve@example.com.evil.io is not allowed to access this share');
    expect(cookiesFrom(refused)).toBe('');

    // The refused address is echoed escaped.
    idp1.nextUser = { email: '<img/src/onerror=alert(1)>@evil.io', email_verified: true };
    const markup = await startLogin(fe, 'one');
    const escaped = await callback(fe, await idp1.authorize(markup.authorizeUrl), markup.loginCookie);
    expect(escaped.status).toBe(403);
    expect(escaped.body).toContain('&lt;img/src/onerror=alert(1)&gt;@evil.io is not allowed');
    expect(escaped.body).not.toContain('<img');

    idp1.nextUser = { email: 'ALICE@EXAMPLE.COM', email_verified: true };
    const { seen } = await login('one');
    expect(seen.headers['svc-auth-email']).toBe('ALICE@EXAMPLE.COM');
  });

  it('shows a clear, escaped page when the provider refuses the login', async () => {
    idp1.denyWith = { error: 'access_denied', error_description: '<script>alert(1)</script>' };
    const exchanges = idp1.tokenRequests.length;
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'open1');
    const back = await idp1.authorize(authorizeUrl);
    expect(back.searchParams.get('error')).toBe('access_denied');
    const reply = await callback(fe, back, loginCookie);
    expect(reply.status).toBe(502);
    expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(reply.body).toContain('<h1>Login failed</h1>');
    expect(reply.body).toContain('access_denied: &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(reply.body).not.toContain('<script>');
    expect(idp1.tokenRequests.length).toBe(exchanges);
  });

  it('shows a clear page when the token endpoint fails', async () => {
    idp1.tokenFailure = { status: 503, body: { error: 'temporarily_unavailable' } };
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'open1');
    const reply = await callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
    expect(reply.status).toBe(502);
    expect(reply.body).toContain('<h1>Login failed</h1>');
    expect(reply.body).toContain('idp1: token exchange refused (HTTP 503, temporarily_unavailable)');
    expect(cookiesFrom(reply)).toBe('');
  });

  it('logout revokes the exact access token, clears the cookie and redirects to a share', async () => {
    const { session, accessToken } = await login('open1');
    expect(idp1.isActive(accessToken)).toBe(true);
    const target = shareUrl(fe, 'open1', '/bye');
    const reply = await logout(`/idp1/logout?redirect_url=${encodeURIComponent(target)}`, session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(target);
    expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; Path=\/; Max-Age=0;/);
    expect(idp1.revocationRequests.at(-1)).toBe(accessToken);
    expect(idp1.isActive(accessToken)).toBe(false);
    // The provider now refuses the token at user info.
    const info = await fetch(new URL('/v1/userinfo', idp1.url), {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    expect(info.status).toBe(401);
  });

  it("logout without redirect_url goes to the provider's login page", async () => {
    const { session, accessToken } = await login('open1');
    const reply = await logout('/idp1/logout', session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(idp1.loginUrl);
    expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    expect(idp1.revocationRequests.at(-1)).toBe(accessToken);
  });

  it('logout clears the session even when revocation fails', async () => {
    const { session, accessToken } = await login('open1');
    idp1.revokeStatus = 500;
    const reply = await logout('/idp1/logout', session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(idp1.loginUrl);
    expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    expect(idp1.revocationRequests.at(-1)).toBe(accessToken);
    expect(idp1.isActive(accessToken)).toBe(true);
  });

  it('logout twice, or without a session, is harmless', async () => {
    const { session } = await login('open1');
    for (const cookie of [session, session, undefined]) {
      const reply = await logout('/idp1/logout', cookie);
      expect(reply.status).toBe(302);
      expect(reply.headers.location).toBe(idp1.loginUrl);
      expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    }
    // Revoked once: the copy of the cookie used for the second logout is already logged out here.
    expect(idp1.revocationRequests.filter((t) => t === idp1.issuedTokens.at(-1))).toHaveLength(1);
  });

  it('an idp1 session is bound to its provider: not accepted on an idp2 share, not logged out by idp2', async () => {
    const { session, accessToken } = await login('open1');
    const onIdp2Share = await get(fe.port, fe.host('two'), '/', { headers: { cookie: session } });
    expect(onIdp2Share.status).toBe(302);
    expect((await providerRedirect(fe, onIdp2Share)).headers.location).toMatch(
      new RegExp(`^${idp2.url.origin}/login/oauth/authorize\\?`),
    );

    // Same share token, same keys, but there the share is protected by idp2: the session's provider binds it.
    const flip = await login('flip');
    const sameShareOtherProvider = await get(shortFe.port, shortFe.host('flip'), '/', {
      headers: { cookie: flip.session },
    });
    expect(sameShareOtherProvider.status).toBe(302);
    expect((await providerRedirect(shortFe, sameShareOtherProvider)).headers.location).toMatch(
      new RegExp(`^${idp2.url.origin}/login/oauth/authorize\\?`),
    );

    const revocations = idp1.revocationRequests.length;
    const deletions = idp2.deletions.length;
    const reply = await logout('/idp2/logout', session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(idp2.loginUrl);
    expect(reply.headers['set-cookie']).toBeUndefined();
    expect(idp1.revocationRequests.length).toBe(revocations);
    expect(idp2.deletions.length).toBe(deletions);
    expect(idp1.isActive(accessToken)).toBe(true);
    const still = await get(fe.port, fe.host('open1'), '/', { headers: { cookie: session } });
    expect(still.status).toBe(200);
  });

  it('restarts the login at the check interval (no refresh for idp1)', async () => {
    const { session } = await login('quick1', '/page');
    fe.clock.advance(1200);
    const authorizations = idp1.authorizeRequests.length;
    const reply = await get(fe.port, fe.host('quick1'), '/page', { headers: { cookie: session } });
    const started = await providerRedirect(fe, reply);
    const next = new URL(started.headers.location ?? '');
    expect(next.origin + next.pathname).toBe(new URL('/o/oauth2/v2/auth', idp1.url).href);
    // The new login goes through the provider again and lands back on the same page.
    const done = await callback(fe, await idp1.authorize(next), `${cookiesFrom(reply)}; ${cookiesFrom(started)}`);
    expect(idp1.authorizeRequests.length).toBe(authorizations + 1);
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe(shareUrl(fe, 'quick1', '/page'));
  });

  it('refuses a callback that arrives after intermediate_lifetime', async () => {
    // In time, the same frontend completes the login.
    await login('open1', '/', shortFe);
    const exchanges = idp1.tokenRequests.length;
    const { authorizeUrl, loginCookie } = await startLogin(shortFe, 'open1');
    expect(loginCookie).toMatch(/(^|; )svc-auth-session-login=/);
    const back = await idp1.authorize(authorizeUrl);
    shortFe.clock.advance(2500);
    const reply = await callback(shortFe, back, loginCookie);
    expect(reply.status).toBe(400);
    expect(reply.body).toContain('<h1>Login failed</h1>');
    expect(reply.body).toContain('the login state is invalid or expired. Open the share again to start a new login.');
    expect(cookiesFrom(reply)).toBe('');
    expect(idp1.tokenRequests.length).toBe(exchanges);
  });
});
