import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessEntry, AgentStatus, ShareEntry } from '../../agent/agent.ts';
import { echoBackend, request } from '../support/raw-http.ts';
import { startServe, svc, tempDir, type ServeProcess } from './harness.ts';

/**
 * `svc serve` as a real process, driven through the real CLI; shares reached through the frontend
 * by host name (127.0.0.1 + Host header: Node does not resolve *.localhost here).
 */
let serve: ServeProcess;
let backend: Awaited<ReturnType<typeof echoBackend>>;
let silent: net.Server;
let closedPort: number;
let base: string;
let site: string;

const host = (token: string) => `${token}.svc.localhost:${serve.port}`;
const viaFrontend = (token: string, path: string, headers: Record<string, string> = {}) =>
  request(serve.port, path, { host: host(token), headers });

async function share(args: string[]): Promise<ShareEntry> {
  const result = await serve.cli(['share', ...args, '--json']);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as ShareEntry;
}

async function status(): Promise<AgentStatus> {
  const result = await serve.cli(['status', '--json']);
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as AgentStatus;
}

beforeAll(async () => {
  backend = await echoBackend();
  silent = net.createServer(() => undefined); // accepts connections, never answers
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  closedPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  base = tempDir('svc-serve-');
  site = join(base, 'site');
  mkdirSync(join(site, 'docs'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<h1>shared folder</h1>');
  writeFileSync(join(site, 'docs', 'notes.txt'), 'notes');
  writeFileSync(join(base, 'secret.txt'), 'outside the share');
  serve = await startServe(join(base, 'data'));
});

afterAll(async () => {
  await serve?.stop();
  await backend?.close();
  silent?.close();
});

describe('svc serve (single machine)', () => {
  let proxyShare: ShareEntry;
  let webShare: ShareEntry;
  let privateShare: ShareEntry;
  let access: AccessEntry;

  it('creates a public proxy share through the CLI and serves it through the frontend by host name', async () => {
    proxyShare = await share(['public', backend.url]);
    expect(proxyShare.token).toMatch(/^[a-z2-7]{12}$/);
    expect(proxyShare).toEqual({
      token: proxyShare.token,
      shareMode: 'public',
      backendMode: 'proxy',
      backendEndpoint: `${backend.url}/`,
      frontendEndpoints: [`http://${proxyShare.token}.svc.localhost:${serve.port}`],
    });
    const reply = await viaFrontend(proxyShare.token, '/hello?x=1', { 'svc-auth-email': 'mallory@example.com' });
    expect(reply.status).toBe(200);
    const seen = JSON.parse(reply.body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/hello?x=1');
    expect(seen.headers['svc-auth-email']).toBeUndefined();
  });

  it('prints the token and frontend endpoint for people', async () => {
    const result = await serve.cli(['share', 'public', backend.url]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /^token: ([a-z2-7]{12})\nfrontend endpoints:\n {2}http:\/\/\1\.svc\.localhost:\d+\n$/,
    );
    const token = /^token: (\S+)/.exec(result.stdout)?.[1] as string;
    expect((await serve.cli(['unshare', token])).stdout).toBe(`removed share ${token}\n`);
  });

  it('serves a folder as a web share and refuses traversal, encoded variants included', async () => {
    webShare = await share(['public', '--backend-mode', 'web', site]);
    expect(webShare.backendMode).toBe('web');
    expect(webShare.backendEndpoint).toBe(site);
    const home = await viaFrontend(webShare.token, '/');
    expect([home.status, home.headers['content-type'], home.body]).toEqual([
      200,
      'text/html; charset=utf-8',
      '<h1>shared folder</h1>',
    ]);
    expect((await viaFrontend(webShare.token, '/docs/notes.txt')).body).toBe('notes');
    expect((await viaFrontend(webShare.token, '/docs/')).status).toBe(404); // no listing by default
    for (const path of [
      '/../secret.txt',
      '/docs/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/%2e%2e%2fsecret.txt',
      '/..%2fsecret.txt',
      '/%252e%252e%252fsecret.txt',
      '/..%5csecret.txt',
      '/..\\secret.txt',
    ]) {
      const reply = await viaFrontend(webShare.token, path);
      expect(reply.status, path).toBeGreaterThanOrEqual(400);
      expect(reply.body, path).not.toContain('outside the share');
    }
  });

  it('resolves a relative folder against the directory the command runs in', async () => {
    const result = await serve.cli(['share', 'public', '--backend-mode', 'web', 'site', '--json'], { cwd: base });
    expect(result.code).toBe(0);
    const entry = JSON.parse(result.stdout) as ShareEntry;
    expect(entry.backendEndpoint).toBe(site);
    expect((await serve.cli(['unshare', entry.token])).code).toBe(0);
  });

  it('reaches a private share only through its access', async () => {
    privateShare = await share(['private', backend.url]);
    expect(privateShare.shareMode).toBe('private');
    expect(privateShare.frontendEndpoints).toEqual([]);
    expect((await viaFrontend(privateShare.token, '/')).status).toBe(404);

    const result = await serve.cli(['access', 'private', privateShare.token, '--json']);
    expect(result.code).toBe(0);
    access = JSON.parse(result.stdout) as AccessEntry;
    expect(access.shareToken).toBe(privateShare.token);
    expect(access.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(new URL(access.endpoint).port);
    const reply = await request(port, '/through-access', { headers: { 'svc-auth-email': 'mallory@example.com' } });
    const seen = JSON.parse(reply.body) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/through-access');
    expect(seen.headers['svc-auth-email']).toBeUndefined();

    const privateWeb = await share(['private', '--backend-mode', 'web', site]);
    const webAccess = JSON.parse(
      (await serve.cli(['access', 'private', privateWeb.token, '--json'])).stdout,
    ) as AccessEntry;
    expect((await request(Number(new URL(webAccess.endpoint).port), '/docs/notes.txt')).body).toBe('notes');
    expect((await serve.cli(['unshare', privateWeb.token])).code).toBe(0);

    const refused = await serve.cli(['access', 'private', proxyShare.token]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`share ${proxyShare.token} is public`);
  });

  it('lists shares and accesses with the seed field names', async () => {
    const current = await status();
    expect(current.shares).toEqual(expect.arrayContaining([proxyShare, webShare, privateShare]));
    expect(current.accesses).toEqual([access]);
    const human = await serve.cli(['status']);
    expect(human.stdout).toContain(proxyShare.token);
    expect(human.stdout).toContain(access.endpoint);
  });

  describe('http-healthcheck', () => {
    const check = (token: string, ...rest: string[]) =>
      serve.cli(['agent', 'share', 'http-healthcheck', token, ...rest]);

    it('prints healthy when the status matches', async () => {
      expect(await check(proxyShare.token, 'GET', '/ok', '200')).toMatchObject({ code: 0, stdout: 'healthy\n' });
    });

    it('prints the exact unhealthy text when the status differs', async () => {
      expect(await check(proxyShare.token, 'GET', '/status/503', '200')).toMatchObject({
        code: 1,
        stdout: "unhealthy; unexpected status code; got '503', want '200'\n",
      });
      const json = await serve.cli([
        'agent',
        'share',
        'http-healthcheck',
        proxyShare.token,
        'GET',
        '/status/503',
        '200',
        '--json',
      ]);
      expect(JSON.parse(json.stdout)).toEqual({
        healthy: false,
        error: "unexpected status code; got '503', want '200'",
      });
    });

    it('reports a closed port as a failed request', async () => {
      const down = await share(['public', `http://127.0.0.1:${closedPort}`]);
      expect(await check(down.token, 'GET', '/', '200')).toMatchObject({
        code: 1,
        stdout: `unhealthy; failed to execute request: connect ECONNREFUSED 127.0.0.1:${closedPort}\n`,
      });
    });

    it('reports a backend that never answers as a timeout, without hanging', async () => {
      const mute = await share(['public', `http://127.0.0.1:${(silent.address() as AddressInfo).port}`]);
      expect(await check(mute.token, 'GET', '/', '200', '--timeout', '500ms')).toMatchObject({
        code: 1,
        stdout: 'unhealthy; failed to execute request: timed out after 500ms waiting for a response\n',
      });
    });

    it('refuses web shares and unknown tokens clearly', async () => {
      const web = await check(webShare.token, 'GET', '/', '200');
      expect(web.code).toBe(1);
      expect(web.stderr).toBe(
        `svc: share ${webShare.token} has backend mode web; health checks exist only for proxy backends\n`,
      );
      const unknown = await check('nosuchshare0', 'GET', '/', '200');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe('svc: unknown share token "nosuchshare0"\n');
      const longTimeout = await check(proxyShare.token, 'GET', '/', '200', '--timeout', '1h');
      expect([longTimeout.code, longTimeout.stderr]).toEqual([
        1,
        'svc: invalid health check:\n  - --timeout: must be between 1ms and 5m, got "1h"\n',
      ]);
      const badTimeout = await check(proxyShare.token, 'GET', '/', '200', '--timeout', 'soon');
      expect([badTimeout.code, badTimeout.stderr]).toEqual([
        1,
        'svc: invalid health check:\n  - --timeout: must be a duration such as 500ms, 5s or 1m, got "soon"\n',
      ]);
      const badStatus = await check(proxyShare.token, 'GET', '/', 'ok');
      expect(badStatus.code).toBe(2);
      expect(badStatus.stderr).toContain('must be an HTTP status code');
    });
  });

  it('refuses bad input with a clear message and leaves existing shares untouched', async () => {
    const before = await status();
    const occupied = net.createServer();
    await new Promise<void>((r) => occupied.listen(0, '127.0.0.1', r));
    const busyPort = (occupied.address() as AddressInfo).port;
    const cases: [string[], number, string][] = [
      [
        ['share', 'public', '--backend-mode', 'ftp', backend.url],
        2,
        "argument 'ftp' is invalid. Allowed choices are proxy, web",
      ],
      [['share', 'public', 'not a url'], 1, '<target>: must be an absolute URL, got "not a url"'],
      [['share', 'public', 'file:///etc'], 1, '<target>: must be an http or https URL'],
      [
        ['share', 'public', '--oauth-provider', 'nope', backend.url],
        1,
        '--oauth-provider: unknown provider "nope" (configured: none)',
      ],
      [
        ['share', 'public', '--backend-mode', 'web', join(base, 'missing')],
        1,
        `folder ${join(base, 'missing')} does not exist`,
      ],
      [['share', 'private', '--backend-mode', 'web', join(base, 'secret.txt')], 1, 'is not a folder'],
      [
        ['access', 'private', privateShare.token, '--bind', `127.0.0.1:${busyPort}`],
        1,
        `cannot listen on 127.0.0.1:${busyPort}: address already in use`,
      ],
      [
        ['access', 'private', privateShare.token, '--bind', 'here'],
        1,
        '--bind: must be ip:port (for example 0.0.0.0:8080), got "here"',
      ],
      [['unshare', 'nosuchshare0'], 1, 'unknown share token "nosuchshare0"'],
    ];
    try {
      for (const [args, code, message] of cases) {
        const result = await serve.cli(args);
        expect({ args, code: result.code }).toEqual({ args, code });
        expect(result.stderr, args.join(' ')).toContain(message);
      }
    } finally {
      occupied.close();
    }
    expect(await status()).toEqual(before);
  });

  it('reports glob and duration problems together', async () => {
    const result = await serve.cli([
      'share',
      'public',
      '--oauth-provider',
      'dev',
      '--oauth-email-address-pattern',
      '[abc',
      '--oauth-check-interval',
      'often',
      backend.url,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--oauth-email-address-pattern[0]: glob "[abc" has an unclosed \'[\'');
    expect(result.stderr).toContain('--oauth-check-interval: must be a duration such as 30m or 3h, got "often"');
  });

  it('refuses a second svc serve on the same data directory', async () => {
    const second = await svc(['serve', '--data-dir', serve.dataDir, '--listen', '127.0.0.1:0']);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('another svc serve is already running with this data directory');
  });

  it('keeps shares and accesses across a restart and still serves them', async () => {
    const before = await status();
    expect(await serve.stop()).toBe(0);
    serve = await startServe(serve.dataDir);
    expect(await status()).toEqual({
      shares: before.shares?.map((s) => ({
        ...s,
        frontendEndpoints: s.frontendEndpoints.map((e) => e.replace(/:\d+$/, `:${serve.port}`)),
      })),
      accesses: before.accesses,
    });
    expect(JSON.parse((await viaFrontend(proxyShare.token, '/again')).body)).toMatchObject({ url: '/again' });
    expect((await viaFrontend(webShare.token, '/docs/notes.txt')).body).toBe('notes');
    const port = Number(new URL(access.endpoint).port);
    expect(JSON.parse((await request(port, '/after-restart')).body)).toMatchObject({ url: '/after-restart' });
  });

  it('unshares: the share and its accesses are gone and no longer served', async () => {
    const result = await serve.cli(['unshare', privateShare.token]);
    expect(result.stdout).toBe(`removed share ${privateShare.token}\nremoved access ${access.token}\n`);
    await expect(request(Number(new URL(access.endpoint).port), '/')).rejects.toThrow(/ECONNREFUSED/);
    expect((await serve.cli(['unshare', webShare.token])).code).toBe(0);
    expect((await viaFrontend(webShare.token, '/')).status).toBe(404);
    const current = await status();
    expect(current.accesses).toBeNull();
    expect(current.shares?.map((s) => s.token)).not.toContain(webShare.token);
  });
});

describe('svc CLI without a running service', () => {
  it('says how to start one', async () => {
    const result = await svc(['status', '--data-dir', tempDir('svc-empty-')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/no local agent at .*agent\.sock: start one with `svc serve`/);
  });
});
