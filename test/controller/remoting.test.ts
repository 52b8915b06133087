import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EnrollmentFile } from '../../lib/remoting/files.ts';
import { echoBackend, request } from '../support/raw-http.ts';
import { api, startSvc, svcCli, tempDir, writeYaml, type Process } from './harness.ts';

/**
 * The single-machine controller end to end, all real processes: `svc serve` running the controller
 * and the agent, the admin/enable/enroll CLI (the enrollment's `yes` typed on stdin), a real HTTP
 * backend, and the REST API driven over HTTP. Every API answer is checked against the OpenAPI document.
 */
let serve: Process;
let backend: Awaited<ReturnType<typeof echoBackend>>;
let dataDir: string;
let apiBase: string;
let apiUrl: string;
let frontendPort: number;
let zId: string;
let alice: string;
let bob: string;
let aliceEnv: string;
let bobEnv: string;

beforeAll(async () => {
  backend = await echoBackend();
  const base = tempDir('svc-controller-');
  dataDir = join(base, 'data');
  const identity = await svcCli(['admin', 'create', 'identity', 'ctl', '--data-dir', dataDir]);
  expect(identity.code).toBe(0);
  zId = identity.stdout.trim();
  const config = writeYaml(join(base, 'svc.yaml'), [
    'frontend:',
    '  listen: 127.0.0.1:0',
    'controller:',
    '  listen: 127.0.0.1:0',
    'agent_controller:',
    `  z_id: ${zId}`,
    `  identity_path: ${join(dataDir, 'identities', 'ctl.json')}`,
  ]);
  serve = await startSvc(['serve', '--config', config, '--data-dir', dataDir], /controller: (http:\/\/\S+)\/api\/v1/);
  apiBase = (await serve.waitFor(/controller: (http:\/\/\S+)\/api\/v1/))[1] as string;
  apiUrl = `${apiBase}/api/v1`;
  frontendPort = Number((await serve.waitFor(/frontend: {2}listening on port (\d+)/))[1]);
});

afterAll(async () => {
  await serve?.stop();
  await backend?.close();
});

const post = (path: string, body: unknown, token = alice) => api(apiUrl, path, body, { token });

