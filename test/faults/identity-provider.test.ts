import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevIdentityProvider } from '../../devidp/provider.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get, repeatVisits } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, followStart, providerRedirect, startLogin } from '../support/oauth-flow.ts';
import { mintSessionCookie } from '../support/session.ts';
import { frontendMetric, issuerProvider, loginThroughIssuer } from '../support/issuer-login.ts';
import { startTestIssuer, type TestIssuer } from '../support/test-issuer.ts';

/**
 * Identity provider outages against a running frontend: a provider that is down (connection
 * refused) or slow (accepts, never answers). Sessions already made keep working until their
 * re-check; new logins get a clear page within the provider timeout, never a hang or a crash; and
 * logins work again once the provider is back.
 */
const figures = suiteFigures('identity-provider');
let backend: EchoBackend;
beforeAll(async () => {
  backend = await startEchoBackend();
});
afterAll(async () => {
  figures.write();
  await backend?.close();
});

describe('idp1 down, then back', () => {
  let idp1: Idp1Server;
  let fe: TestFrontend;
  beforeAll(async () => {
    idp1 = await startIdp1Server();
    fe = await startTestFrontend({
      providers: [idp1.providerConfig('idp1')],
      shares: [
        { token: 'one', target: backend.url.href, oauth_provider: 'idp1', oauth_check_interval: '1h' },
        { token: 'open', target: backend.url.href },
      ],
    });
    idp1.redirectUris = [`http://${fe.authHost}/idp1/auth/callback`];
  });
  afterAll(async () => {
    await fe?.close();
    await idp1?.close();
  });

  it('keeps existing sessions until their re-check, shows a clear page to new logins, and recovers', async () => {
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
    const session = cookiesFrom(await callback(fe, await idp1.authorize(authorizeUrl), loginCookie));
    // A second visitor is at the provider (code issued) when it goes down.
    const pending = await startLogin(fe, 'one');
    const pendingBack = await idp1.authorize(pending.authorizeUrl);
    await idp1.close();

    const visits = 20;
    let served = 0;
    for (let i = 0; i < visits; i++) {
      if ((await get(fe.port, fe.host('one'), '/', { headers: { cookie: session } })).status === 200) served += 1;
    }
    expect(served).toBe(visits);

    const started = Date.now();
    const failed = await callback(fe, pendingBack, pending.loginCookie);
    const failedMs = Date.now() - started;
    expect(failed.status).toBe(502);
    expect(failed.body).toContain('Login failed');
    expect(failed.body).toMatch(/idp1: token exchange failed: /);
    expect(
      await frontendMetric(
        fe,
        'svc_frontend_provider_failures_total{provider="idp1",operation="login",code="provider_unreachable"}',
      ),
    ).toBe(1);

    // At the re-check the session cannot be confirmed: the login restarts (a redirect, not an error).
    fe.clock.advance(3600_000 + 1_000);
    const recheck = await get(fe.port, fe.host('one'), '/', { headers: { cookie: session } });
    expect((await providerRedirect(fe, recheck)).headers.location).toMatch(new RegExp(`^${idp1.url.origin}/`));
    expect((await get(fe.port, fe.host('open'), '/')).status).toBe(200);

    await idp1.start();
    const again = await startLogin(fe, 'one');
    const done = await callback(fe, await idp1.authorize(again.authorizeUrl), again.loginCookie);
    expect(done.status).toBe(302);

    figures.fault({
      fault: 'Identity provider down (idp1, connection refused)',
      injections: 1,
      outcome: `${served}/${visits} requests with an existing session served; a login in flight got a 502 "Login failed" page after ${failedMs} ms; re-check restarted the login; logins worked again once the provider was back`,
      lost: 0,
    });
  });
});

