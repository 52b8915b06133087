import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { api, startSvc, svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';
import { devLogin, expectLoginStartedOn, launchBrowser, navigations } from '../support/browser.ts';
import { createLab, type NetnsLab } from '../support/netns.ts';
import { request } from '../support/raw-http.ts';
import { spawnTunnelBackend, websocketRoundTrip } from '../support/tunnel-backend.ts';
import { until } from '../support/until.ts';
import { writeInstallationConfig } from './netns-installation.ts';

/**
 * The user story of the tunnel, all real processes and real network separation. The installation
 * (`svc controller --dev` with its public frontend) runs on this machine; the "laptop" and a
 * "second" machine each run `svc serve` in their own network namespace, reaching the installation
 * only through a bridge address of this machine. The laptop's service listens on the laptop
 * namespace's loopback, which nothing outside that namespace can reach: every answer below came
 * through the laptop's outbound tunnel.
 */
let lab: NetnsLab;
let base: string;
let installation: Process;
let installConfig: string;
let apiBase: string;
let frontendPort: number;
let laptop: Process;
let second: Process;
let backend: ChildProcess;
let backendPort: number;
let account: string;
const dirs = { installation: '', laptop: '', second: '' };

const inNs = (machine: string) => lab.exec(machine, []);
const host = (token: string) => `${token}.svc.localhost:${frontendPort}`;
const cli = (machine: 'laptop' | 'second', args: string[]) =>
  svcCli([...args, '--data-dir', dirs[machine]], { prefix: inNs(machine) });
const served = (token: string, path = '/echo') =>
  until(async () => {
    const reply = await request(frontendPort, path, { host: host(token) });
    return reply.status === 200 ? reply : undefined;
  }, `share ${token} to be served`);

async function startInstallation(args: string[] = []): Promise<void> {
  installation = await startSvc(
    ['controller', '--config', installConfig, '--data-dir', dirs.installation, '--dev', ...args],
    /frontend: {2}listening on port (\d+)/,
  );
  apiBase = ((await installation.waitFor(/api: +(http:\/\/\S+)\/api\/v1/))[1] as string).trim();
  frontendPort = Number((await installation.waitFor(/frontend: {2}listening on port (\d+)/))[1]);
}

function startServeIn(machine: 'laptop' | 'second'): Promise<Process> {
  return startSvc(['serve', '--data-dir', dirs[machine], '--listen', '127.0.0.1:0'], /svc serve is ready/, {
    prefix: inNs(machine),
  });
}

async function share(args: string[]): Promise<{ token: string; frontendEndpoints: string[] }> {
  const result = await cli('laptop', ['share', ...args, '--json']);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { token: string; frontendEndpoints: string[] };
}

beforeAll(async () => {
  lab = createLab(['laptop', 'second']);
  base = tempDir('svc-tunnel-e2e-');
  for (const key of Object.keys(dirs) as (keyof typeof dirs)[]) dirs[key] = join(base, key);
  installConfig = await writeInstallationConfig(dirs.installation, join(base, 'installation.yaml'), lab.hostAddress);
  await startInstallation();
  account = (
    await svcCli(['admin', 'create', 'account', 'me@example.com', '--data-dir', dirs.installation])
  ).stdout.trim();

  ({ child: backend, port: backendPort } = await spawnTunnelBackend((argv) => lab.exec('laptop', argv)));
  laptop = await startServeIn('laptop');
  second = await startServeIn('second');
  for (const machine of ['laptop', 'second'] as const) {
    const enabled = await cli(machine, ['enable', account, '--api-endpoint', apiBase]);
    expect(enabled.code, enabled.stderr).toBe(0);
  }
  await laptop.waitFor(/tunnel: publishing shares through the installation/);
  await laptop.waitFor(/tunnel: connected to the installation/);
}, 180_000);

afterAll(async () => {
  backend?.kill('SIGKILL');
  await laptop?.stop();
  await second?.stop();
  await installation?.stop();
  lab?.remove();
});

describe('a laptop behind NAT publishes through the installation', () => {
  it('the laptop service is not reachable from the installation side', async () => {
    const direct = await new Promise<string>((resolve) => {
      http
        .get({ host: lab.machines.laptop?.address, port: backendPort, path: '/echo', timeout: 2000 }, () =>
          resolve('answered'),
        )
        .on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
        .on('timeout', () => resolve('timeout'));
    });
    expect(direct).not.toBe('answered');
  });

  it('svc share public prints the installation URL and the share answers through the tunnel', async () => {
    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    expect(entry.frontendEndpoints).toEqual([`http://${entry.token}.svc.localhost:${frontendPort}`]);
    const reply = await served(entry.token);
    const seen = JSON.parse(reply.body) as { headers: Record<string, string> };
    expect(seen.headers.host).toBe(`127.0.0.1:${backendPort}`);
    expect(seen.headers['x-forwarded-host']).toBe(host(entry.token));
  });

  it('a web share, a websocket, and a 50 MB download that does not stall a small request', async () => {
    const site = join(base, 'site');
    mkdirSync(site, { recursive: true });
    writeFileSync(join(site, 'index.html'), '<h1>laptop site</h1>');
    const web = await share(['public', '--backend-mode', 'web', site]);
    expect((await served(web.token, '/')).body).toBe('<h1>laptop site</h1>');

    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await served(entry.token);
    const echoed = await websocketRoundTrip(frontendPort, host(entry.token), 'through the tunnel');
    expect(echoed).toBe('echo:through the tunnel:');

    const big = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http
        .get(
          { host: '127.0.0.1', port: frontendPort, path: '/big?mb=50', headers: { host: host(entry.token) } },
          resolve,
        )
        .on('error', reject);
    });
    big.pause();
    let received = 0;
    big.on('data', (c: Buffer) => (received += c.length));
    expect((await request(frontendPort, '/echo', { host: host(entry.token) })).status).toBe(200);
    expect(big.readableEnded).toBe(false);
    const done = new Promise<void>((resolve) => big.on('end', resolve));
    big.resume();
    await done;
    expect(received).toBe(50 * 1024 * 1024);
  });

  it('an OAuth share: the visitor logs in at the installation; the laptop backend gets the identity headers', async () => {
    const entry = await share([
      'public',
      '--oauth-provider',
      'dev',
      '--oauth-email-address-pattern',
      '*@example.com',
      `http://127.0.0.1:${backendPort}`,
    ]);
    await until(async () => {
      const r = await request(frontendPort, '/echo', { host: host(entry.token) });
      return r.status === 302 ? r : undefined;
    }, 'the login redirect');
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      const hops = navigations(page);
      await page.goto(`http://${host(entry.token)}/echo`);
      // The login began on the installation's endpoint host, which holds the login cookie host-only.
      await expectLoginStartedOn(page, hops, new URL(`http://auth.svc.localhost:${frontendPort}`), 'dev');
      await devLogin(page, 'visitor@example.com');
      await page.waitForURL(`http://${host(entry.token)}/echo`);
      const seen = JSON.parse((await page.textContent('body')) ?? '{}') as { headers: Record<string, string> };
      expect(seen.headers['svc-auth-provider']).toBe('dev');
      expect(seen.headers['svc-auth-email']).toBe('visitor@example.com');
      expect(seen.headers['svc-auth-expires']).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(seen.headers.cookie ?? '').not.toContain('svc-auth-session');
    } finally {
      await browser.close();
    }
  });

  it('the second machine reaches a private share of the laptop through the installation', async () => {
    const entry = await share(['private', `http://127.0.0.1:${backendPort}`]);
    expect(entry.frontendEndpoints).toEqual([]);
    expect((await request(frontendPort, '/echo', { host: host(entry.token) })).status).toBe(404);
    const address = lab.machines.second?.address as string;
    let last = '';
    const access = await until(async () => {
      const r = await cli('second', ['access', 'private', entry.token, '--bind', `${address}:0`, '--json']);
      last = r.stderr;
      return r.code === 0 ? (JSON.parse(r.stdout) as { endpoint: string }) : undefined;
    }, 'the access').catch((err: Error) => {
      throw new Error(`${err.message}: ${last}\n${second.output().slice(-3000)}`);
    });
    const port = Number(new URL(access.endpoint).port);
    const reply = await until(async () => {
      const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        http
          .get({ host: address, port, path: '/echo' }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          })
          .on('error', reject);
      });
      return r.status === 200 ? r : undefined;
    }, 'the access to answer');
    expect(JSON.parse(reply.body)).toMatchObject({ url: '/echo' });
  });
});

