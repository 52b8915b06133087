import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { writeJsonFile, type EnrollmentFile } from '../../lib/remoting/files.ts';
import {
  ENROLLMENT_HEADER,
  REMOTING_PATH,
  enrollmentHash,
  signCommand,
  type CommandMessage,
  type CommandName,
  type HelloMessage,
  type ResultMessage,
} from '../../lib/remoting/protocol.ts';
import { rawPublicKey, zIdOf } from '../../lib/remoting/identity.ts';
import { newSecretToken } from '../../controller/secrets.ts';
import { startSvc, svcCli, tempDir, type Process } from './harness.ts';

/**
 * Commands sent straight down an enrolled agent's remoting channel. The test plays the controller
 * end of the channel: a real `svc serve` (agent) connects to it with an enrollment that pins the
 * test's key. Only commands signed with that key, fresh, for this enrollment and connection, and
 * never seen before are run; everything else is refused and logged, and changes nothing.
 */
let serve: Process;
let server: WebSocketServer;
let dataDir: string;
let pinned: { privateKey: KeyObject; publicKey: KeyObject };
let stranger: { privateKey: KeyObject };
let token: string;
const connections: {
  socket: WebSocket;
  channel: string;
  headers: Record<string, unknown>;
  results: ResultMessage[];
}[] = [];

function nextConnection(after: number): Promise<(typeof connections)[number]> {
  return new Promise((resolve) => {
    const poll = () =>
      connections.length > after && connections[after]?.channel ? resolve(connections[after]) : setTimeout(poll, 20);
    poll();
  });
}

async function send(conn: (typeof connections)[number], message: CommandMessage, id: string): Promise<ResultMessage> {
  conn.socket.send(JSON.stringify(message));
  for (let i = 0; i < 250; i++) {
    const found = conn.results.find((r) => r.id === id);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no answer to ${id}`);
}

const sign = (
  conn: (typeof connections)[number],
  command: CommandName,
  args: Record<string, unknown> = {},
  overrides: { key?: KeyObject; now?: number; channel?: string; enrollment?: string } = {},
) =>
  signCommand(overrides.key ?? pinned.privateKey, {
    channel: overrides.channel ?? conn.channel,
    enrollment: overrides.enrollment ?? enrollmentHash(token),
    command,
    args,
    ...(overrides.now !== undefined ? { now: overrides.now } : {}),
  });

beforeAll(async () => {
  pinned = generateKeyPairSync('ed25519');
  stranger = generateKeyPairSync('ed25519');
  server = new WebSocketServer({ port: 0, host: '127.0.0.1', path: REMOTING_PATH });
  server.on('connection', (socket, req) => {
    const conn = {
      socket,
      channel: '',
      headers: req.headers as Record<string, unknown>,
      results: [] as ResultMessage[],
    };
    connections.push(conn);
    socket.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as HelloMessage | ResultMessage;
      if (msg.type === 'hello') conn.channel = msg.channel;
      else conn.results.push(msg);
    });
  });
  await new Promise((r) => server.once('listening', r));
  const port = (server.address() as AddressInfo).port;

  dataDir = join(tempDir('svc-forged-'), 'data');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = newSecretToken('svce');
  token = secret.token;
  const publicKey = rawPublicKey(pinned.publicKey);
  const enrollment: EnrollmentFile = {
    version: 1,
    apiEndpoint: `http://127.0.0.1:${port}`,
    envZId: 'envtesttest1',
    enrollmentId: secret.id,
    token,
    controller: { zId: zIdOf(publicKey), publicKey },
    enrolledAt: new Date().toISOString(),
  };
  writeJsonFile(join(dataDir, 'agent-enrollment.json'), enrollment);
  serve = await startSvc(['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0'], /svc serve is ready/);
});

afterAll(async () => {
  await serve?.stop();
  server?.close();
});