describe('idp1 slow (accepts, never answers)', () => {
  let idp1: Idp1Server;
  let silent: Server;
  const held: Socket[] = [];
  let fe: TestFrontend;
  beforeAll(async () => {
    idp1 = await startIdp1Server();
    silent = createServer((socket) => held.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    fe = await startTestFrontend({
      providers: [{ ...idp1.providerConfig('idp1'), token_url: `http://127.0.0.1:${port}/token` }],
      shares: [
        { token: 'one', target: backend.url.href, oauth_provider: 'idp1' },
        { token: 'open', target: backend.url.href },
      ],
    });
    idp1.redirectUris = [`http://${fe.authHost}/idp1/auth/callback`];
  });
  afterAll(async () => {
    await fe?.close();
    for (const s of held) s.destroy();
    silent?.close();
    await idp1?.close();
  });

  it('answers the callback with a clear page at the provider timeout, serving others meanwhile', async () => {
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
    const back = await idp1.authorize(authorizeUrl);
    const started = Date.now();
    const waiting = callback(fe, back, loginCookie);
    const visitor = repeatVisits(250, () => get(fe.port, fe.host('open'), '/'));
    const reply = await waiting;
    const others = await visitor.stop();
    const tookMs = Date.now() - started;
    expect(reply.status).toBe(502);
    expect(reply.body).toContain('Login failed');
    expect(reply.body).toMatch(/token exchange failed: .*(timeout|aborted)/i);
    expect(others.length).toBeGreaterThan(10);
    expect(others.every((s) => s === 200)).toBe(true);
    figures.fault({
      fault: 'Identity provider slow (token endpoint accepts, never answers)',
      injections: 1,
      outcome: `callback answered 502 "Login failed" after ${Math.round(tookMs / 1000)} s (provider timeout 10 s); ${others.length}/${others.length} other requests served meanwhile`,
      lost: 0,
    });
  }, 30_000);
});

describe('oidc provider down at start-up, then back', () => {
  it('is not ready, shows a clear page to new logins, serves existing sessions, and becomes ready when the provider is back', async () => {
    const idp = await startDevIdentityProvider();
    const port = Number(idp.issuer.port);
    const provider = {
      name: 'dev',
      type: 'oidc',
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      scopes: ['openid', 'email'],
      issuer: idp.issuer.href,
      supports_pkce: true,
    };
    await idp.close();
    const fe = await startTestFrontend({
      providers: [provider],
      shares: [{ token: 'one', target: backend.url.href, oauth_provider: 'dev' }],
    });
    let back: Awaited<ReturnType<typeof startDevIdentityProvider>> | undefined;
    try {
      const metricsPort = fe.frontend.metricsPort as number;
      expect((await get(metricsPort, `127.0.0.1:${metricsPort}`, '/readyz')).status).toBe(503);
      const started = Date.now();
      // The share host sends the visitor to the endpoint host's start path, which answers the page.
      const visitor = await followStart(fe, await get(fe.port, fe.host('one'), '/'));
      const answeredMs = Date.now() - started;
      expect(visitor.status).toBe(502);
      expect(visitor.body).toContain('Login unavailable');
      const existing = mintSessionCookie({ share: 'one', provider: 'dev' });
      expect((await get(fe.port, fe.host('one'), '/', { headers: { cookie: existing } })).status).toBe(200);

      back = await startDevIdentityProvider({ port });
      const redirect = await providerRedirect(fe, await get(fe.port, fe.host('one'), '/'));
      expect(redirect.headers.location).toMatch(new RegExp(`^${idp.issuer.origin}/`));
      figures.fault({
        fault: 'Identity provider down at start-up (oidc discovery refused)',
        injections: 1,
        outcome: `/readyz 503; new visitors got a 502 "Login unavailable" page in ${answeredMs} ms; existing sessions served; logins redirected again as soon as the provider was back`,
        lost: 0,
      });
    } finally {
      await fe.close();
      await back?.close();
    }
  });
});

describe('an oidc provider failing part-way, or answering with a forged token', () => {
  let issuer: TestIssuer;
  let fe: TestFrontend;
  beforeAll(async () => {
    issuer = await startTestIssuer();
    fe = await startTestFrontend({
      providers: [issuerProvider(issuer, 'oidc')],
      shares: [{ token: 'one', target: backend.url.href, oauth_provider: 'oidc' }],
    });
  });
  afterAll(async () => {
    await fe?.close();
    await issuer?.close();
  });

  const failures = (operation: string, code: string) =>
    frontendMetric(fe, `svc_frontend_provider_failures_total{provider="oidc",operation="${operation}",code="${code}"}`);

  it('revokes the access token at logout even when revoking the refresh token fails, and logs each failure without a token', async () => {
    const { reply, cookie } = await loginThroughIssuer(fe, issuer, 'one', 'oidc');
    expect(reply.status).toBe(302);
    issuer.behaviour.revocation = (hint) => (hint === 'refresh_token' ? 503 : 200);
    const out = await get(fe.port, fe.host('one'), '/oidc/logout', { headers: { cookie } });
    expect(out.status).toBe(302);
    expect(issuer.revocations).toEqual([
      { hint: 'refresh_token', token: 'refresh-token-secret' },
      { hint: 'access_token', token: 'access-token-secret' },
    ]);
    expect(await failures('logout', 'provider_unreachable')).toBe(1);

    // Both failing: both tried, both logged.
    const second = await loginThroughIssuer(fe, issuer, 'one', 'oidc');
    issuer.revocations.length = 0;
    issuer.behaviour.revocation = () => 503;
    await get(fe.port, fe.host('one'), '/oidc/logout', { headers: { cookie: second.cookie } });
    expect(issuer.revocations.map((r) => r.hint)).toEqual(['refresh_token', 'access_token']);
    const logged = fe.logs.lines.filter((l) => l.includes('logout: revocation failed'));
    expect(logged).toHaveLength(3);
    expect(logged.filter((l) => l.includes('revocation of the access token refused (HTTP 503'))).toHaveLength(1);
    for (const secret of ['refresh-token-secret', 'access-token-secret']) expect(fe.logs.text).not.toContain(secret);
    figures.fault({
      fault: 'Identity provider failing token revocation at logout (oidc, HTTP 503)',
      injections: 2,
      outcome: `the other token was still revoked (${issuer.revocations.length} revocation requests for 2 tokens when both failed); the local session cleared; each failure logged by token type, no token in the logs`,
      lost: 0,
    });
  });

  it('tells a forged ID token from an unreachable provider, in the page, the log and the metrics', async () => {
    issuer.behaviour.idToken = (claims) => issuer.sign(claims, 'other', 'k1');
    const forged = (await loginThroughIssuer(fe, issuer, 'one', 'oidc')).reply;
    expect(forged.status).toBe(401);
    expect(forged.body).toContain('ID token is not valid');

    issuer.reset();
    issuer.behaviour.hangUp = ['/token'];
    const down = (await loginThroughIssuer(fe, issuer, 'one', 'oidc')).reply;
    expect(down.status).toBe(502);
    expect(down.body).toMatch(/code exchange failed: socket hang up/);
    issuer.reset();

    expect(await failures('login', 'invalid_token')).toBe(1);
    expect(await failures('login', 'provider_unreachable')).toBe(1);
    expect(await frontendMetric(fe, 'svc_frontend_logins_total{provider="oidc",result="invalid_token"}')).toBe(1);
    expect(await frontendMetric(fe, 'svc_frontend_logins_total{provider="oidc",result="provider_unreachable"}')).toBe(
      1,
    );
    expect(fe.logs.text).toMatch(/"result":"invalid_token"/);
    expect(fe.logs.text).toMatch(/"result":"provider_unreachable"/);
    figures.fault({
      fault: 'Identity provider unreachable mid-login vs a forged ID token (oidc)',
      injections: 2,
      outcome: `forged token: ${forged.status} "Login failed", counted as invalid_token; token endpoint hanging up: ${down.status} "Login failed", counted as provider_unreachable (svc_frontend_provider_failures_total, logins_total and the log's result)`,
      lost: 0,
    });
  });
});
