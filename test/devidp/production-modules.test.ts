import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSvc, tempDir, type Process } from '../controller/harness.ts';
import { oauthSection } from '../support/installation-oauth.ts';
import { request } from '../support/raw-http.ts';
import { startTestIssuer, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type TestIssuer } from '../support/test-issuer.ts';

/**
 * The development identity provider (devidp/, built on oidc-provider) belongs to `--dev` and the
 * tests. The production frontends never load it: `svc public-frontend` with an `oidc` provider is
 * started with a preload that reports every npm package the process resolved, serves its readiness
 * probe and stops. `svc serve --dev`, which does load it, shows that the report would see it.
 * (`svc frontend` is checked the same way through a whole login in test/sidecar/loaded-modules.test.ts;
 * test/structure.test.ts refuses any import of oidc-provider outside devidp/.)
 */
const PRELOAD = join(import.meta.dirname, '../support/report-loaded-modules.ts');
const dir = tempDir('svc-devidp-modules-');
let serial = 0;

/** Starts `svc <args>` with the preload, waits for `ready`, runs `during`, stops it and returns its packages. */
async function packagesOf(
  args: readonly string[],
  ready: RegExp,
  during: (proc: Process) => Promise<void> = async () => {},
): Promise<string[]> {
  const report = join(dir, `loaded-${++serial}.json`);
  const proc = await startSvc(args, ready, {
    env: { NODE_OPTIONS: `--import=${PRELOAD}`, SVC_TEST_LOADED_MODULES: report },
  });
  try {
    await during(proc);
  } finally {
    expect(await proc.stop(), proc.output()).toBe(0);
  }
  return (JSON.parse(readFileSync(report, 'utf8')) as { packages: string[] }).packages;
}

describe('only --dev loads the development identity provider', () => {
  let issuer: TestIssuer;
  const packages: Record<string, string[]> = {};
  let readyz: number;

  beforeAll(async () => {
    issuer = await startTestIssuer();
    const credentialFile = join(dir, 'credential');
    writeFileSync(credentialFile, `${'c'.repeat(48)}\n`, { mode: 0o600 });
    const oauth = oauthSection(issuer.issuer);
    oauth.providers = [
      {
        ...(oauth.providers as Record<string, unknown>[])[0],
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
      },
    ];
    const config = join(dir, 'public-frontend.json');
    writeFileSync(
      config,
      JSON.stringify({
        oauth: { ...oauth, bind_address: '127.0.0.1:0' },
        // No controller listens here: the frontend starts and waits for its first registry snapshot.
        controller: { url: 'http://127.0.0.1:9', credential_file: credentialFile },
      }),
    );
    packages['svc public-frontend'] = await packagesOf(
      ['public-frontend', '--config', config],
      /svc public-frontend is listening/,
      async (proc) => {
        const port = Number((await proc.waitFor(/frontend: {2}listening on port (\d+)/))[1]);
        readyz = (await request(port, '/readyz', { host: `127.0.0.1:${port}` })).status;
      },
    );
    packages['svc serve --dev'] = await packagesOf(
      ['serve', '--dev', '--data-dir', join(dir, 'serve'), '--listen', '127.0.0.1:0'],
      /svc serve is ready/,
    );
  }, 120_000);
  afterAll(async () => {
    await issuer?.close();
  });

  it('svc public-frontend served its readiness probe without loading oidc-provider', () => {
    expect(readyz).toBe(503);
    expect(packages['svc public-frontend']).toEqual(expect.arrayContaining(['commander']));
    expect(packages['svc public-frontend']).not.toContain('oidc-provider');
  });

  it('svc serve --dev loads it (the report sees the package when it is loaded)', () => {
    expect(packages['svc serve --dev']).toContain('oidc-provider');
  });
});
