import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { followStart } from '../support/oauth-flow.ts';
import { mintSessionCookie } from '../support/session.ts';

/**
 * The security invariants of ARCHITECTURE.md, each with concrete attack input, against a real
 * frontend and a real backend that records exactly what reaches it.
 */
const idp1 = {
  name: 'google',
  type: 'idp1',
  client_id: 'cid',
  client_secret: 'client-secret-never-logged',
  authorize_url: 'http://127.0.0.1:9/auth',
  token_url: 'http://127.0.0.1:9/token',
  user_info_url: 'http://127.0.0.1:9/userinfo',
  revocation_url: 'http://127.0.0.1:9/revoke',
  login_url: 'http://127.0.0.1:9/login',
};
const idp2 = {
  ...idp1,
  name: 'github',
  type: 'idp2',
  user_info_url: undefined,
  revocation_url: undefined,
  api_base_url: 'http://127.0.0.1:9/api',
};

describe('frontend security invariants', () => {
  let backend: EchoBackend;
  let fe: TestFrontend;

  beforeAll(async () => {
    backend = await startEchoBackend();
    fe = await startTestFrontend({
      providers: [idp1, JSON.parse(JSON.stringify(idp2)) as Record<string, unknown>],
      shares: [
        { token: 'open', target: backend.url.href },
        {
          token: 'alpha',
          target: backend.url.href,
          oauth_provider: 'google',
          oauth_email_address_patterns: ['*@example.com'],
        },
        { token: 'beta', target: backend.url.href, oauth_provider: 'google' },
        { token: 'gamma', target: backend.url.href, oauth_provider: 'github' },
      ],
    });
  });
  afterAll(async () => {
    await fe?.close();
    await backend?.close();
  });

  const lastSeen = () => backend.seen[backend.seen.length - 1]!;
  const identityLike = (raw: readonly string[]) =>
    raw.filter((_, i) => i % 2 === 0).filter((n) => n.toLowerCase().replace(/[_.]/g, '-').startsWith('svc-auth'));
  const spoofed: [string, string][] = [
    ['svc-auth-email', 'evil@attacker.io'],
    ['SVC-AUTH-EMAIL', 'evil@attacker.io'],
    ['svc_auth_email', 'evil@attacker.io'],
    ['svc.auth.email', 'evil@attacker.io'],
    ['Svc-Auth_Provider', 'evil'],
    ['svc-auth-email', 'second@attacker.io'],
    ['svc-auth-expires', '2999-01-01T00:00:00Z'],
    ['svc-auth-anything', 'x'],
  ];

  describe('identity headers are only ever set by the frontend', () => {
    it('strips every look-alike on a share without OAuth', async () => {
      const reply = await get(fe.port, fe.host('open'), '/', { rawHeaders: spoofed });
      expect(reply.status).toBe(200);
      expect(identityLike(lastSeen().rawHeaders)).toEqual([]);
    });

    it('replaces look-alikes with the session identity on an OAuth share', async () => {
      const cookie = mintSessionCookie({ share: 'alpha', provider: 'google', email: 'alice@example.com' });
      const reply = await get(fe.port, fe.host('alpha'), '/', { rawHeaders: [...spoofed, ['Cookie', cookie]] });
      expect(reply.status).toBe(200);
      const raw = lastSeen().rawHeaders;
      expect(identityLike(raw).sort()).toEqual(['svc-auth-email', 'svc-auth-expires', 'svc-auth-provider']);
      expect(lastSeen().headers['svc-auth-email']).toBe('alice@example.com');
      expect(lastSeen().headers['svc-auth-provider']).toBe('google');
    });

    it('ignores the hop-by-hop trick (Connection naming an identity header)', async () => {
      const cookie = mintSessionCookie({ share: 'alpha', provider: 'google', email: 'alice@example.com' });
      const reply = await get(fe.port, fe.host('alpha'), '/', {
        rawHeaders: [
          ['Connection', 'keep-alive, svc-auth-email, svc_auth_provider, Svc-Auth-Expires'],
          ['Cookie', cookie],
        ],
      });
      expect(reply.status).toBe(200);
      expect(lastSeen().headers['svc-auth-email']).toBe('alice@example.com');
      expect(lastSeen().headers['svc-auth-provider']).toBe('google');
      expect(lastSeen().headers['svc-auth-expires']).toMatch(/Z$/);
    });
  });

  it('sets X-Forwarded-Host/Proto/Port from the share, never from the client, and appends X-Forwarded-For', async () => {
    await get(fe.port, fe.host('open'), '/', {
      headers: {
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'gopher',
        'x-forwarded-port': '1',
        'x-forwarded-for': '203.0.113.9',
      },
    });
    expect(lastSeen().headers).toMatchObject({
      'x-forwarded-host': fe.host('open'),
      'x-forwarded-proto': 'http',
      'x-forwarded-port': String(fe.port),
      'x-forwarded-for': '203.0.113.9, 127.0.0.1',
    });
  });

  describe('the backend never receives svc cookies', () => {
    it('removes the session and login cookies and keeps the others', async () => {
      const cookie = mintSessionCookie({ share: 'alpha', provider: 'google' });
      await get(fe.port, fe.host('alpha'), '/', {
        headers: { cookie: `theme=dark; ${cookie}; svc-auth-session-login=abc; svc-auth-session.sig=x; lang=en` },
      });
      expect(lastSeen().headers.cookie).toBe('theme=dark; lang=en');
    });

    it('drops the Cookie header entirely when only svc cookies were sent, on shares without OAuth too', async () => {
      const cookie = mintSessionCookie({ share: 'alpha', provider: 'google' });
      await get(fe.port, fe.host('open'), '/', { headers: { cookie } });
      expect(lastSeen().headers.cookie).toBeUndefined();
    });
  });

  describe('sessions are bound to one share and one provider', () => {
    it.each([
      ['another share', mintSessionCookie({ share: 'beta', provider: 'google' })],
      ['another provider', mintSessionCookie({ share: 'alpha', provider: 'github' })],
      [
        'a tampered cookie',
        mintSessionCookie({ share: 'alpha', provider: 'google' }).replace(
          /(.)(.{5})$/,
          (_m, c: string, rest: string) => (c === 'A' ? `B${rest}` : `A${rest}`),
        ),
      ],
      [
        'other keys',
        mintSessionCookie(
          { share: 'alpha', provider: 'google' },
          { signing: 'x'.repeat(32), encryption: 'y'.repeat(24) },
        ),
      ],
      ['an expired session', mintSessionCookie({ share: 'alpha', provider: 'google', expiresAt: Date.now() - 1000 })],
      [
        'an email outside the patterns',
        mintSessionCookie({ share: 'alpha', provider: 'google', email: 'eve@example.com.evil.io' }),
      ],
    ])('sends a visitor with %s to the login', async (_what, cookie) => {
      const count = backend.seen.length;
      const reply = await get(fe.port, fe.host('alpha'), '/private', { headers: { cookie } });
      expect(reply.status).toBe(302);
      expect(reply.headers.location).toMatch(
        /^http:\/\/auth\.svc\.localhost:\d+\/google\/auth\/start\?ticket=alpha%7E/,
      );
      expect((await followStart(fe, reply)).headers.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/auth\?/);
      expect(backend.seen.length).toBe(count);
    });

    it('refuses a copy of a session cookie after its logout', async () => {
      const cookie = mintSessionCookie({ share: 'beta', provider: 'google' });
      expect((await get(fe.port, fe.host('beta'), '/', { headers: { cookie } })).status).toBe(200);
      const logout = await get(fe.port, fe.authHost, '/google/logout', { headers: { cookie } });
      expect(logout.status).toBe(302);
      const replay = await get(fe.port, fe.host('beta'), '/', { headers: { cookie } });
      expect((await followStart(fe, replay)).headers.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/auth\?/);
    });

    it('refuses non-GET requests without a session instead of redirecting them', async () => {
      const reply = await get(fe.port, fe.host('alpha'), '/api', { method: 'POST' });
      expect(reply.status).toBe(401);
      expect(reply.body).toContain('Login required');
    });
  });

  describe('cookies', () => {
    it("login cookies are the endpoint host's own (host-only), HttpOnly, SameSite=Lax, and bounded", async () => {
      const reply = await followStart(fe, await get(fe.port, fe.host('alpha'), '/'));
      const setCookie = reply.headers['set-cookie']?.[0] ?? '';
      expect(setCookie).toMatch(/^svc-auth-session-login=/);
      expect(setCookie).toContain('HttpOnly');
      expect(setCookie).toContain('SameSite=Lax');
      expect(setCookie).not.toContain('Domain');
      expect(setCookie).toContain('Max-Age=300');
      expect(setCookie).not.toContain('Secure');
      expect(setCookie.length).toBeLessThan(4000);
    });

    it('are Secure when endpoint_url is https', async () => {
      const secure = await startTestFrontend({
        providers: [idp1],
        shares: [{ token: 'alpha', target: backend.url.href, oauth_provider: 'google' }],
        oauth: { endpoint_url: 'https://auth.svc.localhost:1' },
      });
      try {
        const share = await get(secure.port, secure.host('alpha'), '/');
        expect(share.headers.location).toMatch(/^https:\/\/auth\.svc\.localhost:\d+\/google\/auth\/start\?/);
        // The share host's binding cookie: `__Host-`, so host-only, Secure, Path=/ (no Domain).
        expect(share.headers['set-cookie']?.[0]).toMatch(
          /^__Host-svc-auth-session-bind=[^;]+; Path=\/; [^D]*; Secure$/,
        );
        const reply = await followStart(secure, share);
        expect(reply.headers['set-cookie']?.[0]).toMatch(
          /^__Host-svc-auth-session-login=[^;]+; Path=\/; [^D]*; Secure$/,
        );
        // The session cookie is the share host's own: `__Host-` too, cleared by a logout there.
        const logout = await get(secure.port, secure.host('alpha'), '/google/logout');
        expect(logout.headers['set-cookie']?.[0]).toMatch(
          /^__Host-svc-auth-session=; Path=\/; [^D]*HttpOnly; SameSite=Lax; Secure$/,
        );
      } finally {
        await secure.close();
      }
    });
  });

  describe('callback state', () => {
    it.each([
      ['missing', ''],
      ['garbage', '?state=not-a-state&code=x'],
    ])('refuses a %s state with a clear page', async (_what, query) => {
      const reply = await get(fe.port, fe.authHost, `/google/auth/callback${query}`);
      expect(reply.status).toBe(400);
      expect(reply.body).toContain('Login failed');
    });

    it('refuses a state minted for another provider (mix-up)', async () => {
      const start = await followStart(fe, await get(fe.port, fe.host('alpha'), '/'));
      const state = new URL(start.headers.location ?? '').searchParams.get('state') ?? '';
      const loginCookie = (start.headers['set-cookie']?.[0] ?? '').split(';')[0];
      const reply = await get(fe.port, fe.authHost, `/github/auth/callback?code=x&state=${state}`, {
        headers: { cookie: loginCookie },
      });
      expect(reply.status).toBe(400);
      expect(reply.body).toContain('belongs to another provider');
    });

    it('refuses a valid state without the browser cookie that started the login', async () => {
      const start = await followStart(fe, await get(fe.port, fe.host('alpha'), '/'));
      const state = new URL(start.headers.location ?? '').searchParams.get('state') ?? '';
      const reply = await get(fe.port, fe.authHost, `/google/auth/callback?code=x&state=${state}`);
      expect(reply.status).toBe(400);
      expect(reply.body).toContain('started in another browser');
    });
  });

  describe('redirects after logout', () => {
    const corpus = readFileSync(new URL('../data/openredirects.txt', import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');

    it(`never leave the frontend's hosts for any of the ${corpus.length} open-redirect payloads`, async () => {
      const own = await startTestFrontend({
        providers: [idp1],
        shares: [
          { token: 'www', target: backend.url.href },
          { token: 'app', target: backend.url.href },
        ],
        oauth: { endpoint_url: 'https://www.whitelisteddomain.tld:1', cookie_domain: 'whitelisteddomain.tld' },
        domain: 'whitelisteddomain.tld',
      });
      try {
        const allowed = new Set([`www.whitelisteddomain.tld:${own.port}`, `app.whitelisteddomain.tld:${own.port}`]);
        let followed = 0;
        for (const payload of corpus) {
          const reply = await get(own.port, own.authHost, `/google/logout?redirect_url=${encodeURIComponent(payload)}`);
          expect([302, 400]).toContain(reply.status);
          if (reply.status !== 302) continue;
          followed += 1;
          const location = reply.headers.location ?? '';
          expect(location, payload).toMatch(/^https:\/\//);
          expect(allowed.has(new URL(location).host), `${payload} -> ${location}`).toBe(true);
        }
        // Some payloads are harmless relative paths: they must be followed, not blanket-refused.
        expect(followed).toBeGreaterThan(0);
      } finally {
        await own.close();
      }
    });

    it('follows a redirect_url on a served share and refuses unknown subdomains', async () => {
      const ok = await get(
        fe.port,
        fe.authHost,
        `/google/logout?redirect_url=${encodeURIComponent(`http://${fe.host('beta')}/x?y=1`)}`,
      );
      expect(ok.status).toBe(302);
      expect(ok.headers.location).toBe(`http://${fe.host('beta')}/x?y=1`);
      const unknown = await get(
        fe.port,
        fe.authHost,
        `/google/logout?redirect_url=${encodeURIComponent(`http://${fe.host('nosuchshare')}/`)}`,
      );
      expect(unknown.status).toBe(400);
      const otherPort = await get(
        fe.port,
        fe.authHost,
        `/google/logout?redirect_url=${encodeURIComponent('http://beta.svc.localhost:1/')}`,
      );
      expect(otherPort.status).toBe(400);
    });
  });

  describe('websockets', () => {
    const connect = (token: string, headers: Record<string, string>) =>
      new Promise<{ status?: number; message?: string }>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${fe.port}/socket`, { headers: { host: fe.host(token), ...headers } });
        ws.on('open', () => ws.send('hi'));
        ws.on('message', (data: Buffer) => {
          resolve({ message: data.toString('utf8') });
          ws.close();
        });
        ws.on('unexpected-response', (_req, res) => resolve({ status: res.statusCode }));
        ws.on('error', () => resolve({}));
      });

    it('proxies an upgrade with a valid session and sets the identity headers', async () => {
      const cookie = mintSessionCookie({ share: 'beta', provider: 'google', email: 'ws@example.com' });
      const result = await connect('beta', { cookie, 'svc-auth-email': 'evil@attacker.io' });
      expect(result.message).toBe('echo:hi:ws@example.com');
      expect(lastSeen().headers.cookie).toBeUndefined();
    });

    it('refuses an upgrade without a session for the share', async () => {
      const cookie = mintSessionCookie({ share: 'alpha', provider: 'google' });
      expect(await connect('beta', { cookie })).toEqual({ status: 401 });
    });
  });

  describe('health, metrics, routing', () => {
    it('answers /healthz and /readyz by exact path, never by User-Agent', async () => {
      expect((await get(fe.port, `127.0.0.1:${fe.port}`, '/healthz')).status).toBe(200);
      expect((await get(fe.port, `127.0.0.1:${fe.port}`, '/readyz')).status).toBe(200);
      expect((await get(fe.port, `127.0.0.1:${fe.port}`, '/healthz/')).status).toBe(404);
      expect(
        (await get(fe.port, `127.0.0.1:${fe.port}`, '/', { headers: { 'user-agent': 'kube-probe/1.31' } })).status,
      ).toBe(404);
      // On a share host every path belongs to the backend.
      const onShare = await get(fe.port, fe.host('open'), '/healthz', { headers: { 'user-agent': 'kube-probe/1.31' } });
      expect(onShare.status).toBe(200);
      expect(lastSeen().url).toBe('/healthz');
    });

    it('serves Prometheus metrics on the separate listener only', async () => {
      const metricsPort = fe.frontend.metricsPort as number;
      const metrics = await get(metricsPort, `127.0.0.1:${metricsPort}`, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatch(/svc_frontend_requests_total\{outcome="proxied"\} \d+/);
      expect(metrics.body).toContain('svc_frontend_upstream_duration_seconds_bucket');
      expect((await get(fe.port, `127.0.0.1:${fe.port}`, '/metrics')).status).toBe(404);
    });

    it('answers unknown shares and hosts with escaped pages', async () => {
      const unknown = await get(fe.port, fe.host('nosuch'), '/');
      expect(unknown.status).toBe(404);
      expect(unknown.body).toContain('no share named nosuch');
      expect((await get(fe.port, 'elsewhere.example:1', '/')).status).toBe(404);
    });

    it('reports an unreachable backend with a 502 page', async () => {
      const down = await startTestFrontend({
        providers: [idp1],
        shares: [{ token: 'down', target: 'http://127.0.0.1:9' }],
      });
      try {
        const reply = await get(down.port, down.host('down'), '/');
        expect(reply.status).toBe(502);
        expect(reply.headers['content-type']).toContain('text/html');
        expect(reply.body).toContain('Backend unreachable');
      } finally {
        await down.close();
      }
    });

    it('never writes cookies, tokens or secrets to its logs', () => {
      const text = fe.logs.text;
      expect(fe.logs.lines.length).toBeGreaterThan(0);
      for (const secret of [
        'client-secret-never-logged',
        'test-signing-key',
        'test-encryption-key',
        'at-secret-value',
        'svc-auth-session=',
      ]) {
        expect(text).not.toContain(secret);
      }
    });
  });
});
