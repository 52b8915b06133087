import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ShareEntry } from '../../agent/agent.ts';
import { devLogin, expectLoginStartedOn, launchBrowser, navigations } from '../support/browser.ts';
import { echoBackend } from '../support/raw-http.ts';
import { startServe, tempDir, type ServeProcess } from './harness.ts';

/**
 * The newcomer's path end to end, in headless Chromium: `svc serve --dev`, then
 * `svc share public --oauth-provider dev …` on a local backend, then a visit that logs in through the
 * bundled development identity provider; the backend sees the identity headers.
 */
describe('svc serve --dev in a real browser', () => {
  let serve: ServeProcess;
  let backend: Awaited<ReturnType<typeof echoBackend>>;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;
  let issuer: URL;

  beforeAll(async () => {
    backend = await echoBackend();
    serve = await startServe(tempDir('svc-dev-'), ['--dev']);
    const login = /dev login: provider "dev" at (\S+)/.exec(serve.output());
    issuer = new URL(login?.[1] ?? 'http://missing.invalid');
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await serve?.stop();
    await backend?.close();
  });

  it('logs in through the dev identity provider and the backend sees the identity headers', async () => {
    const created = await serve.cli([
      'share',
      'public',
      '--oauth-provider',
      'dev',
      '--oauth-email-address-pattern',
      '*@example.com',
      backend.url,
      '--json',
    ]);
    expect(created.stderr).toBe('');
    const share = JSON.parse(created.stdout) as ShareEntry;
    const endpoint = share.frontendEndpoints[0] as string;
    expect(endpoint).toBe(`http://${share.token}.svc.localhost:${serve.port}`);

    const page = await browser.context.newPage();
    const hops = navigations(page);
    await page.goto(`${endpoint}/inbox?x=1`);
    expect(new URL(page.url()).origin).toBe(issuer.origin);
    // The login began on the endpoint host, which holds the login cookie host-only.
    await expectLoginStartedOn(page, hops, new URL(`http://auth.svc.localhost:${serve.port}`), 'dev');
    await devLogin(page, 'alice@example.com');
    await page.waitForURL(`${endpoint}/inbox?x=1`);
    const seen = JSON.parse((await page.textContent('body')) ?? '{}') as {
      url: string;
      headers: Record<string, string>;
    };
    expect(seen.url).toBe('/inbox?x=1');
    expect(seen.headers['svc-auth-provider']).toBe('dev');
    expect(seen.headers['svc-auth-email']).toBe('alice@example.com');
    expect(seen.headers['svc-auth-expires']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(seen.headers.cookie ?? '').not.toContain('svc-auth-session');

    // Same flow with an email outside the share's patterns: a clear refusal page.
    await browser.context.clearCookies();
    const refused = await browser.context.newPage();
    await refused.goto(`${endpoint}/`);
    await devLogin(refused, 'eve@example.org');
    await refused.waitForURL((url) => url.origin !== issuer.origin);
    await refused.waitForLoadState();
    expect(await refused.textContent('body')).toContain('eve@example.org is not allowed to access this share');
    await page.close();
    await refused.close();
  });
});
