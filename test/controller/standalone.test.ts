import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reachableUrls } from '../../lib/reachable-urls.ts';
import { echoBackend } from '../support/raw-http.ts';
import { api, startSvc, svcCli, tempDir, writeYaml, type Process } from './harness.ts';

/**
 * `svc controller` as its own process and an agent (`svc serve` without a controller) on another
 * data directory, as on two machines: the agent connects out to the controller it enrolled with,
 * keeps its enrollment across a restart, and logs where it listens again after it.
 */
let controller: Process;
let agent: Process | undefined;
let backend: Awaited<ReturnType<typeof echoBackend>>;
let base: string;
let apiBase: string;
let apiUrl: string;
let account: string;
let envZId: string;
const agentDir = () => join(base, 'agent');
const startAgent = () => startSvc(['serve', '--data-dir', agentDir(), '--listen', '127.0.0.1:0'], /svc serve is ready/);

beforeAll(async () => {
  backend = await echoBackend();
  base = tempDir('svc-standalone-');
  const controllerDir = join(base, 'controller');
  const identity = await svcCli(['admin', 'create', 'identity', 'main', '--data-dir', controllerDir]);
  const config = writeYaml(join(base, 'controller.yaml'), [
    `data_dir: ${controllerDir}`,
    'controller:',
    '  listen: 127.0.0.1:0',
    'agent_controller:',
    `  z_id: ${identity.stdout.trim()}`,
    '  identity_path: controller/identities/main.json',
  ]);
  controller = await startSvc(['controller', '--config', config], /api: +(http:\/\/\S+)\/api\/v1/);
  apiBase = (await controller.waitFor(/api: +(http:\/\/\S+)\/api\/v1/))[1] as string;
  apiUrl = `${apiBase}/api/v1`;
  account = (await svcCli(['admin', 'create', 'account', 'ops@example.com', '--config', config])).stdout.trim();
});

afterAll(async () => {
  await agent?.stop();
  await controller?.stop();
  await backend?.close();
});

