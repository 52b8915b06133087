import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevIdentityProvider, type DevIdentityProvider } from '../../devidp/provider.ts';
import { readEnvironment } from '../../lib/remoting/files.ts';
import { svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';
import { devLogin, launchBrowser } from '../support/browser.ts';
import { startControllerProcess, startEnabledAgent, startPublicFrontendProcess } from '../support/installation.ts';

/**
 * The console of `svc controller` alone (the Kubernetes shape: `public_frontend` and a replica in
 * its own process) with a `console.oauth` section naming the development identity provider, all
 * real processes on loopback, driven in Chromium: an account signs in through the provider and
 * sees its environments, an admin email the admin view (still signed in after a controller
 * restart: the cookies are sealed under the section's keys), an unknown email is refused, and a bad
 * section stops `svc controller` naming the field (the client secret never quoted).
 */
const DOMAIN = 'co.localhost';
const CREDENTIAL = 'console-oauth-credential-0123456789abcdefghijklmn';
const ADMIN = 'root@example.com';
const SIGNING_KEY = 'console-oauth-signing-key-0123456789abcdef';
const ENCRYPTION_KEY = 'console-oauth-encryption-key-012345';

let base: string;
let idp: DevIdentityProvider;
let controller: Awaited<ReturnType<typeof startControllerProcess>>;
let replica: Process;
let agent: Process;
let envZId: string;
let browser: Awaited<ReturnType<typeof launchBrowser>>;

/** The controller config (YAML's JSON form): `public_frontend` on `frontendPort` and the console's `oauth`. */
function controllerConfig(name: string, frontendPort: number, oauth: object): string {
  const path = join(base, name);
  const publicFrontend = {
    domain: DOMAIN,
    endpoint_url: `http://127.0.0.1:${frontendPort}`,
    credential_file: 'credential',
  };
  const doc = {
    controller: { listen: '127.0.0.1:0' },
    public_frontend: publicFrontend,
    console: { admins: [ADMIN], oauth },
  };
  writeFileSync(path, JSON.stringify(doc));
  return path;
}

/** `console.oauth` with the development identity provider as `corp`. */
const corp = (clientSecret: string, changes: Record<string, unknown> = {}) => ({
  signing_key: SIGNING_KEY,
  encryption_key: ENCRYPTION_KEY,
  providers: [
    {
      name: 'corp',
      type: 'oidc',
      issuer: idp.issuer.href,
      client_id: idp.clientId,
      client_secret: clientSecret,
      scopes: ['openid', 'email', 'profile'],
      supports_pkce: true,
      ...changes,
    },
  ],
});

beforeAll(async () => {
  base = tempDir('svc-console-oauth-');
  writeFileSync(join(base, 'credential'), `${CREDENTIAL}\n`, { mode: 0o600 });
  idp = await startDevIdentityProvider();
  // The controller's port first (a plain controller), so the replica can be pointed at it.
  const plain = writeYaml(join(base, 'plain.yaml'), ['controller:', '  listen: 127.0.0.1:0']);
  const first = await startControllerProcess(plain, join(base, 'controller'));
  await first.process.stop();
  const frontend = writeYaml(join(base, 'public-frontend.yaml'), [
    'frontend:',
    '  listen: 127.0.0.1:0',
    `  domain: ${DOMAIN}`,
    'controller:',
    `  url: ${first.apiBase}`,
    `  credential_file: ${join(base, 'credential')}`,
  ]);
  const started = await startPublicFrontendProcess(frontend);
  replica = started.process;
  const config = controllerConfig('controller.json', started.port, corp(idp.clientSecret));
  controller = await startControllerProcess(config, join(base, 'controller'), `127.0.0.1:${first.port}`);
  const enabled = await startEnabledAgent(join(base, 'controller'), join(base, 'laptop'), controller.apiBase);
  agent = enabled.agent;
  envZId = readEnvironment(join(base, 'laptop'))?.envZId ?? '';
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await controller?.process.stop();
  await replica?.stop();
  await idp?.close();
});

/** Chromium through the console's sign-in page and the provider's login form as `email`. */
async function signInAs(email: string) {
  await browser.context.clearCookies();
  const page = await browser.context.newPage();
  await page.goto(`${controller.apiBase}/console/signin`);
  await page.click('a[href="/console/oauth/corp/start"]');
  await devLogin(page, email);
  return page;
}

describe('svc controller alone: console sign-in through console.oauth providers', () => {
  it('offers the provider; an account sees its environments, an admin email the admin view', async () => {
    const page = await signInAs('me@example.com');
    await page.waitForURL(`${controller.apiBase}/console`);
    expect(envZId).not.toBe('');
    // Online once the replica holding the tunnel has reported (every 5 s); the page updates live.
    await page.waitForSelector(`[data-env="${envZId}"].online`, { timeout: 20_000 });
    expect(await page.textContent(`[data-env="${envZId}"]`)).toBe('online');
    expect(await page.locator('[data-env]').count()).toBe(1);
    expect(await page.locator('nav a[href="/console/admin"]').count()).toBe(0);
    await page.close();

    const admin = await signInAs(ADMIN);
    await admin.waitForURL(`${controller.apiBase}/console`);
    await admin.click('nav a[href="/console/admin"]');
    await admin.waitForURL(`${controller.apiBase}/console/admin`);
    expect((await admin.textContent('main')) ?? '').toContain('me@example.com');
    await admin.close();
  });

  it("keeps a provider sign-in across a controller restart (cookies sealed under console.oauth's keys)", async () => {
    const page = await signInAs(ADMIN);
    await page.waitForURL(`${controller.apiBase}/console`);
    await controller.process.stop();
    const config = join(base, 'controller.json');
    controller = await startControllerProcess(config, join(base, 'controller'), `127.0.0.1:${controller.port}`);
    const reply = await page.goto(`${controller.apiBase}/console/admin`);
    expect(reply?.status()).toBe(200);
    expect((await page.textContent('main')) ?? '').toContain('me@example.com');
    await page.close();
  });

  it('refuses an email without an account', async () => {
    const page = await signInAs('stranger@example.com');
    await page.waitForSelector('text=No account');
    expect((await page.textContent('body')) ?? '').toContain(
      'There is no account for stranger@example.com on this installation',
    );
    expect(await browser.context.cookies()).not.toContainEqual(expect.objectContaining({ name: 'svc-console' }));
    await page.close();
  });

  it('refuses a bad console.oauth naming the field, never quoting the client secret', async () => {
    const secret = 'do-not-echo-this-client-secret-4711';
    const bad = controllerConfig('bad.json', 1, { ...corp(secret, { scopes: 7 }), signing_key: 'short' });
    const run = await svcCli(['controller', '--config', bad, '--data-dir', join(base, 'bad')]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('console.oauth.signing_key');
    expect(run.stderr).toContain('console.oauth.providers[0].scopes');
    expect(run.stderr).not.toContain(secret);
  });
});
