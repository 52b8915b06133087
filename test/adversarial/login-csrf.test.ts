import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { staticShares } from '../../lib/share/source.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { createCa, issueCert } from '../k8s/pki.ts';
import { launchBrowser } from '../support/browser.ts';
import type { Page } from 'playwright-core';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { LogCapture, testFrontendConfig } from '../support/frontend.ts';
import { cookiesFrom, get, type Reply } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';

/**
 * Login CSRF by a share's script. Every share lives under the cookie domain and its pages are its
 * owner's code, so script on mallory's share can write any cookie for the domain that is not
 * `__Host-` prefixed. Mallory starts a login of her own, stops before the callback, and has her
 * share's page plant her login cookie in alice's browser and send it to the callback with her code
 * and state: alice must not end up signed in to mallory's account. Nor may the page plant a
 * session of mallory's (her session cookie, her own hand-over link, her binding cookie with that
 * link): sessions are the share host's own cookies, handed over only to the browser that started
 * the login. The frontend runs behind TLS (a
 * terminator in front of it, as an ingress would be), its endpoint https, in a real Chromium.
 */
const figures = suiteFigures('login-csrf');
const DOMAIN = 'svc.localhost';

let dir: string;
let idp1: Idp1Server;
let echo: EchoBackend;
/** Mallory's share page: whatever `page` holds, as HTML. */
let pages: Server;
let page = '';
let fe: RunningFrontend;
let tls: { port: number; close(): Promise<void> };
let endpoint: URL;

/** TLS in front of the frontend's plain listener: each connection piped through. */
async function startTerminator(cert: string, key: string, target: () => number): Promise<typeof tls> {
  const sockets = new Set<Socket>();
  const server = createTlsServer({ cert, key }, (socket) => {
    const upstream = connect(target(), '127.0.0.1');
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-login-csrf-'));
  const ca = await createCa(dir, 'ca');
  const leaf = await issueCert(dir, ca, {
    name: 'frontend',
    commonName: `*.${DOMAIN}`,
    altNames: [`DNS:*.${DOMAIN}`],
    usage: 'server',
  });
  [idp1, echo] = await Promise.all([startIdp1Server(), startEchoBackend()]);
  pages = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page));
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  const patterns = ['*@example.com'];
  const config = testFrontendConfig({
    providers: [idp1.providerConfig('idp1')],
    shares: [
      { token: 'mallorypage', target: `http://127.0.0.1:${(pages.address() as AddressInfo).port}` },
      { token: 'mallory', target: echo.url.href, oauth_provider: 'idp1', oauth_email_address_patterns: patterns },
      // A share of someone else's where mallory may log in too (its patterns admit her).
      { token: 'team', target: echo.url.href, oauth_provider: 'idp1', oauth_email_address_patterns: patterns },
    ],
    domain: DOMAIN,
  });
  // The terminator listens first (the frontend's public port); it connects to the frontend's.
  tls = await startTerminator(readFileSync(leaf.cert, 'utf8'), readFileSync(leaf.key, 'utf8'), () => fe.port);
  fe = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: new URL(`https://auth.${DOMAIN}:${tls.port}`),
    domain: DOMAIN,
    oauth: config.oauth,
    shares: staticShares(config.shares),
    logger: createLogger('frontend', { destination: new LogCapture() }),
  });
  endpoint = fe.endpointUrl;
  idp1.redirectUris = [new URL('/idp1/auth/callback', endpoint).href];
});