describe('remote control through the API', () => {
  it('/agent/share creates the share on the laptop and returns the installation URL; status, health check, unshare', async () => {
    expect((await cli('laptop', ['agent', 'enroll', '--yes'])).code).toBe(0);
    await laptop.waitFor(/remoting: connected to the controller/);
    const env = JSON.parse((await import('node:fs')).readFileSync(join(dirs.laptop, 'environment.json'), 'utf8')) as {
      envZId: string;
    };
    const apiUrl = `${apiBase}/api/v1`;
    const created = await api(
      apiUrl,
      '/agent/share',
      { envZId: env.envZId, shareMode: 'public', backendMode: 'proxy', target: `http://127.0.0.1:${backendPort}` },
      { token: account },
    );
    expect(created.status).toBe(200);
    const { token, frontendEndpoints } = created.body as { token: string; frontendEndpoints: string[] };
    expect(frontendEndpoints).toEqual([`http://${token}.svc.localhost:${frontendPort}`]);
    await served(token);
    const health = await api(
      apiUrl,
      '/agent/share/http-healthcheck',
      { envZId: env.envZId, shareToken: token, httpVerb: 'GET', endpoint: '/echo', expectedHttpResponse: 200 },
      { token: account },
    );
    expect(health.body).toEqual({ healthy: true });
    expect((await api(apiUrl, '/agent/unshare', { envZId: env.envZId, token }, { token: account })).status).toBe(200);
    expect((await request(frontendPort, '/echo', { host: host(token) })).status).toBe(404);
  });
});

