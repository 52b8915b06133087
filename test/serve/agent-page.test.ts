import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { startServe, type RunningServe } from '../../serve/serve.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { launchBrowser } from '../support/browser.ts';
import { get } from '../support/http.ts';
import { tempDir } from './harness.ts';

/** Screenshots for the README are written when this names a folder (`SVC_SCREENSHOTS=docs/images`). */
const SHOTS = process.env.SVC_SCREENSHOTS;

/**
 * The agent's page in headless Chromium against a real `svc serve` (in process) and a real backend:
 * pages load without console errors or CSP violations; create, health-check and stop round-trip;
 * the inspector shows a request made through a share live, redacted, and replays it edited; another
 * origin, a foreign Host and a browser without the per-start key are refused.
 */
describe('the agent page in a real browser', () => {
  let serve: RunningServe;
  let backend: EchoBackend;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let context: BrowserContext;
  let base: string;
  const problems: string[] = [];

  beforeAll(async () => {
    backend = await startEchoBackend();
    const dir = tempDir('svc-page-');
    const config = join(dir, 'serve.yaml');
    writeFileSync(
      config,
      'frontend:\n  listen: 127.0.0.1:0\n  domain: svc.localhost\nui:\n  listen: 127.0.0.1:0\n  inspector:\n    requests: 20\n',
    );
    serve = await startServe({ config, dataDir: join(dir, 'data') }, createLogger('test', { level: 'silent' }));
    base = new URL(serve.pageUrl as string).origin;
    browser = await launchBrowser();
    context = browser.context;
  });

  afterAll(async () => {
    await browser?.close();
    await serve?.close();
    await backend?.close();
  });

  /** A page that records console errors, uncaught errors and CSP violations into `problems`. */
  const watchedPage = async (): Promise<Page> => {
    problems.length = 0;
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    await page.addInitScript(
      'document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective))',
    );
    return page;
  };
  const port = () => Number(new URL(base).port);
  const shareHost = (token: string) => new URL(serve.frontendUrl(token)).host;

  it('refuses a browser without the per-start key, and takes the key out of the address bar', async () => {
    const page = await watchedPage();
    const refused = await page.goto(`${base}/`);
    expect(refused?.status()).toBe(401);
    expect(await page.textContent('body')).toContain('open the URL that svc serve printed');
    await page.goto(`${base}/?key=wrong`);
    expect(await page.textContent('body')).toContain('open the URL');
    const admitted = await page.goto(serve.pageUrl as string);
    expect(admitted?.status()).toBe(200);
    expect(page.url()).toBe(`${base}/`);
    const cookie = (await context.cookies(base)).find((c) => c.name === `svc-ui-${port()}`);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await page.close();
    problems.length = 0;
  });

  it('refuses a foreign Host (DNS rebinding), even with the session cookie', async () => {
    const cookie = (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join('; ');
    const own = await get(port(), `127.0.0.1:${port()}`, '/api/state', { headers: { cookie } });
    expect(own.status).toBe(200);
    const rebound = await get(port(), `rebind.example:${port()}`, '/api/state', { headers: { cookie } });
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain('shares');
  });

  it('creates a share, health-checks it and lists it live', async () => {
    const page = await watchedPage();
    await page.goto(`${base}/`);
    await page.fill('#s-target', backend.url.href);
    await page.click('#new-share button[type=submit]');
    const row = page.locator('#state tr[data-share]');
    await row.first().waitFor();
    const token = (await row.first().getAttribute('data-share')) as string;
    expect(await row.first().textContent()).toContain(backend.url.href);
    expect(await row.first().textContent()).toContain('online');
    await page.click(`button[data-action=healthcheck][data-token="${token}"]`);
    await page.locator(`[data-result="${token}"]`).filter({ hasText: 'healthy' }).waitFor();
    await page.fill('#h-share', token);
    await page.fill('#h-status', '404');
    await page.click('#healthcheck button[type=submit]');
    await page.locator('#health-result').filter({ hasText: "unexpected status code; got '200', want '404'" }).waitFor();
    if (SHOTS) await page.screenshot({ path: join(SHOTS, 'agent-page.png'), fullPage: true });
    expect(problems).toEqual([]);
    // Refused input, named by the one share validator (the browser logs the 400 it answers).
    await page.fill('#s-target', 'ftp://nowhere');
    await page.click('#new-share button[type=submit]');
    await page.locator('#new-share [data-error]').filter({ hasText: 'target' }).waitFor();
    await page.close();
  });

  it('shows a request made through the share live, redacted, and replays it edited', async () => {
    const token = await firstShare();
    const page = await watchedPage();
    await page.goto(`${base}/shares/${token}`);
    await page.locator('#count').filter({ hasText: 'of' }).waitFor();
    const reply = await get(serve.frontendPort, shareHost(token), '/orders?id=7', {
      method: 'POST',
      headers: { authorization: 'Bearer very-secret', 'x-token': 'tok-secret', 'content-type': 'application/json' },
      body: '{"item":"tea"}',
    });
    expect(reply.status).toBe(200);
    const row = page.locator('#requests tbody tr').filter({ hasText: '/orders?id=7' });
    await row.waitFor();
    expect(await row.textContent()).toContain('POST');
    await row.locator('a').click();
    await page.locator('#detail h2').filter({ hasText: 'POST /orders?id=7' }).waitFor();
    const detail = (await page.textContent('#detail')) as string;
    expect(detail).toContain('{"item":"tea"}');
    // The request's headers as recorded (the echo backend's body repeats them: that is the backend's data).
    const requestHeaders = (await page.textContent('#detail table')) as string;
    expect(requestHeaders).toContain('x-forwarded-host');
    expect(requestHeaders).not.toContain('very-secret');
    expect(requestHeaders).not.toContain('tok-secret');
    expect(requestHeaders).toContain('[redacted by svc]');
    expect(await page.inputValue('#r-headers')).not.toContain('very-secret');
    await page.fill('#r-path', '/orders?id=8');
    await page.click('#replay button[type=submit]');
    await page.locator('#compare').filter({ hasText: 'Replayed response' }).waitFor();
    expect(backend.seen.some((s) => s.url === '/orders?id=8' && s.method === 'POST')).toBe(true);
    expect(backend.seen.find((s) => s.url === '/orders?id=8')?.headers.authorization).toBeUndefined();
    await page.selectOption('#f-status', '5');
    await page.locator('#count').filter({ hasText: '(0 of' }).waitFor();
    await page.selectOption('#f-status', '');
    if (SHOTS) await page.screenshot({ path: join(SHOTS, 'inspector.png'), fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('lets no page of another origin read the state or change it', async () => {
    const evil = await startEvilPage();
    try {
      const page = await watchedPage();
      await page.goto(`http://127.0.0.1:${evil.port}/`);
      const before = (await stateOf()).shares.length;
      const outcome = await page.evaluate(async (target) => {
        const read = await fetch(`${target}/api/state`, { credentials: 'include' }).then(
          (r) => `read ${r.status}`,
          (e: unknown) => `blocked ${String(e)}`,
        );
        const write = await fetch(`${target}/api/shares`, {
          method: 'POST',
          mode: 'no-cors',
          credentials: 'include',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ shareMode: 'public', backendMode: 'proxy', target: 'http://127.0.0.1:1' }),
        }).then(
          (r) => `sent ${r.type}`,
          (e: unknown) => `blocked ${String(e)}`,
        );
        return { read, write };
      }, base);
      expect(outcome.read).toMatch(/^blocked/);
      // Sent or not (Cross-Origin-Resource-Policy hides even the opaque answer), it changed nothing.
      expect(outcome.write).not.toMatch(/^read/);
      expect((await stateOf()).shares.length).toBe(before);
      await page.close();
    } finally {
      evil.server.close();
    }
  });

  it('stops a share from the page', async () => {
    const token = await firstShare();
    const page = await watchedPage();
    await page.goto(`${base}/`);
    await page.click(`button[data-action=stop-share][data-token="${token}"]`);
    await page.locator(`#state tr[data-share="${token}"]`).waitFor({ state: 'detached' });
    expect((await stateOf()).shares.find((s) => s.token === token)).toBeUndefined();
    expect(problems).toEqual([]);
    await page.close();
  });

  async function stateOf(): Promise<{ shares: { token: string }[] }> {
    const cookie = (await context.cookies(base)).map((c) => `${c.name}=${c.value}`).join('; ');
    const reply = await get(port(), `127.0.0.1:${port()}`, '/api/state', { headers: { cookie } });
    return JSON.parse(reply.body) as { shares: { token: string }[] };
  }

  async function firstShare(): Promise<string> {
    const share = (await stateOf()).shares[0];
    if (!share) throw new Error('no share');
    return share.token;
  }
});

/** A page of another origin on this machine (another loopback port). */
async function startEvilPage(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>another origin</title><p>hello</p>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}
