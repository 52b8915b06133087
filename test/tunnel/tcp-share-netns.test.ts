import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAccessClient } from '../../agent/tunnel/access-client.ts';
import { fetchTunnelInfo } from '../../agent/tunnel/publisher.ts';
import { listenTcp, remoteTcpAccess } from '../../agent/tunnel/tcp-access.ts';
import { createLogger } from '../../lib/logger.ts';
import { startSvc, svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';
import { createLab, type NetnsLab } from '../support/netns.ts';
import { request } from '../support/raw-http.ts';
import { echoRun, spawnTcpEcho } from '../support/tcp-echo.ts';
import { until } from '../support/until.ts';
import { writeInstallationConfig } from './netns-installation.ts';

/**
 * Private TCP shares across machines, every piece a real process in its own network namespace: the
 * laptop shares a Redis server and a TCP echo that listen on its namespace's loopback (unreachable
 * from anywhere else), the second machine of the same account reaches them through a TCP access,
 * and a machine of another account tries to. The installation runs on this machine with a per-share
 * connection limit of 52, so the 50 concurrent connections fit and the limit is cheap to reach.
 */
const run = promisify(execFile);
const MAX_PER_SHARE = 52;
const MiB = 1024 * 1024;

let lab: NetnsLab;
let installation: Process;
let apiBase: string;
let frontendPort: number;
const machines: Record<'laptop' | 'second' | 'stranger', Process | undefined> = {
  laptop: undefined,
  second: undefined,
  stranger: undefined,
};
const dirs = { installation: '', laptop: '', second: '', stranger: '' };
let redis: ChildProcess;
let echo: ChildProcess;
let echoPort: number;
const REDIS_PORT = 6390;

type Machine = keyof typeof machines;
const cli = (machine: Machine, args: string[]) =>
  svcCli([...args, '--data-dir', dirs[machine]], { prefix: lab.exec(machine, []) });
const addressOf = (machine: Machine) => lab.machines[machine]?.address as string;

async function tcpShare(target: string): Promise<string> {
  const made = await cli('laptop', ['share', 'private', '--backend-mode', 'tcp', target, '--json']);
  expect(made.code, made.stderr).toBe(0);
  const entry = JSON.parse(made.stdout) as { token: string; frontendEndpoints: string[]; backendMode: string };
  expect(entry.frontendEndpoints).toEqual([]);
  expect(entry.backendMode).toBe('tcp');
  return entry.token;
}

/** A TCP access on `machine`, bound to its lab address; resolves with its port. */
async function tcpAccess(machine: Machine, token: string): Promise<number> {
  let last = '';
  const entry = await until(async () => {
    const r = await cli(machine, ['access', 'private', token, '--bind', `${addressOf(machine)}:0`, '--json']);
    last = r.stderr;
    return r.code === 0 ? (JSON.parse(r.stdout) as { endpoint: string }) : undefined;
  }, 'the access').catch((err: Error) => {
    throw new Error(`${err.message}: ${last}`);
  });
  expect(entry.endpoint).toMatch(/^tcp:\/\//);
  return Number(new URL(entry.endpoint).port);
}

/** Opens a connection, sends one byte and waits for its echo: a connection that is through. */
function heldConnection(host: string, port: number): Promise<{ through: boolean; close(): void }> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.on('error', () => undefined);
    socket.once('connect', () => socket.write('x'));
    socket.once('data', () => resolve({ through: true, close: () => socket.destroy() }));
    socket.once('close', () => resolve({ through: false, close: () => undefined }));
  });
}

/** Waits until a connection to the access at `port` reaches the echo, and closes it. */
async function through(port: number): Promise<void> {
  await until(async () => {
    const probe = await heldConnection(addressOf('second'), port);
    probe.close();
    return probe.through || undefined;
  }, 'a connection through the access');
}