afterAll(async () => {
  figures.write();
  await tls?.close();
  await fe?.close();
  await new Promise<void>((resolve) => (pages ? pages.close(() => resolve()) : resolve()));
  await Promise.all([idp1?.close(), echo?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

/** A request to the frontend's plain listener as it arrives through the terminator. */
const at = (url: URL, cookie?: string): Promise<Reply> =>
  get(fe.port, url.host, `${url.pathname}${url.search}`, cookie ? { headers: { cookie } } : {});

/**
 * Mallory's own login on her share, as her browser makes it, stopped where the provider sends her
 * back: the callback URL (her code and state) and the login cookie her browser was given.
 */
async function mallorysLogin(
  token = 'mallory',
): Promise<{ callbackUrl: URL; loginCookie: string; setCookie: string; bindCookie: string }> {
  let reply = await at(new URL(`https://${token}.${DOMAIN}:${tls.port}/`));
  expect(reply.status).toBe(302);
  const bindCookie = cookiesFrom(reply);
  let setCookie = reply.headers['set-cookie']?.[0] ?? '';
  let next = new URL(reply.headers.location ?? '');
  if (next.host === endpoint.host) {
    reply = await at(next);
    expect(reply.status).toBe(302);
    setCookie = reply.headers['set-cookie']?.[0] ?? '';
    next = new URL(reply.headers.location ?? '');
  }
  idp1.nextUser = { email: 'mallory@example.com', email_verified: true };
  const callbackUrl = await idp1.authorize(next);
  expect(callbackUrl.href.startsWith(new URL('/idp1/auth/callback', endpoint).href)).toBe(true);
  return { callbackUrl, loginCookie: cookiesFrom(reply), setCookie, bindCookie };
}

const planted = figures.attackClass(
  "Login CSRF: a share's script plants a login cookie and sends the visitor to the callback with the attacker's code and state",
  "the login cookie was the cookie domain's, so a share's script could write it and the visitor was signed in to the attacker's account; now the login starts on the endpoint host, whose login cookie is host-only and `__Host-` under https",
);

describe("a share's script planting mallory's login in alice's browser", () => {
  it('never signs alice in as mallory, whatever cookie the script writes', async () => {
    const browser = await launchBrowser(['--ignore-certificate-errors']);
    try {
      const mallory = await mallorysLogin();
      const [name = '', value = ''] = mallory.loginCookie.split(/=(.*)/s);
      const attempts: Record<string, string[]> = {
        // The cookie as the frontend set it in mallory's browser, for the whole domain.
        'the login cookie for the cookie domain': [`${name}=${value}; domain=${DOMAIN}; path=/; secure`],
        // The same value under both names, and the prefixed name in every form a script can write.
        'both names, for the cookie domain and host-only': [
          `svc-auth-session-login=${value}; domain=${DOMAIN}; path=/; secure`,
          `__Host-svc-auth-session-login=${value}; domain=${DOMAIN}; path=/; secure`,
          `__Host-svc-auth-session-login=${value}; path=/; secure`,
          `__Secure-svc-auth-session-login=${value}; domain=${DOMAIN}; path=/; secure`,
        ],
        'the prefixed name with a Domain, for the callback path only': [
          `__Host-svc-auth-session-login=${value}; domain=${DOMAIN}; path=/idp1/auth/callback; secure`,
          `svc-auth-session-login=${value}; domain=${DOMAIN}; path=/idp1/auth/callback; secure`,
        ],
      };
      for (const [what, cookies] of Object.entries(attempts)) {
        await planted.run(async () => {
          await browser.context.clearCookies();
          // Each attempt needs a fresh login of mallory's: a state is accepted once.
          const login = what === Object.keys(attempts)[0] ? mallory : await mallorysLogin();
          const plant = cookies.map((c) => c.replace(value, login.loginCookie.split(/=(.*)/s)[1] ?? ''));
          page = `<script>${plant.map((c) => `document.cookie = ${JSON.stringify(c)};`).join('')}
            location.href = ${JSON.stringify(login.callbackUrl.href)};</script>`;
          const tab = await browser.context.newPage();
          const seen = echo.seen.length;
          await tab.goto(`https://mallorypage.${DOMAIN}:${tls.port}/`);
          // The script sends the tab on to the callback (and wherever the callback sends it).
          await tab.waitForURL((url) => !url.hostname.startsWith('mallorypage.'), { timeout: 10_000 });
          // Alice then opens mallory's share: she logs in as herself, never served as mallory.
          idp1.nextUser = { email: 'alice@example.com', email_verified: true };
          const visit = await tab.goto(`https://mallory.${DOMAIN}:${tls.port}/whoami`);
          expect(visit?.status(), what).toBe(200);
          const emails = echo.seen.slice(seen).map((r) => r.headers['svc-auth-email']);
          expect(emails, what).not.toContain('mallory@example.com');
          const body = JSON.parse(await tab.innerText('body')) as { headers: Record<string, string> };
          expect(body.headers['svc-auth-email'], what).toBe('alice@example.com');
          await tab.close();
        });
      }
    } finally {
      page = '';
      await browser.close();
    }
  });

  it("alice's own login through the endpoint host still completes in the browser", async () => {
    const browser = await launchBrowser(['--ignore-certificate-errors']);
    try {
      await browser.context.clearCookies();
      idp1.nextUser = { email: 'alice@example.com', email_verified: true };
      const tab = await browser.context.newPage();
      const reply = await tab.goto(`https://mallory.${DOMAIN}:${tls.port}/whoami`);
      expect(reply?.status()).toBe(200);
      const seen = JSON.parse(await tab.innerText('body')) as { headers: Record<string, string> };
      expect(seen.headers['svc-auth-email']).toBe('alice@example.com');
      const cookies = await browser.context.cookies();
      // The session the share host's own (host-only); the login and binding cookies (now cleared) gone.
      expect(cookies.find((c) => c.name === '__Host-svc-auth-session')?.domain).toBe(`mallory.${DOMAIN}`);
      expect(cookies.filter((c) => c.name.includes('-login') || c.name.includes('-bind'))).toEqual([]);
      expect(cookies.filter((c) => c.domain.startsWith('.'))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});

/**
 * Mallory's own finished login on `team` (a share that admits her but is not hers), as her browser
 * makes it: her hand-over link (the callback's redirect to the share host), her binding cookie, and
 * (when `follow`) the session cookie the hand-over gave her.
 */
async function mallorysSession(follow: boolean): Promise<{ handOver: URL; bind: string; session?: string }> {
  const login = await mallorysLogin('team');
  const done = await at(login.callbackUrl, login.loginCookie);
  expect(done.status).toBe(302);
  const handOver = new URL(done.headers.location ?? '');
  expect(`${handOver.host}${handOver.pathname}`).toBe(`team.${DOMAIN}:${tls.port}/idp1/auth/handover`);
  if (!follow) return { handOver, bind: login.bindCookie };
  const set = (await at(handOver, login.bindCookie)).headers['set-cookie'] ?? [];
  const session = set.find((c) => c.startsWith('__Host-svc-auth-session='));
  expect(session).toMatch(/; Path=\/; .*Secure/);
  expect(session).not.toMatch(/domain=/i);
  return { handOver, bind: login.bindCookie, session: session?.split(';')[0] };
}

const bound = figures.attackClass(
  "Session planting: a share's script plants the attacker's session, hand-over link or binding cookie in a visitor's browser",
  "the session cookie was the cookie domain's, so a share's script could write mallory's session into alice's browser and alice was served as mallory on another share; now the session cookie is the share host's own (`__Host-`), set only by a hand-over bound to the browser that started the login",
);

describe("a share's script planting mallory's session in alice's browser", () => {
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  const team = (): string => `https://team.${DOMAIN}:${tls.port}/whoami`;

  beforeAll(async () => {
    browser = await launchBrowser(['--ignore-certificate-errors']);
  });
  afterAll(async () => {
    page = '';
    await browser?.close();
  });

  /** Mallory's page runs `script` in alice's browser (no cookies of hers), which then opens `to`. */
  async function plantAndGo(script: string, to: string): Promise<{ tab: Page; status: number | undefined }> {
    await browser.context.clearCookies();
    // Any login this visit starts is alice's: the provider signs in whoever uses the browser.
    idp1.nextUser = { email: 'alice@example.com', email_verified: true };
    let status: number | undefined;
    page = `<script>${script} location.href = ${JSON.stringify(to)};</script>`;
    const tab = await browser.context.newPage();
    tab.on('response', (r) => {
      if (r.url() === to) status = r.status();
    });
    await tab.goto(`https://mallorypage.${DOMAIN}:${tls.port}/`);
    await tab.waitForURL((url) => !url.hostname.startsWith('mallorypage.'), { timeout: 10_000 });
    await tab.waitForLoadState();
    return { tab, status };
  }

  /** Alice then opens `team`: she logs in as herself and is never served as mallory. */
  async function aliceIsHerself(tab: Page, what: string): Promise<void> {
    idp1.nextUser = { email: 'alice@example.com', email_verified: true };
    const seen = echo.seen.length;
    const visit = await tab.goto(team());
    expect(visit?.status(), what).toBe(200);
    expect(
      echo.seen.slice(seen).map((r) => r.headers['svc-auth-email']),
      what,
    ).not.toContain('mallory@example.com');
    const body = JSON.parse(await tab.innerText('body')) as { headers: Record<string, string> };
    expect(body.headers['svc-auth-email'], what).toBe('alice@example.com');
    await tab.close();
  }

  const write = (cookies: string[]): string => cookies.map((c) => `document.cookie = ${JSON.stringify(c)};`).join('');

  it("refuses mallory's session written by her share's script, in every form a script can write", async () => {
    const { session = '' } = await mallorysSession(true);
    const value = session.split(/=(.*)/s)[1] ?? '';
    const forms: Record<string, string[]> = {
      'for the cookie domain, under the bare name': [`svc-auth-session=${value}; domain=${DOMAIN}; path=/; secure`],
      'under the prefixed name, for the domain and host-only': [
        `__Host-svc-auth-session=${value}; domain=${DOMAIN}; path=/; secure`,
        `__Host-svc-auth-session=${value}; path=/; secure`,
        `__Secure-svc-auth-session=${value}; domain=${DOMAIN}; path=/; secure`,
      ],
    };
    for (const [what, cookies] of Object.entries(forms)) {
      await bound.run(async () => {
        const { tab } = await plantAndGo(write(cookies), team());
        await aliceIsHerself(tab, what);
      });
    }
  });

  it("refuses mallory's own hand-over link opened in alice's browser, with or without a login of alice's under way", async () => {
    await bound.run(async () => {
      const { handOver } = await mallorysSession(false);
      const { tab, status } = await plantAndGo('', handOver.href);
      expect(status).toBe(400);
      expect(await tab.innerText('body')).toContain('the sign-in link was made for another browser');
      const cookies = await browser.context.cookies();
      expect(cookies.filter((c) => c.name.includes('svc-auth-session') && c.value !== '')).toEqual([]);
      await aliceIsHerself(tab, 'hand-over link');
    });
    await bound.run(async () => {
      // Alice's browser holds a binding cookie of her own on team (a login of hers under way).
      const { handOver } = await mallorysSession(false);
      await browser.context.clearCookies();
      const started = await at(new URL(team()));
      const [name = '', value = ''] = cookiesFrom(started).split(/=(.*)/s);
      expect(name).toBe('__Host-svc-auth-session-bind');
      await browser.context.addCookies([{ name, value, url: team(), secure: true, httpOnly: true }]);
      const tab = await browser.context.newPage();
      const reply = await tab.goto(handOver.href);
      expect(reply?.status()).toBe(400);
      const names = (await browser.context.cookies()).map((c) => c.name);
      expect(names).not.toContain('__Host-svc-auth-session');
      await aliceIsHerself(tab, 'hand-over link, alice binding');
    });
  });

  it("refuses mallory's hand-over link with her binding cookie written by her share's script", async () => {
    const { handOver, bind } = await mallorysSession(false);
    const value = bind.split(/=(.*)/s)[1] ?? '';
    // Every form a script on mallory's share can write; the browser refuses a `__Host-` cookie with a Domain.
    const cookies = [
      `__Host-svc-auth-session-bind=${value}; domain=${DOMAIN}; path=/; secure`,
      `svc-auth-session-bind=${value}; domain=${DOMAIN}; path=/; secure`,
      `__Secure-svc-auth-session-bind=${value}; domain=${DOMAIN}; path=/; secure`,
      `__Host-svc-auth-session-bind=${value}; domain=${DOMAIN}; path=/idp1/auth/handover; secure`,
    ];
    await bound.run(async () => {
      const { tab, status } = await plantAndGo(write(cookies), handOver.href);
      expect(status).toBe(400);
      const names = (await browser.context.cookies()).filter((c) => c.value !== '').map((c) => c.name);
      expect(names).not.toContain('__Host-svc-auth-session');
      await aliceIsHerself(tab, 'binding cookie');
    });
  });
});