describe('refusals', () => {
  it('a forged environment token is refused at the upgrade and logged without the token', async () => {
    const forged = 'svcv_aaaaaaaaaaaa_forged-secret-0123456789abcdefghijklmnopqrstu';
    const status = await new Promise<number>((resolve) => {
      const socket = new WebSocket(`${apiBase.replace('http', 'ws')}/api/v1/tunnel`, {
        headers: { 'x-environment-token': forged },
      });
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('open', () => resolve(101));
      socket.on('error', () => undefined);
    });
    expect(status).toBe(401);
    await installation.waitFor(/tunnel refused: the environment token is not valid/);
    expect(installation.output()).not.toContain('forged-secret');
  });

  it("a second environment cannot claim the laptop's share token; the share stays the laptop's", async () => {
    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await served(entry.token);
    const secondEnv = JSON.parse(
      (await import('node:fs')).readFileSync(join(dirs.second, 'environment.json'), 'utf8'),
    ) as { environmentToken: string };
    const claim = await api(
      `${apiBase}/api/v1`,
      '/tunnel/shares/register',
      { token: entry.token, shareMode: 'public', backendMode: 'proxy' },
      { token: secondEnv.environmentToken },
    );
    expect(claim.status).toBe(409);
    expect(claim.body).toMatchObject({ code: 'share_token_taken' });
    await installation.waitFor(/refused a share token owned by another environment/);
    expect(JSON.parse((await served(entry.token)).body)).toMatchObject({ url: '/echo' });
  });
});

describe('failures', () => {
  it('kill the agent: the share answers "offline" within seconds; restart it: served again', async () => {
    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await served(entry.token);
    laptop.child.kill('SIGKILL');
    await laptop.stop();
    const offline = await until(
      async () => {
        const r = await request(frontendPort, '/echo', { host: host(entry.token) });
        return r.status === 503 ? r : undefined;
      },
      'the offline page',
      5000,
    );
    expect(offline.body).toContain('Share offline');
    laptop = await startServeIn('laptop');
    await served(entry.token);
  });

  it('kill the installation mid-request and restart it: the request fails cleanly, the agent reconnects, the next succeeds', async () => {
    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await served(entry.token);
    const inFlight = request(frontendPort, '/hold', { host: host(entry.token) }).then(
      (r) => r,
      (err: Error) => err,
    );
    await new Promise((r) => setTimeout(r, 500));
    installation.child.kill('SIGKILL');
    await installation.stop();
    const outcome = await inFlight;
    expect(outcome instanceof Error || (outcome as { body: string }).body !== 'released\n').toBe(true);
    const apiPort = new URL(apiBase).port;
    writeYaml(installConfig, [
      ...(await import('node:fs'))
        .readFileSync(installConfig, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => (l === '  listen: 127.0.0.1:0' ? `  listen: 127.0.0.1:${frontendPort}` : l)),
    ]);
    await startInstallation(['--listen', `${lab.hostAddress}:${apiPort}`]);
    await served(entry.token);
  });
});