describe('svc controller and a separately running agent', () => {
  it('enables and enrolls (--yes) a stopped agent, which listens for remote commands once started', async () => {
    const enabled = await svcCli(['enable', account, '--data-dir', agentDir()], { env: { SVC_API_ENDPOINT: apiBase } });
    expect(enabled.code).toBe(0);
    envZId = enabled.stdout.trim();
    const enrolled = await svcCli(['agent', 'enroll', '--yes', '--data-dir', agentDir()]);
    expect(enrolled.code).toBe(0);
    expect((await api(apiUrl, '/agent/ping', { envZId }, { token: account })).body).toMatchObject({
      code: 'agent_unreachable',
    });
    agent = await startAgent();
    await agent.waitFor(/listening for remote commands at svce_[a-z2-7]{12}_…/);
    await controller.waitFor(/remoting: agent connected/);
    const ping = await api(apiUrl, '/agent/ping', { envZId }, { token: account });
    expect(ping.status).toBe(200);
  });

  it('after a restart the agent listens again, and its shares are still there', async () => {
    const shared = await api(
      apiUrl,
      '/agent/share',
      { envZId, shareMode: 'public', backendMode: 'proxy', target: backend.url },
      { token: account },
    );
    expect(shared.status).toBe(200);
    await agent?.stop();
    const down = await api(apiUrl, '/agent/status', { envZId }, { token: account });
    expect(down.status).toBe(502);
    expect(down.body).toMatchObject({ code: 'agent_unreachable' });
    agent = await startAgent();
    await agent.waitFor(/listening for remote commands at svce_/);
    await agent.waitFor(/remoting: connected to the controller/);
    let status = await api(apiUrl, '/agent/status', { envZId }, { token: account });
    for (let i = 0; status.status === 502 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await api(apiUrl, '/agent/status', { envZId }, { token: account });
    }
    expect((status.body as { shares: { token: string }[] }).shares.map((s) => s.token)).toEqual([
      (shared.body as { token: string }).token,
    ]);
  });

  it('unenroll closes the connection; a stale enrollment is refused and the agent says its errors are harmless', async () => {
    const file = join(agentDir(), 'agent-enrollment.json');
    const stale = readFileSync(file, 'utf8');
    const result = await svcCli(['agent', 'unenroll', '--data-dir', agentDir()]);
    expect(result.code).toBe(0);
    await agent?.waitFor(/remote control is off/);
    expect((await api(apiUrl, '/agent/ping', { envZId }, { token: account })).status).toBe(409);
    // An agent still holding the old enrollment (e.g. a copy of the file) is refused by the controller.
    writeFileSync(file, stale, { mode: 0o600 });
    await agent?.waitFor(/no longer accepts this enrollment \(unenrolled\?\)\. This error is harmless/);
    expect((await api(apiUrl, '/agent/ping', { envZId }, { token: account })).status).toBe(409);
    rmSync(file);
  });

  it('disable deletes the environment at the controller and locally; its envZId is then refused', async () => {
    const result = await svcCli(['disable', '--data-dir', agentDir()]);
    expect(result.code).toBe(0);
    expect(existsSync(join(agentDir(), 'environment.json'))).toBe(false);
    const reply = await api(apiUrl, '/agent/status', { envZId }, { token: account });
    expect(reply.status).toBe(401);
    const again = await svcCli(['disable', '--data-dir', agentDir()]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/svc: /);
  });

  it('without agent_controller the /agent operations answer 501 with a clear message; environments still work', async () => {
    const dir = join(base, 'plain');
    const plain = await startSvc(['controller', '--data-dir', dir, '--listen', '127.0.0.1:0'], /api: +(http:\/\/\S+)/);
    try {
      const url = (await plain.waitFor(/api: +(http:\/\/\S+)/))[1] as string;
      const token = (await svcCli(['admin', 'create', 'account', 'x@example.com', '--data-dir', dir])).stdout.trim();
      const env = await api(url, '/environment/enable', {}, { token });
      expect(env.status).toBe(200);
      const reply = await api(url, '/agent/status', { envZId: (env.body as { envZId: string }).envZId }, { token });
      expect(reply.status).toBe(501);
      expect(reply.body).toMatchObject({ code: 'agent_controller_not_configured' });
      expect((reply.body as { message: string }).message).toContain('svc admin create identity');
    } finally {
      await plain.stop();
    }
  });

  it('listening on 0.0.0.0, the banner names the addresses agents on other machines can use', async () => {
    const dir = join(base, 'everywhere');
    const wide = await startSvc(['controller', '--data-dir', dir, '--listen', '0.0.0.0:0'], /agents: +(.*)/);
    try {
      const port = Number((await wide.waitFor(/api: +http:\/\/127\.0\.0\.1:(\d+)/))[1]);
      const line = (await wide.waitFor(/agents: +(.*)/))[1] as string;
      const expected = reachableUrls({ host: '0.0.0.0', port: 0 }, port, '/api/v1');
      expect(line).not.toContain('127.0.0.1');
      for (const url of expected) expect(line).toContain(url);
      if (expected.length === 0) expect(line).toContain("this machine's address, port");
    } finally {
      await wide.stop();
    }
  });

  it('a bad controller config reports every problem at once and does not start', async () => {
    const config = writeYaml(join(base, 'bad.yaml'), [
      'controller:',
      '  listen: nowhere',
      '  colour: blue',
      'agent_controller:',
      '  z_id: ctlwrongwrongwrongw',
      `  identity_path: ${join(base, 'controller', 'identities', 'main.json')}`,
    ]);
    const result = await svcCli(['controller', '--config', config]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('controller.listen: must be ip:port');
    expect(result.stderr).toContain('controller.colour: unknown field');
    expect(result.stderr).toContain('agent_controller.identity_path: z_id "ctlwrongwrongwrongw" is not the identity');
  });
});
