import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { callback, providerRedirect, shareUrl, startLogin } from '../support/oauth-flow.ts';
import { s256, startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { startIdp2Server, type Idp2Email, type Idp2Server } from '../support/idp2-server.ts';

const DEFAULT_EMAILS: Idp2Email[] = [
  { email: 'octo@users.noreply.example', primary: false, verified: true, visibility: null },
  { email: 'Octo@Example.com', primary: true, verified: true, visibility: 'private' },
];

/**
 * The idp2 (code-hosting platform) provider type end to end against a local server implementing its
 * OAuth app contract: authorize, access_token (errors as HTTP 200), `/user/emails` on an API base
 * with a path, and token deletion under basic auth at logout.
 */
describe('idp2 provider flow', () => {
  let idp1: Idp1Server;
  let idp2: Idp2Server;
  let backend: EchoBackend;
  let fe: TestFrontend;
  let shortFe: TestFrontend;

  beforeAll(async () => {
    [idp1, idp2, backend] = await Promise.all([startIdp1Server(), startIdp2Server(), startEchoBackend()]);
    const share = (token: string, extra: Record<string, unknown>) => ({ token, target: backend.url.href, ...extra });
    const shares = [
      share('two', { oauth_provider: 'idp2', oauth_email_address_patterns: ['*@example.com'] }),
      share('open2', { oauth_provider: 'idp2' }),
      share('quick2', { oauth_provider: 'idp2', oauth_check_interval: '1s' }),
      share('one', { oauth_provider: 'idp1' }),
    ];
    const providers = [idp1.providerConfig('idp1'), idp2.providerConfig('idp2')];
    // Same keys and domain, and share `flip` under another provider: as if the share's provider changed.
    fe = await startTestFrontend({ providers, shares: [...shares, share('flip', { oauth_provider: 'idp2' })] });
    shortFe = await startTestFrontend({
      providers,
      shares: [...shares, share('flip', { oauth_provider: 'idp1' })],
      oauth: { intermediate_lifetime: '2s' },
    });
    idp1.redirectUris = [fe, shortFe].map((f) => `http://${f.authHost}/idp1/auth/callback`);
    idp2.redirectUris = [fe, shortFe].map((f) => `http://${f.authHost}/idp2/auth/callback`);
    idp2.nextEmails = DEFAULT_EMAILS;
  });

  afterEach(() => {
    idp2.nextEmails = DEFAULT_EMAILS;
    idp2.denyWith = undefined;
    idp2.tokenFailure = undefined;
    idp2.deleteStatus = undefined;
  });

  afterAll(async () => {
    await Promise.all([fe?.close(), shortFe?.close()]);
    await Promise.all([idp1?.close(), idp2?.close(), backend?.close()]);
  });

  const authorizeEndpoint = () => new URL('/login/oauth/authorize', idp2.url).href;

  const login = async (token: string, path = '/', f = fe) => {
    const { authorizeUrl, loginCookie } = await startLogin(f, token, path);
    const done = await callback(f, await idp2.authorize(authorizeUrl), loginCookie);
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe(shareUrl(f, token, path));
    const session = cookiesFrom(done);
    const page = await get(f.port, f.host(token), path, { headers: { cookie: session } });
    expect(page.status).toBe(200);
    const seen = JSON.parse(page.body) as { url: string; headers: Record<string, string | undefined> };
    return { session, seen, accessToken: idp2.issuedTokens.at(-1) as string };
  };

  /** A logout on a share host of the provider (the session cookie is that host's own). */
  const logout = (path: string, cookie?: string, token = path.startsWith('/idp2/') ? 'open2' : 'one') =>
    get(fe.port, fe.host(token), path, cookie === undefined ? {} : { headers: { cookie } });

  const emailsWith = (token: string) =>
    fetch(`${idp2.apiBaseUrl}/user/emails`, { headers: { authorization: `Bearer ${token}`, 'user-agent': 'test' } });

  it('logs in and forwards provider, primary email and expiry to the backend', async () => {
    const { authorizeUrl } = await startLogin(fe, 'two', '/a/b?c=d');
    expect(authorizeUrl.origin + authorizeUrl.pathname).toBe(authorizeEndpoint());
    const params = authorizeUrl.searchParams;
    expect(params.get('client_id')).toBe(idp2.clientId);
    expect(params.get('redirect_uri')).toBe(`http://${fe.authHost}/idp2/auth/callback`);
    expect(params.get('scope')).toBe('user:email');
    expect(params.get('code_challenge_method')).toBe('S256');

    const { seen, accessToken } = await login('two', '/a/b?c=d');
    expect(seen.url).toBe('/a/b?c=d');
    expect(seen.headers['svc-auth-provider']).toBe('idp2');
    // The primary address, not the first one listed.
    expect(seen.headers['svc-auth-email']).toBe('Octo@Example.com');
    const expires = seen.headers['svc-auth-expires'] ?? '';
    expect(expires).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(Date.parse(expires) - Date.now()).toBeGreaterThan(6 * 3600_000 - 60_000);
    expect(Date.parse(expires) - Date.now()).toBeLessThanOrEqual(6 * 3600_000);
    expect(seen.headers.cookie ?? '').not.toContain('svc-auth');

    const exchange = idp2.tokenRequests.at(-1);
    expect(exchange?.error).toBeUndefined();
    expect(s256(exchange?.codeVerifier ?? '')).toBe(idp2.authorizeRequests.at(-1)?.get('code_challenge'));
    // The API refuses requests without a User-Agent; the frontend sends one.
    expect(idp2.apiUserAgents.at(-1)).not.toBe('');
    expect(fe.logs.text).not.toContain(accessToken);
    expect(fe.logs.text).not.toContain(idp2.clientSecret);
  });

  it('the provider really checks the PKCE verifier', async () => {
    // A code obtained in login B injected into login A's callback: A's verifier does not match B's challenge.
    const a = await startLogin(fe, 'open2');
    const b = await startLogin(fe, 'open2');
    const backA = await idp2.authorize(a.authorizeUrl);
    const backB = await idp2.authorize(b.authorizeUrl);
    backA.searchParams.set('code', backB.searchParams.get('code') ?? '');
    const injected = await callback(fe, backA, a.loginCookie);
    expect(injected.status).toBe(502);
    expect(injected.body).toContain('<h1>Login failed</h1>');
    // The provider answered HTTP 200 with an error field; the frontend did not mistake it for success.
    expect(injected.body).toContain(
      'token exchange refused (HTTP 200, invalid_grant: The code_verifier does not match the code_challenge.)',
    );
    expect(idp2.tokenRequests.at(-1)?.error).toBe('invalid_grant');
    expect(cookiesFrom(injected)).toBe('');
  });

  it('refuses an account whose primary email is not verified', async () => {
    idp2.nextEmails = [
      { email: 'octo@example.com', primary: true, verified: false, visibility: 'public' },
      { email: 'other@example.com', primary: false, verified: true, visibility: null },
    ];
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'open2');
    const reply = await callback(fe, await idp2.authorize(authorizeUrl), loginCookie);
    expect(reply.status).toBe(403);
    expect(reply.body).toContain('<h1>Access refused</h1>');
    expect(reply.body).toContain('the email address octo@example.com is not verified by the provider');
    expect(cookiesFrom(reply)).toBe('');
  });

  it('matches email patterns case-insensitively and anchored', async () => {
    idp2.nextEmails = [{ email: 'eve@example.com.evil.io', primary: true, verified: true, visibility: null }];
    const evil = await startLogin(fe, 'two');
    const refused = await callback(fe, await idp2.authorize(evil.authorizeUrl), evil.loginCookie);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('eve@example.com.evil.io is not allowed to access this share');
    expect(cookiesFrom(refused)).toBe('');

    idp2.nextEmails = [{ email: 'ALICE@EXAMPLE.COM', primary: true, verified: true, visibility: null }];
    const { seen } = await login('two');
    expect(seen.headers['svc-auth-email']).toBe('ALICE@EXAMPLE.COM');
  });

  it('shows a clear, escaped page when the user denies access', async () => {
    idp2.denyWith = { error: 'access_denied', error_description: '<script>alert(1)</script>' };
    const exchanges = idp2.tokenRequests.length;
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'open2');
    const reply = await callback(fe, await idp2.authorize(authorizeUrl), loginCookie);
    expect(reply.status).toBe(502);
    expect(reply.body).toContain('<h1>Login failed</h1>');
    expect(reply.body).toContain('access_denied: &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(reply.body).not.toContain('<script>');
    expect(idp2.tokenRequests.length).toBe(exchanges);
  });

  it('shows a clear page when the token endpoint refuses (HTTP 200 with error) or fails', async () => {
    idp2.tokenFailure = {
      status: 200,
      body: { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' },
    };
    const first = await startLogin(fe, 'open2');
    const refused = await callback(fe, await idp2.authorize(first.authorizeUrl), first.loginCookie);
    expect(refused.status).toBe(502);
    expect(refused.body).toContain(
      'idp2: token exchange refused (HTTP 200, bad_verification_code: The code passed is incorrect or expired.)',
    );
    expect(cookiesFrom(refused)).toBe('');

    idp2.tokenFailure = { status: 500, body: { message: 'Server Error' } };
    const second = await startLogin(fe, 'open2');
    const failed = await callback(fe, await idp2.authorize(second.authorizeUrl), second.loginCookie);
    expect(failed.status).toBe(502);
    expect(failed.body).toContain('<h1>Login failed</h1>');
    expect(failed.body).toContain('idp2: token exchange refused (HTTP 500');
  });

  it('logout deletes the exact token with basic auth, clears the cookie and redirects to a share', async () => {
    const { session, accessToken } = await login('open2');
    expect((await emailsWith(accessToken)).status).toBe(200);
    const target = shareUrl(fe, 'open2', '/bye');
    const reply = await logout(`/idp2/logout?redirect_url=${encodeURIComponent(target)}`, session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(target);
    expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; Path=\/; Max-Age=0;/);
    expect(idp2.deletions.at(-1)).toEqual({
      clientIdInPath: idp2.clientId,
      basic: `${idp2.clientId}:${idp2.clientSecret}`,
      accessToken,
      status: 204,
    });
    expect(idp2.isActive(accessToken)).toBe(false);
    const after = await emailsWith(accessToken);
    expect(after.status).toBe(401);
    expect(await after.json()).toEqual({ message: 'Bad credentials' });
  });

  it("logout without redirect_url goes to the provider's login page", async () => {
    const { session, accessToken } = await login('open2');
    const reply = await logout('/idp2/logout', session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(idp2.loginUrl);
    expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    expect(idp2.deletions.at(-1)?.accessToken).toBe(accessToken);
  });

  it('logout clears the session even when token deletion fails', async () => {
    const { session, accessToken } = await login('open2');
    idp2.deleteStatus = 500;
    const reply = await logout('/idp2/logout', session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(idp2.loginUrl);
    expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    expect(idp2.deletions.at(-1)).toMatchObject({ accessToken, status: 500 });
    expect(idp2.isActive(accessToken)).toBe(true);
  });

  it('logout twice, or without a session, is harmless', async () => {
    const { session, accessToken } = await login('open2');
    for (const cookie of [session, session, undefined]) {
      const reply = await logout('/idp2/logout', cookie);
      expect(reply.status).toBe(302);
      expect(reply.headers.location).toBe(idp2.loginUrl);
      expect(reply.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
    }
    // Deleted once: the copy of the cookie used for the second logout is already logged out here.
    expect(idp2.deletions.filter((d) => d.accessToken === accessToken).map((d) => d.status)).toEqual([204]);
  });

  it('an idp2 session is bound to its provider: not accepted on an idp1 share, not logged out by idp1', async () => {
    const { session, accessToken } = await login('open2');
    const onIdp1Share = await get(fe.port, fe.host('one'), '/', { headers: { cookie: session } });
    expect(onIdp1Share.status).toBe(302);
    expect((await providerRedirect(fe, onIdp1Share)).headers.location).toMatch(
      new RegExp(`^${idp1.url.origin}/o/oauth2/v2/auth\\?`),
    );

    // Same share token, same keys, but there the share is protected by idp1: the session's provider binds it.
    const flip = await login('flip');
    const sameShareOtherProvider = await get(shortFe.port, shortFe.host('flip'), '/', {
      headers: { cookie: flip.session },
    });
    expect(sameShareOtherProvider.status).toBe(302);
    expect((await providerRedirect(shortFe, sameShareOtherProvider)).headers.location).toMatch(
      new RegExp(`^${idp1.url.origin}/o/oauth2/v2/auth\\?`),
    );

    const revocations = idp1.revocationRequests.length;
    const deletions = idp2.deletions.length;
    const reply = await logout('/idp1/logout', session);
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(idp1.loginUrl);
    expect(reply.headers['set-cookie']).toBeUndefined();
    expect(idp1.revocationRequests.length).toBe(revocations);
    expect(idp2.deletions.length).toBe(deletions);
    expect(idp2.isActive(accessToken)).toBe(true);
    const still = await get(fe.port, fe.host('open2'), '/', { headers: { cookie: session } });
    expect(still.status).toBe(200);
  });

  it('restarts the login at the check interval (no refresh for idp2)', async () => {
    const { session } = await login('quick2', '/page');
    fe.clock.advance(1200);
    const reply = await get(fe.port, fe.host('quick2'), '/page', { headers: { cookie: session } });
    const started = await providerRedirect(fe, reply);
    const next = new URL(started.headers.location ?? '');
    expect(next.origin + next.pathname).toBe(authorizeEndpoint());
    const done = await callback(fe, await idp2.authorize(next), `${cookiesFrom(reply)}; ${cookiesFrom(started)}`);
    expect(done.status).toBe(302);
    expect(done.headers.location).toBe(shareUrl(fe, 'quick2', '/page'));
  });

  it('refuses a callback that arrives after intermediate_lifetime', async () => {
    await login('open2', '/', shortFe);
    const exchanges = idp2.tokenRequests.length;
    const { authorizeUrl, loginCookie } = await startLogin(shortFe, 'open2');
    const back = await idp2.authorize(authorizeUrl);
    shortFe.clock.advance(2500);
    const reply = await callback(shortFe, back, loginCookie);
    expect(reply.status).toBe(400);
    expect(reply.body).toContain('<h1>Login failed</h1>');
    expect(reply.body).toContain('the login state is invalid or expired. Open the share again to start a new login.');
    expect(cookiesFrom(reply)).toBe('');
    expect(idp2.tokenRequests.length).toBe(exchanges);
  });
});
