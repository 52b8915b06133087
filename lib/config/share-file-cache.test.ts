import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configProblems } from '../../test/support/config-problems.ts';
import { openSharesConfig } from '../../test/support/frontend-process.ts';
import { projectFiles } from '../../test/support/projected-volume.ts';
import type { ShareRoute } from '../share/spec.ts';
import { loadFrontendConfig } from './frontend.ts';
import { ShareFileCache } from './share-file-cache.ts';

const target = new URL('http://app.team.svc:80');
const list = (...tokens: string[]) =>
  JSON.stringify(tokens.map((token) => ({ token, target: target.href, oauth_provider: 'google' })));

let root: string;
let configFile: string;
let shares: string;
let cache: ShareFileCache;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-share-cache-'));
  mkdirSync(join(root, 'frontend'));
  configFile = join(root, 'frontend', 'config.yaml');
  shares = join(root, 'auth-shares');
  writeConfig('google');
  cache = new ShareFileCache();
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A config serving the share `main`, with the share directory and the providers named. */
function writeConfig(...providers: string[]): void {
  const config = openSharesConfig(['main'], target).replace(
    /^ {2}providers:\n.*\n/m,
    `  providers:\n${providers.map((name) => `    - { name: ${name}, type: idp1, client_id: id, client_secret: very-secret-value }\n`).join('')}`,
  );
  writeFileSync(configFile, `${config}share_directory: ../auth-shares\n`);
}

const load = () => loadFrontendConfig(configFile, { shareFiles: cache });
const byToken = (routes: readonly ShareRoute[]) => new Map(routes.map((s) => [s.token, s]));
const at = (name: string) => join(shares, name);

describe('share files kept between loads', () => {
  it('reuses the shares of a file whose text is unchanged, even after the kubelet swapped its data', () => {
    project({ 'shares-00.yaml': list('alpha', 'beta'), 'shares-01.yaml': list('gamma') }, 1);
    const first = byToken(load().shares);
    project({ 'shares-00.yaml': list('alpha', 'beta'), 'shares-01.yaml': list('gamma', 'delta') }, 2);
    const second = byToken(load().shares);
    expect([...second.keys()]).toEqual(['main', 'alpha', 'beta', 'gamma', 'delta']);
    expect(second.get('alpha')).toBe(first.get('alpha'));
    expect(second.get('beta')).toBe(first.get('beta'));
    // The changed file was validated again; the config file's own list always is.
    expect(second.get('gamma')).not.toBe(first.get('gamma'));
    expect(second.get('main')).not.toBe(first.get('main'));
    // Without the cache nothing is reused.
    expect(byToken(loadFrontendConfig(configFile).shares).get('alpha')).not.toBe(first.get('alpha'));
  });

  it('validates a changed file again, reporting its problems by its path, and forgets a removed one', () => {
    project({ 'shares-00.yaml': list('alpha'), 'shares-01.yaml': list('gamma') }, 1);
    const first = byToken(load().shares);
    project({ 'shares-00.yaml': list('alpha'), 'shares-01.yaml': list('Not_A_Token') }, 2);
    expect(configProblems(load)).toEqual([
      expect.stringMatching(new RegExp(`^${escape(at('shares-01.yaml'))}\\[0\\]\\.token: `)),
    ]);
    rmSync(join(shares, 'shares-01.yaml'));
    rmSync(join(shares, 'shares-00.yaml'));
    expect([...byToken(load().shares).keys()]).toEqual(['main']);
    project({ 'shares-00.yaml': list('alpha') }, 3);
    expect(byToken(load().shares).get('alpha')).not.toBe(first.get('alpha'));
  });

  it('validates every file again when the config’s providers change', () => {
    project({ 'shares-00.yaml': list('alpha') }, 1);
    const first = byToken(load().shares);
    writeConfig('google', 'other');
    expect(byToken(load().shares).get('alpha')).not.toBe(first.get('alpha'));
    writeConfig('other');
    expect(configProblems(load)).toEqual([
      `${at('shares-00.yaml')}[0].oauth_provider: unknown provider "google" (configured: other)`,
    ]);
  });

  it('finds a token in a kept file and a changed one, naming both places either way round', () => {
    project({ 'shares-00.yaml': list('alpha'), 'shares-01.yaml': list('beta') }, 1);
    load();
    project({ 'shares-00.yaml': list('alpha'), 'shares-01.yaml': list('beta', 'alpha') }, 2);
    expect(configProblems(load)).toEqual([
      `${at('shares-01.yaml')}[1].token: duplicate share token "alpha" (also at ${at('shares-00.yaml')}[0])`,
    ]);
    project({ 'shares-00.yaml': list('alpha', 'beta'), 'shares-01.yaml': list('beta', 'alpha') }, 3);
    expect(configProblems(load)).toEqual([
      `${at('shares-01.yaml')}[0].token: duplicate share token "beta" (also at ${at('shares-00.yaml')}[1])`,
      `${at('shares-01.yaml')}[1].token: duplicate share token "alpha" (also at ${at('shares-00.yaml')}[0])`,
    ]);
  });
});

function project(files: Record<string, string>, generation: number): void {
  projectFiles(shares, files, generation);
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
