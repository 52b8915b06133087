import { mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { request } from '../support/raw-http.ts';
import { startServe, tempDir, type ServeProcess } from '../serve/harness.ts';

/**
 * Attacks on the single-machine service as a user runs it (`svc serve` and the CLI): a web listing
 * must not reveal what symlinks point at outside the folder, a health check must reach only the
 * share's own backend, and a data directory others can read is tightened before anything is
 * written to it.
 */
const figures = suiteFigures('serve-local');
let base: string;
let serve: ServeProcess;
let own: EchoBackend;
let other: EchoBackend;

beforeAll(async () => {
  [own, other] = await Promise.all([startEchoBackend(), startEchoBackend()]);
  base = tempDir('svc-adv-serve-');
  const dataDir = join(base, 'data');
  mkdirSync(dataDir, { mode: 0o755 });
  serve = await startServe(dataDir);
});

afterAll(async () => {
  figures.write();
  await serve?.stop();
  await Promise.all([own?.close(), other?.close()]);
});

describe('data directory', () => {
  it('an existing data directory with mode 0755 is tightened to 0700, and the user is told', () => {
    expect(statSync(serve.dataDir).mode & 0o777).toBe(0o700);
    expect(serve.output()).toMatch(/data directory \S+ had mode 0755; tightened to 0700/);
    figures.attack({
      attack: 'Data directory readable by others',
      tried: 1,
      held: 1,
      fixed:
        'an existing directory was used with its wider mode; now tightened to 0700 (refused when owned by another user)',
    });
  });
});

describe('web listing', () => {
  it('lists files and symlinks inside the folder, never symlinks that lead out of it', async () => {
    const site = join(base, 'site');
    mkdirSync(join(site, 'inner'), { recursive: true });
    writeFileSync(join(site, 'visible.txt'), 'v');
    writeFileSync(join(site, 'inner', 'deep.txt'), 'd');
    writeFileSync(join(base, 'secret.txt'), 'outside the share');
    const links: [string, string, boolean][] = [
      ['link-to-visible.txt', join(site, 'visible.txt'), true],
      ['link-to-inner', join(site, 'inner'), true],
      ['link-to-secret.txt', join(base, 'secret.txt'), false],
      ['link-to-parent', base, false],
      ['link-to-etc-passwd', '/etc/passwd', false],
      ['link-to-root', '/', false],
      ['dangling-link', join(base, 'does-not-exist'), false],
      ['relative-escape', '../secret.txt', false],
    ];
    for (const [name, to] of links) symlinkSync(to, join(site, name));
    const created = await serve.cli(['share', 'public', '--backend-mode', 'web', '--web-listing', site, '--json']);
    expect(created.code).toBe(0);
    const { token } = JSON.parse(created.stdout) as { token: string };
    const listing = await request(serve.port, '/', { host: `${token}.svc.localhost:${serve.port}` });
    expect(listing.status).toBe(200);
    expect(listing.body).toContain('visible.txt');
    expect(listing.body).toContain('href="./inner/"');
    const tally = figures.attackClass(
      'Web listing of symlinks leading out of the folder',
      'names of symlinks to outside the folder were listed; now left out',
    );
    for (const [name, , listed] of links) {
      await tally.run(() => {
        if (listed) expect(listing.body, name).toContain(`>${name}`);
        else expect(listing.body, name).not.toContain(name);
        if (!listed) expect(listing.body).not.toContain('outside the share');
      });
      const followed = await request(serve.port, `/${name}`, { host: `${token}.svc.localhost:${serve.port}` });
      if (!listed) expect(followed.status, name).toBe(404);
    }
  });
});

describe('health check reaches only the share’s own backend', () => {
  let token: string;
  beforeAll(async () => {
    const created = await serve.cli(['share', 'public', own.url.href, '--json']);
    token = (JSON.parse(created.stdout) as { token: string }).token;
  });

  it('checks a path on the backend', async () => {
    const ok = await serve.cli(['agent', 'share', 'http-healthcheck', token, 'GET', '/healthz', '200']);
    expect(ok.stdout).toBe('healthy\n');
    expect(own.seen.at(-1)?.url).toBe('/healthz');
  });

  const otherHost = () => other.url.host;
  const endpoints: [string, () => string][] = [
    ['an absolute URL', () => `http://${otherHost()}/x`],
    ['a scheme-relative URL', () => `//${otherHost()}/x`],
    ['user-info style', () => `@${otherHost()}/x`],
    ['a backslash', () => `\\\\${otherHost()}\\x`],
    ['a slash then a backslash', () => `/\\${otherHost()}/x`],
    ['an https URL', () => `https://${otherHost()}/x`],
    ['no leading slash', () => 'healthz'],
    ['a tab', () => '/health\tz'],
    ['a CR/LF (header injection)', () => '/x HTTP/1.1\r\nHost: evil'],
  ];
  const tally = figures.attackClass(
    'Health check endpoint pointing elsewhere (URL, //host, @host, backslashes)',
    'endpoints that are not a plain path were appended to the target; now refused as bad input',
  );

  it.each(endpoints)('refuses %s, and nothing reaches another host', (_what, endpoint) =>
    tally.run(async () => {
      const before = { own: own.seen.length, other: other.seen.length };
      const refused = await serve.cli(['agent', 'share', 'http-healthcheck', token, 'GET', endpoint(), '200']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("<path>: must be a path on the share's backend");
      expect(other.seen.length).toBe(before.other);
      expect(own.seen.length).toBe(before.own);
    }),
  );
});
