import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { OpenApi } from '../../controller/openapi.ts';
import { svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';
import {
  cliShare,
  cliUnshare,
  startControllerProcess,
  startEnabledAgent,
  startPublicFrontendProcess,
} from '../support/installation.ts';
import { request } from '../support/raw-http.ts';
import { spawnTunnelBackend } from '../support/tunnel-backend.ts';
import { until } from '../support/until.ts';

/**
 * The installation split as on Kubernetes, all real processes on loopback: `svc controller` with a
 * `public_frontend` section (file store), `svc public-frontend` reading the share registry from the
 * controller's frontend API, and a `svc serve` agent enabled against the controller whose shares go
 * through its tunnel to the public frontend. The public frontend starts before the controller (its
 * /readyz waits for the first registry snapshot) and survives the controller's restart.
 */
const DOMAIN = 'pf.localhost';
const CREDENTIAL = 'frontend-credential-0123456789-abcdefghijklmnopqrstuvwxyz';
const openapi = new OpenApi();

let base: string;
let controller: Process;
let controllerConfig: string;
let controllerPort: number;
let publicFrontend: Process;
let frontendPort: number;
let laptop: Process;
let backend: ChildProcess;
let backendPort: number;
const dirs = { controller: '', laptop: '' };

const apiBase = () => `http://127.0.0.1:${controllerPort}`;
const host = (token: string) => `${token}.${DOMAIN}:${frontendPort}`;
const visit = (token: string) => request(frontendPort, '/echo', { host: host(token) });
const answered = (token: string, status: number) =>
  until(async () => {
    const reply = await visit(token);
    return reply.status === status ? reply : undefined;
  }, `share ${token} to answer ${status}`);
const readyz = async () => (await request(frontendPort, '/readyz', { host: `127.0.0.1:${frontendPort}` })).status;

async function startController(listen: string): Promise<void> {
  ({ process: controller, port: controllerPort } = await startControllerProcess(
    controllerConfig,
    dirs.controller,
    listen,
  ));
}

const share = (args: string[]) => cliShare(dirs.laptop, args);

function frontendApi(path: string, init: { token?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${apiBase()}/api/v1/frontend${path}`, {
    method: init.body === undefined ? 'GET' : 'POST',
    headers: {
      ...(init.token !== undefined ? { 'x-frontend-token': init.token } : {}),
      ...(init.body !== undefined ? { 'content-type': MEDIA_TYPE } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

beforeAll(async () => {
  base = tempDir('svc-public-frontend-');
  dirs.controller = join(base, 'controller');
  dirs.laptop = join(base, 'laptop');
  const credentialFile = join(base, 'credential');
  writeFileSync(credentialFile, `${CREDENTIAL}\n`, { mode: 0o600 });

  // The controller's port first (a plain controller), so the public frontend can be pointed at it
  // while no controller runs there.
  controllerConfig = writeYaml(join(base, 'plain.yaml'), ['controller:', '  listen: 127.0.0.1:0']);
  await startController('127.0.0.1:0');
  await controller.stop();

  const frontendConfig = writeYaml(join(base, 'public-frontend.yaml'), [
    'frontend:',
    '  listen: 127.0.0.1:0',
    `  domain: ${DOMAIN}`,
    'tunnel:',
    '  max_tunnels_per_environment: 2',
    'controller:',
    `  url: ${apiBase()}`,
    `  credential_file: ${credentialFile}`,
  ]);
  ({ process: publicFrontend, port: frontendPort } = await startPublicFrontendProcess(frontendConfig));

  controllerConfig = writeYaml(join(base, 'controller.yaml'), [
    'controller:',
    '  listen: 127.0.0.1:0',
    'public_frontend:',
    `  domain: ${DOMAIN}`,
    `  endpoint_url: http://127.0.0.1:${frontendPort}`,
    '  credential_file: credential',
  ]);

  ({ child: backend, port: backendPort } = await spawnTunnelBackend());
}, 120_000);

afterAll(async () => {
  backend?.kill('SIGKILL');
  await laptop?.stop();
  await publicFrontend?.stop();
  await controller?.stop();
});