beforeAll(async () => {
  lab = createLab(['laptop', 'second', 'stranger']);
  const base = tempDir('svc-tcp-share-');
  for (const key of Object.keys(dirs) as (keyof typeof dirs)[]) dirs[key] = join(base, key);
  const config = await writeInstallationConfig(dirs.installation, join(base, 'installation.yaml'), lab.hostAddress);
  writeYaml(config, [
    ...readFileSync(config, 'utf8').trimEnd().split('\n'),
    'tunnel:',
    `  max_tcp_connections_per_share: ${MAX_PER_SHARE}`,
  ]);
  installation = await startSvc(
    ['controller', '--config', config, '--data-dir', dirs.installation, '--dev'],
    /frontend: {2}listening on port (\d+)/,
  );
  apiBase = ((await installation.waitFor(/api: +(http:\/\/\S+)\/api\/v1/))[1] as string).trim();
  frontendPort = Number((await installation.waitFor(/frontend: {2}listening on port (\d+)/))[1]);
  const account = async (email: string) =>
    (await svcCli(['admin', 'create', 'account', email, '--data-dir', dirs.installation])).stdout.trim();
  const accounts = { laptop: await account('me@example.com'), stranger: await account('other@example.com') };

  const [command, ...argv] = lab.exec('laptop', [
    'redis-server',
    '--port',
    String(REDIS_PORT),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]) as [string, ...string[]];
  redis = spawn(command, argv, { stdio: 'ignore' });
  ({ child: echo, port: echoPort } = await spawnTcpEcho((a) => lab.exec('laptop', a)));

  for (const machine of ['laptop', 'second', 'stranger'] as const) {
    machines[machine] = await startSvc(
      ['serve', '--data-dir', dirs[machine], '--listen', '127.0.0.1:0'],
      /svc serve is ready/,
      { prefix: lab.exec(machine, []) },
    );
    const owner = machine === 'stranger' ? accounts.stranger : accounts.laptop;
    const enabled = await cli(machine, ['enable', owner, '--api-endpoint', apiBase]);
    expect(enabled.code, enabled.stderr).toBe(0);
  }
  for (const machine of ['laptop', 'second', 'stranger'] as const) {
    await machines[machine]?.waitFor(/tunnel: connected to the installation/);
  }
}, 180_000);

afterAll(async () => {
  redis?.kill('SIGKILL');
  echo?.kill('SIGKILL');
  for (const p of Object.values(machines)) await p?.stop();
  await installation?.stop();
  lab?.remove();
});

describe('a private TCP share reached from another machine of the account', () => {
  it('redis-cli on the second machine talks to the laptop Redis through the installation', async () => {
    const token = await tcpShare(`127.0.0.1:${REDIS_PORT}`);
    const status = JSON.parse((await cli('laptop', ['status', '--json'])).stdout) as {
      shares: { token: string; backendMode: string; backendEndpoint: string }[];
    };
    expect(status.shares.find((s) => s.token === token)).toMatchObject({
      backendMode: 'tcp',
      backendEndpoint: `127.0.0.1:${REDIS_PORT}`,
    });
    const port = await tcpAccess('second', token);
    const redisCli = async (...args: string[]) => {
      const [command, ...argv] = lab.exec('second', ['redis-cli', '-h', addressOf('second'), '-p', `${port}`, ...args]);
      return (await run(command as string, argv, { timeout: 10_000 })).stdout.trim();
    };
    const pong = async () => ((await redisCli('PING').catch(() => '')) === 'PONG' ? 'PONG' : undefined);
    expect(await until(pong, 'PONG')).toBe('PONG');
    expect(await redisCli('SET', 'greeting', 'through the tunnel')).toBe('OK');
    expect(await redisCli('GET', 'greeting')).toBe('through the tunnel');
    expect(await redisCli('INFO', 'server')).toMatch(/redis_version:/);
    // The Redis server is on the laptop's loopback: the second machine cannot reach it directly.
    const [command, ...argv] = lab.exec('second', [
      'redis-cli',
      '-h',
      addressOf('laptop'),
      '-p',
      `${REDIS_PORT}`,
      'PING',
    ]);
    const direct = await run(command as string, argv, { timeout: 5_000 }).then(
      (r) => r.stdout.trim(),
      () => 'refused',
    );
    expect(direct).not.toBe('PONG');
  });

  it('100 MiB go through byte-exact both ways at once, and each side half-closes', async () => {
    const token = await tcpShare(`127.0.0.1:${echoPort}`);
    const port = await tcpAccess('second', token);
    await through(port);
    const result = await echoRun(addressOf('second'), port, 100 * MiB);
    expect(result).toMatchObject({ sent: 100 * MiB, received: 100 * MiB, ending: 'end' });
    expect(result.receivedHash).toBe(result.sentHash);
  }, 120_000);

  it('50 concurrent connections each carry their own bytes exactly', async () => {
    const token = await tcpShare(`127.0.0.1:${echoPort}`);
    const port = await tcpAccess('second', token);
    await through(port);
    const runs = await Promise.all(Array.from({ length: 50 }, () => echoRun(addressOf('second'), port, 256 * 1024)));
    for (const r of runs) {
      expect(r).toMatchObject({ sent: 256 * 1024, received: 256 * 1024, ending: 'end' });
      expect(r.receivedHash).toBe(r.sentHash);
    }
  }, 60_000);

  it(`the installation admits ${MAX_PER_SHARE} connections to one share and closes the next`, async () => {
    const token = await tcpShare(`127.0.0.1:${echoPort}`);
    const port = await tcpAccess('second', token);
    await through(port);
    // The probe's close reaches the installation a moment after the probe sees it, so a full set may
    // meet the probe still counted: close them all and try again until the probe is released.
    const held = await until(async () => {
      const set = await Promise.all(
        Array.from({ length: MAX_PER_SHARE }, () => heldConnection(addressOf('second'), port)),
      );
      if (set.every((h) => h.through)) return set;
      for (const h of set) h.close();
      return undefined;
    }, `${MAX_PER_SHARE} connections held at once`);
    expect(held).toHaveLength(MAX_PER_SHARE);
    const over = await heldConnection(addressOf('second'), port);
    expect(over.through).toBe(false);
    await installation.waitFor(/TCP connection refused: the share holds the maximum number of connections/);
    for (const h of held) h.close();
    await through(port);
  }, 60_000);
});

