import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM_PATH = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Debian's Chromium, headless, with the flags that keep it off the (closed) network; a fresh
 * profile each time. `*.localhost` resolves to loopback inside Chromium. `extraArgs` are added to the
 * command line (e.g. `--host-resolver-rules` mapping hosts to other loopback addresses).
 */
export async function launchBrowser(
  extraArgs: string[] = [],
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'svc-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--no-first-run',
      ...extraArgs,
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Signs in on the development identity provider's login form (oidc-provider devInteractions). */
export async function devLogin(page: Page, email: string): Promise<void> {
  await page.waitForSelector('input[name=login]');
  await page.fill('input[name=login]', email);
  await page.fill('input[name=password]', 'any-password');
  await page.click('button[type=submit]');
}

/** The URLs the page's main frame goes to from now on, redirect hops included. */
export function navigations(page: Page): string[] {
  const urls: string[] = [];
  page.on('request', (r) => {
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) urls.push(r.url());
  });
  return urls;
}

/**
 * A login began on the endpoint host, as the browser saw it: the share host sent it to
 * `<endpoint>/<provider>/auth/start?ticket=…` (in `hops`, from `navigations`), and every login
 * cookie it holds is that host's own, host-only. Call it on the provider's page: the callback
 * clears the login cookie.
 */
export async function expectLoginStartedOn(
  page: Page,
  hops: readonly string[],
  endpoint: URL,
  provider: string,
): Promise<void> {
  const start = new URL(`/${provider}/auth/start`, endpoint).href;
  expect(
    hops.find((u) => u.startsWith(`${start}?ticket=`)),
    hops.join('\n'),
  ).toBeDefined();
  const logins = (await page.context().cookies()).filter((c) => c.name.endsWith('-login'));
  expect(logins.map((c) => c.domain)).toEqual([endpoint.hostname]);
}