describe('svc public-frontend with svc controller (public_frontend)', () => {
  it('answers /readyz 503 until the first registry snapshot arrived (controller not up yet), then 200', async () => {
    expect(await readyz()).toBe(503);
    const body = (await request(frontendPort, '/readyz', { host: `127.0.0.1:${frontendPort}` })).body;
    expect(body).toMatch(/no share registry snapshot yet/);
    await startController(`127.0.0.1:${controllerPort}`);
    await until(async () => ((await readyz()) === 200 ? true : undefined), '/readyz 200');
    expect(controller.output()).toMatch(/frontend: +http:\/\/127\.0\.0\.1:\d+ \(public_frontend/);
  });

  it('a public share of an agent enabled against the controller is served through the public frontend', async () => {
    ({ agent: laptop } = await startEnabledAgent(dirs.controller, dirs.laptop, apiBase()));

    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    expect(entry.frontendEndpoints).toEqual([`http://${entry.token}.${DOMAIN}:${frontendPort}`]);
    const reply = await answered(entry.token, 200);
    const seen = JSON.parse(reply.body) as { headers: Record<string, string> };
    expect(seen.headers.host).toBe(`127.0.0.1:${backendPort}`);
    expect(seen.headers['x-forwarded-host']).toBe(host(entry.token));

    await cliUnshare(dirs.laptop, entry.token);
    const gone = await answered(entry.token, 404);
    expect(gone.body).toContain('Share not found');
  });

  it('keeps serving its last view while the controller is stopped, and resyncs when it is back', async () => {
    const kept = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await answered(kept.token, 200);
    await controller.stop();
    await publicFrontend.waitFor(/cannot reach the controller; serving the last view/);
    expect((await visit(kept.token)).status).toBe(200);
    expect(await readyz()).toBe(200);

    await startController(`127.0.0.1:${controllerPort}`);
    await publicFrontend.waitFor(/controller reachable again; resynced/);
    const later = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await answered(later.token, 200);
    await cliUnshare(dirs.laptop, kept.token);
    await answered(kept.token, 404);
  });

  it('refuses a wrong or missing X-FRONTEND-TOKEN with 401 and logs the peer, never the value', async () => {
    const wrong = 'wrong-frontend-credential-9876543210-zyxwvutsrq';
    for (const token of [wrong, undefined]) {
      const res = await frontendApi('/registry', token === undefined ? {} : { token });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { code: string };
      expect(body.code).toBe('unauthorized');
      expect(openapi.validateResponse('/frontend/registry', 401, body)).toEqual([]);
    }
    const forged = await frontendApi('/authenticate', { token: wrong, body: { environmentToken: 'svcv_x_y' } });
    expect(forged.status).toBe(401);
    await controller.waitFor(/"peer":"127\.0\.0\.1".*frontend API refused: X-FRONTEND-TOKEN missing or wrong/);
    expect(controller.output()).not.toContain(wrong);
    expect(controller.output()).not.toContain(CREDENTIAL);
    expect(publicFrontend.output()).not.toContain(CREDENTIAL);
  });

  it('the frontend API: a registry snapshot per the OpenAPI document; authenticate tells a valid environment token from a forged one', async () => {
    const res = await frontendApi('/registry', { token: CREDENTIAL });
    const snapshot = (await res.json()) as { revision: string; shares: { token: string }[] };
    expect(res.status).toBe(200);
    expect(openapi.validateResponse('/frontend/registry', 200, snapshot)).toEqual([]);
    expect(snapshot.shares.length).toBeGreaterThan(0);

    const started = Date.now();
    const unchanged = await fetch(`${apiBase()}/api/v1/frontend/registry?after=${snapshot.revision}`, {
      headers: { 'x-frontend-token': CREDENTIAL },
      signal: AbortSignal.timeout(1_000),
    }).catch((err: unknown) => err as Error);
    // The long poll holds an unchanged revision (the client gave up first).
    expect(unchanged).toBeInstanceOf(Error);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    const { environmentToken, envZId } = JSON.parse(readFileSync(join(dirs.laptop, 'environment.json'), 'utf8')) as {
      environmentToken: string;
      envZId: string;
    };
    const info = await fetch(`${apiBase()}/api/v1/tunnel/info`, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE, 'x-token': environmentToken },
      body: '{}',
    });
    expect(await info.json()).toEqual({
      tunnelUrl: `ws://127.0.0.1:${frontendPort}/api/v1/tunnel`,
      accessUrl: `ws://127.0.0.1:${frontendPort}/api/v1/tunnel/access`,
      shareUrl: `http://{token}.${DOMAIN}:${frontendPort}`,
      providers: [],
    });
    const ok = await frontendApi('/authenticate', { token: CREDENTIAL, body: { environmentToken } });
    const identity = (await ok.json()) as { envZId: string };
    expect(ok.status).toBe(200);
    expect(identity.envZId).toBe(envZId);
    expect(openapi.validateResponse('/frontend/authenticate', 200, identity)).toEqual([]);
    const forged = await frontendApi('/authenticate', {
      token: CREDENTIAL,
      body: { environmentToken: `svcv_${envZId}_forged-secret-0123456789abcdefghijklmnop` },
    });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { code: string }).code).toBe('environment_not_found');
  });

  it('svc disable closes the agent tunnel on the public frontend and its shares answer 404', async () => {
    const entry = await share(['public', `http://127.0.0.1:${backendPort}`]);
    await answered(entry.token, 200);
    const { envZId } = JSON.parse(readFileSync(join(dirs.laptop, 'environment.json'), 'utf8')) as { envZId: string };
    const disabled = await svcCli(['disable', '--data-dir', dirs.laptop]);
    expect(disabled.code, disabled.stderr).toBe(0);
    await publicFrontend.waitFor(
      new RegExp(`"envZId":"${envZId}".*tunnel: environment revoked; its tunnels are closed`),
    );
    const gone = await answered(entry.token, 404);
    expect(gone.body).toContain('Share not found');
    const snapshot = (await (await frontendApi('/registry', { token: CREDENTIAL })).json()) as {
      shares: unknown[];
      revoked: { envZId: string }[];
    };
    expect(snapshot.shares).toEqual([]);
    expect(snapshot.revoked.map((r) => r.envZId)).toContain(envZId);
  });
});