async function shareCount(): Promise<number> {
  const result = await svcCli(['status', '--json', '--data-dir', dataDir]);
  return ((JSON.parse(result.stdout) as { shares: unknown[] | null }).shares ?? []).length;
}

describe('agent remoting channel: only pinned, fresh, unreplayed commands run', () => {
  it('the agent connects out with its enrollment token and says where it listens (token not logged)', async () => {
    const conn = await nextConnection(0);
    expect(conn.headers[ENROLLMENT_HEADER]).toBe(token);
    expect(conn.channel.length).toBeGreaterThanOrEqual(16);
    await serve.waitFor(/listening for remote commands at svce_[a-z2-7]{12}_…/);
    expect(serve.output()).not.toContain(token);
  });

  it('runs a command signed with the pinned identity', async () => {
    const conn = await nextConnection(0);
    const { id, message } = sign(conn, 'status');
    expect(await send(conn, message, id)).toEqual({
      type: 'result',
      id,
      ok: true,
      result: { shares: null, accesses: null },
    });
  });

  it('refuses a forged command (signed with another key), logs it, and changes nothing', async () => {
    const conn = await nextConnection(0);
    const { id, message } = sign(
      conn,
      'share',
      { shareMode: 'public', backendMode: 'proxy', target: 'http://127.0.0.1:9' },
      { key: stranger.privateKey },
    );
    const answer = await send(conn, message, id);
    expect(answer).toMatchObject({ ok: false, error: { code: 'command_refused', status: 403 } });
    await serve.waitFor(
      /"reason":"signature does not verify against the pinned controller identity".*refused remote command/,
    );
    expect(await shareCount()).toBe(0);
  });

  it('refuses a tampered payload under a valid signature', async () => {
    const conn = await nextConnection(0);
    const { id, message } = sign(conn, 'status');
    const tampered = { ...message, payload: message.payload.replace('"status"', '"ping"') };
    expect(await send(conn, tampered, id)).toMatchObject({ ok: false, error: { code: 'command_refused' } });
  });

  it('refuses a replayed command', async () => {
    const conn = await nextConnection(0);
    const { id, message } = sign(conn, 'share', {
      shareMode: 'public',
      backendMode: 'proxy',
      target: 'http://127.0.0.1:9',
    });
    expect(await send(conn, message, id)).toMatchObject({ ok: true });
    expect(await shareCount()).toBe(1);
    conn.results.length = 0;
    expect(await send(conn, message, id)).toMatchObject({
      ok: false,
      error: { code: 'command_refused', message: expect.stringContaining('replay') as unknown },
    });
    await serve.waitFor(/"reason":"command id was already used \(replay\)"/);
    expect(await shareCount()).toBe(1);
  });

  it('refuses a stale or future command, and one for another enrollment', async () => {
    const conn = await nextConnection(0);
    for (const now of [Date.now() - 120_000, Date.now() + 120_000]) {
      const { id, message } = sign(conn, 'status', {}, { now });
      expect(await send(conn, message, id)).toMatchObject({
        ok: false,
        error: { message: expect.stringContaining('not fresh') as unknown },
      });
    }
    const other = sign(conn, 'status', {}, { enrollment: enrollmentHash('svce_other') });
    expect(await send(conn, other.message, other.id)).toMatchObject({
      ok: false,
      error: { message: expect.stringContaining('another enrollment') as unknown },
    });
  });

  it('refuses a command captured on one connection and replayed on the next', async () => {
    const first = await nextConnection(0);
    const captured = sign(first, 'unshare', { token: 'whatever' });
    first.socket.close();
    const second = await nextConnection(1);
    expect(second.channel).not.toBe(first.channel);
    expect(await send(second, captured.message, captured.id)).toMatchObject({
      ok: false,
      error: { message: expect.stringContaining('another connection') as unknown },
    });
    const fresh = sign(second, 'ping');
    expect(await send(second, fresh.message, fresh.id)).toEqual({
      type: 'result',
      id: fresh.id,
      ok: true,
      result: { pong: true },
    });
  });
});