describe('refusals', () => {
  it('a public TCP share is refused by the validator, naming the problem', async () => {
    const made = await cli('laptop', ['share', 'public', '--backend-mode', 'tcp', `127.0.0.1:${echoPort}`]);
    expect(made.code).not.toBe(0);
    expect(made.stderr).toMatch(/--backend-mode: tcp applies to private shares only/);
    const badTarget = await cli('laptop', ['share', 'private', '--backend-mode', 'tcp', 'http://127.0.0.1:80/']);
    expect(badTarget.code).not.toBe(0);
    expect(badTarget.stderr).toMatch(/<target>: must be host:port for backend mode tcp/);
  });

  it("a target that refuses closes the client's connection with nothing sent, and says why in the log", async () => {
    const token = await tcpShare('127.0.0.1:1');
    const port = await tcpAccess('second', token);
    const from = machines.second?.output().length ?? 0;
    const attempt = await heldConnection(addressOf('second'), port);
    expect(attempt.through).toBe(false);
    const refusal = (line: string) =>
      line.includes('access: TCP connection refused') &&
      line.includes('502: the share target did not answer: ECONNREFUSED');
    await until(
      () => (machines.second?.output().slice(from) ?? '').split('\n').some(refusal),
      'the refusal in the access log',
    );
  });

  it('the public frontend never serves a TCP share', async () => {
    const token = await tcpShare(`127.0.0.1:${echoPort}`);
    const reply = await request(frontendPort, '/', { host: `${token}.svc.localhost:${frontendPort}` });
    expect(reply.status).toBe(404);
  });

  it('a wrong token and another account are refused an access', async () => {
    const wrong = await cli('second', ['access', 'private', 'nosuchshare0', '--bind', `${addressOf('second')}:0`]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/no private share nosuchshare0 of this account/);
    const token = await tcpShare(`127.0.0.1:${echoPort}`);
    const foreign = await cli('stranger', ['access', 'private', token, '--bind', `${addressOf('stranger')}:0`]);
    expect(foreign.code).not.toBe(0);
    expect(foreign.stderr).toMatch(new RegExp(`no private share ${token} of this account`));
  });

  it("another account's stream straight to the installation is closed with nothing relayed", async () => {
    const token = await tcpShare(`127.0.0.1:${echoPort}`);
    const env = JSON.parse(readFileSync(join(dirs.stranger, 'environment.json'), 'utf8')) as {
      environmentToken: string;
    };
    const info = await fetchTunnelInfo(apiBase, env.environmentToken);
    const logger = createLogger('stranger', { level: 'silent' });
    const client = startAccessClient({ url: info?.accessUrl ?? '', token: env.environmentToken, logger });
    const listener = await listenTcp(
      remoteTcpAccess(() => client.target(), token, logger),
      {
        host: '127.0.0.1',
        port: 0,
      },
    );
    try {
      await until(() => client.target(), 'the access connection');
      const from = installation.output().length;
      const attempt = await heldConnection('127.0.0.1', listener.port);
      expect(attempt.through).toBe(false);
      await until(
        () => installation.output().slice(from).includes('access: no such private share for this account'),
        'the refusal in the log',
      );
    } finally {
      await listener.close();
      await client.close();
    }
  });
});