describe('controller and enrolled agent (svc serve)', () => {
  it('creates a controller identity: an Ed25519 key pair file (0600) named by the printed z_id', () => {
    expect(zId).toMatch(/^ctl[a-z2-7]{16}$/);
    const path = join(dataDir, 'identities', 'ctl.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const file = JSON.parse(readFileSync(path, 'utf8')) as { zId: string; privateKey: string };
    expect(file.zId).toBe(zId);
    expect(file.privateKey).toContain('BEGIN PRIVATE KEY');
  });

  it('creates accounts with the admin CLI while the controller runs; tokens are printed once and stored hashed', async () => {
    const a = await svcCli(['admin', 'create', 'account', 'alice@example.com', '--data-dir', dataDir]);
    const b = await svcCli(['admin', 'create', 'account', 'bob@example.com', '--data-dir', dataDir]);
    expect(a.code).toBe(0);
    alice = a.stdout.trim();
    bob = b.stdout.trim();
    expect(alice).toMatch(/^svca_[a-z2-7]{12}_[A-Za-z0-9_-]{43}$/);
    const state = readFileSync(join(dataDir, 'controller.json'), 'utf8');
    // The secret part is base64url: it may itself contain '_'.
    expect(state).not.toContain(alice.split('_').slice(2).join('_'));
    expect(state).toContain('alice@example.com');
    const again = await svcCli(['admin', 'create', 'account', 'ALICE@example.com', '--data-dir', dataDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already exists');
  });

  it('enables this agent as an environment (svc enable) and records it locally (0600)', async () => {
    const result = await svcCli(['enable', alice, '--api-endpoint', apiBase, '--data-dir', dataDir]);
    expect(result.stderr).toContain('next: svc agent enroll');
    expect(result.code).toBe(0);
    aliceEnv = result.stdout.trim();
    expect(statSync(join(dataDir, 'environment.json')).mode & 0o777).toBe(0o600);
    const other = await post('/environment/enable', { description: 'bob laptop' }, bob);
    expect(other.status).toBe(200);
    bobEnv = (other.body as { envZId: string }).envZId;
  });

  it('an environment that is not enrolled gets 409 not_enrolled', async () => {
    const reply = await post('/agent/status', { envZId: aliceEnv });
    expect(reply.status).toBe(409);
    expect(reply.body).toMatchObject({ code: 'not_enrolled' });
  });

  it('enroll shows the controller address and does nothing unless the answer is yes', async () => {
    const result = await svcCli(['agent', 'enroll', '--data-dir', dataDir], { input: 'no\n' });
    expect(result.stderr).toContain(`by the controller at ${apiBase}`);
    expect(result.stderr).toContain('Type yes to enroll');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('enrollment cancelled');
    expect(existsSync(join(dataDir, 'agent-enrollment.json'))).toBe(false);
  });

  it('enrolls with yes on stdin: agent-enrollment.json (0600) holds the token and pins the controller identity; the agent connects', async () => {
    const result = await svcCli(['agent', 'enroll', '--data-dir', dataDir], { input: 'yes\n' });
    expect(result.stderr).toBe(
      `Enrolling environment ${aliceEnv} for remote control by the controller at ${apiBase}.\n` +
        'The controller will be able to create and remove shares (of any URL or folder this agent can reach) and accesses, and to run health checks.\n' +
        'Type yes to enroll: ',
    );
    expect(result.code).toBe(0);
    const path = join(dataDir, 'agent-enrollment.json');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const file = JSON.parse(readFileSync(path, 'utf8')) as EnrollmentFile;
    expect(file.token).toMatch(/^svce_[a-z2-7]{12}_/);
    expect(file.controller.zId).toBe(zId);
    expect(file.envZId).toBe(aliceEnv);
    await serve.waitFor(new RegExp(`listening for remote commands at svce_${file.enrollmentId}_…`));
    await serve.waitFor(/remoting: agent connected/);
    expect(serve.output()).not.toContain(file.token);
    const ping = await post('/agent/ping', { envZId: aliceEnv });
    expect(ping.status).toBe(200);
    expect(ping.body).toMatchObject({ reachable: true });
    const twice = await post('/agent/enroll', { envZId: aliceEnv });
    expect(twice.status).toBe(409);
    expect(twice.body).toMatchObject({ code: 'already_enrolled' });
  });

  it('share → status lists it → health check healthy → unshare → status lists no shares', async () => {
    const shared = await post('/agent/share', {
      envZId: aliceEnv,
      shareMode: 'public',
      backendMode: 'proxy',
      target: backend.url,
    });
    expect(shared.status).toBe(200);
    const { token, frontendEndpoints } = shared.body as { token: string; frontendEndpoints: string[] };
    expect(frontendEndpoints).toEqual([`http://${token}.svc.localhost:${frontendPort}`]);

    const through = await request(frontendPort, '/via-frontend', { host: `${token}.svc.localhost:${frontendPort}` });
    expect(through.status).toBe(200);
    expect((JSON.parse(through.body) as { url: string }).url).toBe('/via-frontend');

    const status = await post('/agent/status', { envZId: aliceEnv });
    expect(status.status).toBe(200);
    expect(status.body).toEqual({
      shares: [
        { token, shareMode: 'public', backendMode: 'proxy', backendEndpoint: `${backend.url}/`, frontendEndpoints },
      ],
      accesses: null,
    });

    const check = { envZId: aliceEnv, shareToken: token, httpVerb: 'GET', expectedHttpResponse: 200 };
    expect((await post('/agent/share/http-healthcheck', { ...check, endpoint: '/healthz' })).body).toEqual({
      healthy: true,
    });
    const failing = await post('/agent/share/http-healthcheck', { ...check, endpoint: '/status/503' });
    expect(failing.status).toBe(200);
    expect(failing.body).toEqual({ healthy: false, error: "unexpected status code; got '503', want '200'" });

    expect((await post('/agent/unshare', { envZId: aliceEnv, token })).body).toEqual({});
    expect((await post('/agent/status', { envZId: aliceEnv })).body).toEqual({ shares: null, accesses: null });
    const gone = await post('/agent/unshare', { envZId: aliceEnv, token });
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ code: 'unknown_share' });
  });

  it('an unreachable backend is unhealthy with the low-level failure text', async () => {
    const shared = await post('/agent/share', {
      envZId: aliceEnv,
      shareMode: 'public',
      backendMode: 'proxy',
      target: 'http://127.0.0.1:1',
    });
    const token = (shared.body as { token: string }).token;
    const reply = await post('/agent/share/http-healthcheck', {
      envZId: aliceEnv,
      shareToken: token,
      httpVerb: 'GET',
      endpoint: '/',
      expectedHttpResponse: 200,
    });
    expect(reply.body).toEqual({
      healthy: false,
      error: 'failed to execute request: connect ECONNREFUSED 127.0.0.1:1',
    });
    await post('/agent/unshare', { envZId: aliceEnv, token });
  });

  it('access creates a private access frontend that reaches the private share; unaccess removes it', async () => {
    const shared = await post('/agent/share', {
      envZId: aliceEnv,
      shareMode: 'private',
      backendMode: 'proxy',
      target: backend.url,
    });
    const shareToken = (shared.body as { token: string; frontendEndpoints: string[] }).token;
    expect((shared.body as { frontendEndpoints: string[] }).frontendEndpoints).toEqual([]);
    const access = await post('/agent/access', { envZId: aliceEnv, shareToken });
    expect(access.status).toBe(200);
    const entry = access.body as { token: string; endpoint: string; bindAddress: string };
    expect(entry.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const port = Number(entry.bindAddress.split(':')[1]);
    const through = await request(port, '/private-path');
    expect((JSON.parse(through.body) as { url: string }).url).toBe('/private-path');
    const status = (await post('/agent/status', { envZId: aliceEnv })).body as { accesses: unknown[] };
    expect(status.accesses).toEqual([entry]);

    expect((await post('/agent/unaccess', { envZId: aliceEnv, token: entry.token })).body).toEqual({});
    expect(((await post('/agent/status', { envZId: aliceEnv })).body as { accesses: unknown }).accesses).toBeNull();
    await expect(request(port, '/')).rejects.toThrow(/ECONNREFUSED/);
    const again = await post('/agent/unaccess', { envZId: aliceEnv, token: entry.token });
    expect(again.status).toBe(404);
    await post('/agent/unshare', { envZId: aliceEnv, token: shareToken });
  });

  it("refuses a missing or wrong token (401) and another account's environment (401, like a missing one)", async () => {
    const none = await api(apiUrl, '/agent/status', { envZId: aliceEnv });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ code: 'unauthorized' });
    const forged = `${alice.slice(0, -4)}AAAA`;
    expect((await post('/agent/status', { envZId: aliceEnv }, forged)).status).toBe(401);
    expect((await post('/agent/status', { envZId: aliceEnv }, 'not-a-token')).status).toBe(401);
    const foreign = await post('/agent/status', { envZId: aliceEnv }, bob);
    expect(foreign.status).toBe(401);
    expect(foreign.body).toMatchObject({ code: 'environment_not_found' });
    const missing = await post('/agent/status', { envZId: 'nosuchenvxyz' }, bob);
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({
      code: 'environment_not_found',
      message: 'environment nosuchenvxyz does not exist for this account',
    });
    const bobShare = await post(
      '/agent/share',
      { envZId: aliceEnv, shareMode: 'public', backendMode: 'proxy', target: backend.url },
      bob,
    );
    expect(bobShare.status).toBe(401);
    const own = await post('/agent/status', { envZId: bobEnv }, bob);
    expect(own.status).toBe(409);
    expect(own.body).toMatchObject({ code: 'not_enrolled' });
  });

  it('refuses a wrong media type (415), malformed JSON (400), a schema violation (422) and an oversized body (413)', async () => {
    const media = await api(
      apiUrl,
      '/agent/status',
      { envZId: aliceEnv },
      { token: alice, contentType: 'application/json' },
    );
    expect(media.status).toBe(415);
    expect(media.body).toMatchObject({ code: 'unsupported_media_type' });
    const malformed = await api(apiUrl, '/agent/status', null, { token: alice, rawBody: '{"envZId":' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'malformed_json' });
    const invalid = await post('/agent/share', {
      envZId: aliceEnv,
      shareMode: 'everyone',
      backendMode: 'proxy',
      extra: 1,
    });
    expect(invalid.status).toBe(422);
    expect(invalid.body).toMatchObject({ code: 'invalid_request' });
    expect((invalid.body as { details: string[] }).details).toEqual(
      expect.arrayContaining([
        'body.target: required',
        'body.extra: unknown field',
        'body.shareMode: must be one of public, private',
      ]),
    );
    const huge = await api(apiUrl, '/agent/status', null, {
      token: alice,
      rawBody: JSON.stringify({ envZId: aliceEnv, pad: 'x'.repeat(100_000) }),
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ code: 'body_too_large' });
  });

  it('an agent-side refusal keeps its code: bad share target and health check of a web share are 422', async () => {
    const bad = await post('/agent/share', {
      envZId: aliceEnv,
      shareMode: 'public',
      backendMode: 'web',
      target: '/no/such/folder',
    });
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ code: 'invalid_share' });
    const web = await post('/agent/share', {
      envZId: aliceEnv,
      shareMode: 'public',
      backendMode: 'web',
      target: dataDir,
    });
    const token = (web.body as { token: string }).token;
    const check = await post('/agent/share/http-healthcheck', {
      envZId: aliceEnv,
      shareToken: token,
      httpVerb: 'GET',
      endpoint: '/',
      expectedHttpResponse: 200,
    });
    expect(check.status).toBe(422);
    expect(check.body).toMatchObject({ code: 'healthcheck_unsupported' });
    await post('/agent/unshare', { envZId: aliceEnv, token });
  });

  it('serves its OpenAPI document at /api/v1/openapi.json', async () => {
    const res = await fetch(`${apiUrl}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/agent/share/http-healthcheck');
  });

  it('unenroll removes remote control at the controller and the file; the agent says its errors are harmless', async () => {
    const result = await svcCli(['agent', 'unenroll', '--data-dir', dataDir]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('harmless');
    expect(existsSync(join(dataDir, 'agent-enrollment.json'))).toBe(false);
    const reply = await post('/agent/status', { envZId: aliceEnv });
    expect(reply.status).toBe(409);
    expect(reply.body).toMatchObject({ code: 'not_enrolled' });
    await serve.waitFor(/remote control is off/);
    expect(serve.output()).not.toContain(alice);
  });
});
