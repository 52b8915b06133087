import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

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
