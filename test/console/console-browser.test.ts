import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { devLogin, launchBrowser } from '../support/browser.ts';
import { cookiesFrom, get, type Reply } from '../support/http.ts';
import { echoBackend } from '../support/raw-http.ts';
import {
  ADMIN,
  startConsoleInstallation,
  startEnrolledAgent,
  type ConsoleAgent,
  type ConsoleInstallation,
} from './harness.ts';
import { CONSOLE_SSE_LIMITS } from '../../controller/console/live.ts';

/**
 * The installation's console in headless Chromium and over plain HTTP: sign-in by account token and
 * through the installation's identity provider, each operation through the controller API's own
 * path, the traffic chart, isolation between two accounts, the admin view, and clear refusals.
 */
describe('installation console', () => {
  let inst: ConsoleInstallation;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let alice: { id: string; token: string };
  let bob: { id: string; token: string };
  let agentA: ConsoleAgent;
  let agentB: ConsoleAgent;
  const problems: string[] = [];
  let host: string;

  beforeAll(async () => {
    backend = await echoBackend();
    inst = await startConsoleInstallation();
    host = `127.0.0.1:${inst.apiPort}`;
    alice = await inst.createAccount('alice@example.com');
    bob = await inst.createAccount('bob@example.com');
    [agentA, agentB] = await Promise.all([
      startEnrolledAgent(inst.apiBase, alice.token),
      startEnrolledAgent(inst.apiBase, bob.token),
    ]);
    browser = await launchBrowser();
    browser.context.on('page', (page) => watch(page));
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([agentA?.process.stop(), agentB?.process.stop()]);
    await inst?.close();
    await backend?.close();
  });

  /** Console errors (CSP violations among them) and uncaught exceptions of the console's pages (not the provider's). */
  const watch = (page: Page) => {
    const ours = () => page.url().startsWith(inst.apiBase);
    page.on('console', (m) => {
      if (ours() && (m.type() === 'error' || m.type() === 'warning')) problems.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (err) => {
      if (ours()) problems.push(`${page.url()}: ${err.message}`);
    });
  };

  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const post = (path: string, cookie: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    get(inst.apiPort, host, path, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: inst.apiBase, ...headers },
      body: form(fields),
    });
  const csrfOf = (reply: Reply) => /name="_csrf" value="([^"]+)"/.exec(reply.body)?.[1] ?? '';

  /** Token sign-in over HTTP: the session cookie and the session's CSRF token. */
  const signIn = async (token: string): Promise<{ cookie: string; csrf: string; reply: Reply }> => {
    const page = await get(inst.apiPort, host, '/console/signin');
    const reply = await post('/console/signin', cookiesFrom(page), { _csrf: csrfOf(page), token });
    const cookie = cookiesFrom(reply);
    const dashboard = await get(inst.apiPort, host, '/console', { headers: { cookie } });
    return { cookie, csrf: csrfOf(dashboard), reply };
  };

  /** The share form posted for `session` on `envZId`, with `fields` replacing the defaults. */
  const shareForm = (session: { cookie: string; csrf: string }, envZId: string, fields: Record<string, string> = {}) =>
    post('/console/share', session.cookie, {
      _csrf: session.csrf,
      envZId,
      target: backend.url,
      shareMode: 'public',
      backendMode: 'proxy',
      oauthProvider: '',
      ...fields,
    });

  /** A share created over HTTP on `envZId`: its token. */
  const createShare = async (session: { cookie: string; csrf: string }, envZId: string) => {
    const reply = await shareForm(session, envZId);
    expect(reply.status, reply.body).toBe(200);
    return /Share ([a-z0-9]+) created/.exec(reply.body)?.[1] ?? '';
  };

  it('signs in by account token in the browser; the session cookie is HttpOnly and SameSite=Strict', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${inst.apiBase}/console`);
    expect(new URL(page.url()).pathname).toBe('/console/signin');
    await page.fill('#token', alice.token);
    await Promise.all([
      page.waitForURL(`${inst.apiBase}/console`),
      page.click('form[action="/console/signin"] button'),
    ]);
    expect(await page.textContent(`[data-env="${agentA.envZId}"]`)).toBe('online');
    expect(await page.textContent('main')).toContain('0.1.0');
    expect(await page.textContent('main')).not.toContain(agentB.envZId);
    const cookie = (await browser.context.cookies(inst.apiBase)).find((c) => c.name === 'svc-console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false });
    expect(page.url()).not.toContain(alice.token.slice(5));
    await page.close();
  });

  it('creates a share, counts requests through it live, health-checks and stops it', async () => {
    const page = await browser.context.newPage();
    await page.goto(`${inst.apiBase}/console`);
    await page.click(`#env-${agentA.envZId} details.create summary`);
    await page.fill(`#new-${agentA.envZId}-target`, backend.url);
    await page.click(`#env-${agentA.envZId} form[action="/console/share"] button`);
    const notice = (await page.textContent('.notice.ok'))?.trim() ?? '';
    const [, token, url] = /Share ([a-z0-9]+) created at (\S+)\./.exec(notice) ?? [];
    expect(token, notice).toMatch(/^[a-z0-9]+$/);
    expect(url).toBe(`http://${token}.svc.localhost:${inst.installation.frontend.port}`);

    await page.goto(`${inst.apiBase}/console`);
    const summary = page.locator(`[data-summary="${token}"]`);
    expect(await summary.textContent()).toContain('0 requests');
    const shareHost = `${token}.svc.localhost`;
    for (const path of ['/', '/a', '/b']) {
      expect((await get(inst.installation.frontend.port, shareHost, path)).status).toBe(200);
    }
    expect((await get(inst.installation.frontend.port, shareHost, '/status/503')).status).toBe(503);
    // Pushed by the event stream: no reload.
    await expect.poll(() => summary.textContent(), { timeout: 15_000 }).toMatch(/^4 requests/);
    expect(await summary.textContent()).toMatch(/^4 requests, [\d.]+ (B|KB), 1 error in the last hour$/);
    // One bar per minute with requests: the four may straddle a minute boundary.
    expect(await page.locator(`[data-chart="${token}"] svg rect.req`).count()).toBeGreaterThanOrEqual(1);
    expect(await page.locator(`[data-chart="${token}"] svg rect.err`).count()).toBe(1);

    await page.click(`tr[data-share="${token}"] form[action="/console/healthcheck"] button`);
    expect((await page.textContent('.notice.ok'))?.trim()).toBe(`Share ${token} is healthy.`);
    await page.fill(`#hc-${token}-path`, '/status/503');
    await page.click(`tr[data-share="${token}"] form[action="/console/healthcheck"] button`);
    expect((await page.textContent('.notice.ok'))?.trim()).toContain(
      `Share ${token} is unhealthy: unexpected status code; got '503', want '200'`,
    );

    await page.click(`tr[data-share="${token}"] form[action="/console/unshare"] button`);
    expect((await page.textContent('.notice.ok'))?.trim()).toBe(`Share ${token} stopped.`);
    expect(await page.locator(`tr[data-share="${token}"]`).count()).toBe(0);
    expect((await get(inst.installation.frontend.port, shareHost, '/')).status).toBe(404);
    await page.close();
  });

  it('shows an account only its own environments, shares and traffic, direct URLs included', async () => {
    const a = await signIn(alice.token);
    const b = await signIn(bob.token);
    const aliceShare = await createShare(a, agentA.envZId);
    const bobView = await get(inst.apiPort, host, '/console', { headers: { cookie: b.cookie } });
    expect(bobView.body).toContain(agentB.envZId);
    expect(bobView.body).not.toContain(agentA.envZId);
    expect(bobView.body).not.toContain(aliceShare);
    // Bob's forms naming Alice's environment and share: refused like a missing environment (the API's 401).
    const stop = await post('/console/unshare', b.cookie, { _csrf: b.csrf, envZId: agentA.envZId, token: aliceShare });
    expect(stop.status).toBe(401);
    expect(stop.body).toContain(`environment ${agentA.envZId} does not exist for this account`);
    const check = await post('/console/healthcheck', b.cookie, {
      _csrf: b.csrf,
      envZId: agentA.envZId,
      shareToken: aliceShare,
      endpoint: '/',
      expectedHttpResponse: '200',
    });
    expect(check.status).toBe(401);
    const make = await shareForm(b, agentA.envZId);
    expect(make.status).toBe(401);
    expect(make.body).toContain(`environment ${agentA.envZId} does not exist for this account`);
    // The share is still Alice's and still served.
    expect((await get(inst.installation.frontend.port, `${aliceShare}.svc.localhost`, '/')).status).toBe(200);
    const aliceView = await get(inst.apiPort, host, '/console', { headers: { cookie: a.cookie } });
    expect(aliceView.body).toContain(`data-share="${aliceShare}"`);
    // Bob's live stream carries none of Alice's figures.
    const events = await firstEvent(b.cookie);
    expect(events).toContain(agentB.envZId);
    expect(events).not.toContain(agentA.envZId);
    expect(events).not.toContain(aliceShare);
    // Alice's CSRF token does not work with Bob's session.
    const crossed = await post('/console/unshare', b.cookie, { _csrf: a.csrf, envZId: agentB.envZId, token: 'x' });
    expect(crossed.status).toBe(403);
  });

  it('keeps the admin view from non-admins', async () => {
    const b = await signIn(bob.token);
    const refused = await get(inst.apiPort, host, '/console/admin', { headers: { cookie: b.cookie } });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain('The admin view is for installation operators.');
    expect(refused.body).not.toContain('alice@example.com');
    const anonymous = await get(inst.apiPort, host, '/console/admin');
    expect(anonymous.status).toBe(401);
    expect(b.reply.status).toBe(303);
  });

  it("keeps one account's open live streams from taking the others'", async () => {
    const [a, b] = await Promise.all([signIn(alice.token), signIn(bob.token)]);
    const held = await Promise.all(
      Array.from({ length: CONSOLE_SSE_LIMITS.maxClientsPerTopic ?? 0 }, () => openStream(b.cookie)),
    );
    try {
      expect(held.map((s) => s.status)).toEqual(held.map(() => 200));
      const extra = await openStream(b.cookie);
      extra.close();
      expect(extra.status).toBe(503);
      expect(await firstEvent(a.cookie)).toContain(agentA.envZId);
    } finally {
      for (const s of held) s.close();
    }
  });

  it('signs in through the identity provider: an account sees its environments, an admin the admin view', async () => {
    const page = await browser.context.newPage();
    await browser.context.clearCookies();
    await page.goto(`${inst.apiBase}/console/signin`);
    await page.click('a[href="/console/oauth/dev/start"]');
    await devLogin(page, 'alice@example.com');
    await page.waitForURL(`${inst.apiBase}/console`);
    expect(await page.textContent(`[data-env="${agentA.envZId}"]`)).toBe('online');
    expect(await page.locator('nav a[href="/console/admin"]').count()).toBe(0);

    await page.click('form.signout button');
    await page.waitForURL(`${inst.apiBase}/console/signin`);
    await browser.context.clearCookies();
    await page.goto(`${inst.apiBase}/console/signin`);
    await page.click('a[href="/console/oauth/dev/start"]');
    await devLogin(page, ADMIN);
    await page.waitForURL(`${inst.apiBase}/console`);
    await page.click('nav a[href="/console/admin"]');
    await page.waitForURL(`${inst.apiBase}/console/admin`);
    const admin = (await page.textContent('main')) ?? '';
    expect(admin).toContain('alice@example.com');
    expect(admin).toContain('bob@example.com');
    const replicas = (await page.textContent('#replicas-h + table')) ?? '';
    expect(replicas).toContain(agentA.envZId);
    expect(replicas).toContain(agentB.envZId);
    await page.close();
  });

  it('refuses bad input with clear errors', async () => {
    const page = await get(inst.apiPort, host, '/console/signin');
    const bad = await post('/console/signin', cookiesFrom(page), { _csrf: csrfOf(page), token: 'svca_nothing_here' });
    expect(bad.status).toBe(401);
    expect(bad.body).toContain('That is not a valid account token (svca_…).');
    const forgedLogin = await post('/console/signin', cookiesFrom(page), { _csrf: 'forged', token: alice.token });
    expect(forgedLogin.status).toBe(403);
    expect(cookiesFrom(forgedLogin)).not.toContain('svc-console=');
    const crossSite = await post(
      '/console/signin',
      cookiesFrom(page),
      { _csrf: csrfOf(page), token: alice.token },
      { origin: 'http://evil.example' },
    );
    expect(crossSite.status).toBe(403);

    const a = await signIn(alice.token);
    const forged = await post('/console/unshare', a.cookie, { _csrf: 'forged', envZId: agentA.envZId, token: 'abc' });
    expect(forged.status).toBe(403);
    expect(forged.body).toContain('CSRF token');
    const notUrl = await shareForm(a, agentA.envZId, { target: 'not a url' });
    expect(notUrl.status).toBeGreaterThanOrEqual(400);
    expect(notUrl.body).toMatch(/target/);
    const badMode = await shareForm(a, agentA.envZId, { shareMode: 'sideways' });
    expect(badMode.status).toBe(422);
    expect(badMode.body).toContain('shareMode');
    const badStatus = await post('/console/healthcheck', a.cookie, {
      _csrf: a.csrf,
      envZId: agentA.envZId,
      shareToken: 'abcdefabcdef',
      endpoint: '/',
      expectedHttpResponse: 'abc',
    });
    expect(badStatus.status).toBe(422);
    expect(badStatus.body).toContain('expectedHttpResponse');
    const json = await get(inst.apiPort, host, '/console/share', {
      method: 'POST',
      headers: { cookie: a.cookie, 'content-type': 'application/json', origin: inst.apiBase },
      body: '{}',
    });
    expect(json.status).toBe(403);
    expect(json.body).toContain('CSRF token');
    // DNS rebinding: a page at another name resolving to loopback sends its own Host.
    const rebound = await get(inst.apiPort, `evil.example:${inst.apiPort}`, '/console', {
      headers: { cookie: a.cookie },
    });
    expect(rebound.status).toBe(421);
    expect(rebound.body).toContain('Host "evil.example');
    expect(inst.logs()).not.toContain(alice.token);
    // The secret is base64url and may itself hold '_': everything after the id.
    expect(inst.logs()).not.toContain(alice.token.split('_').slice(2).join('_'));
  });

  it('loaded every page without console errors or CSP violations', () => {
    expect(problems).toEqual([]);
  });

  /** A live stream held open: its status, and a way to close it. */
  async function openStream(cookie: string): Promise<{ status: number; close: () => void }> {
    const { request } = await import('node:http');
    return new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: inst.apiPort, path: '/console/events', headers: { cookie } },
        (res) => resolve({ status: res.statusCode ?? 0, close: () => req.destroy() }),
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** The first `update` event of the console's stream for this session. */
  async function firstEvent(cookie: string): Promise<string> {
    const { request } = await import('node:http');
    return new Promise((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: inst.apiPort, path: '/console/events', headers: { cookie } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => {
            text += c.toString();
            if (text.includes('event: update')) {
              req.destroy();
              resolve(text);
            }
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  }
});
