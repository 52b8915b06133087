import { generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
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
import { newSecretToken } from '../../controller/tokens.ts';
import { suiteFigures } from '../support/figures.ts';
import { startSvc, svcCli, tempDir, type Process } from './harness.ts';

/**
 * Commands sent straight down an enrolled agent's remoting channel. The test plays the controller
 * end of the channel: a real `svc serve` (agent) connects to it with an enrollment that pins the
 * test's key. Only commands signed with that key, fresh, for this enrollment and connection, and
 * never seen before are run; everything else is refused and logged, and changes nothing.
 */
const figures = suiteFigures('remoting');
const refusals = figures.attackClass(
  'Agent remoting (forged signature, tampered payload, replay, stale or future, another enrollment or connection, malformed)',
);
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
  figures.write();
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

  it('refuses a forged command (signed with another key), logs it, and changes nothing', () =>
    refusals.run(async () => {
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
    }));

  it('refuses a tampered payload under a valid signature', () =>
    refusals.run(async () => {
      const conn = await nextConnection(0);
      const { id, message } = sign(conn, 'status');
      const tampered = { ...message, payload: message.payload.replace('"status"', '"ping"') };
      expect(await send(conn, tampered, id)).toMatchObject({ ok: false, error: { code: 'command_refused' } });
    }));

  it('refuses a replayed command', () =>
    refusals.run(async () => {
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
    }));

  it('refuses a stale or future command, and one for another enrollment', () =>
    refusals.run(async () => {
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
    }));

  it('refuses a command captured on one connection and replayed on the next', () =>
    refusals.run(async () => {
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
    }));
});

describe('agent remoting channel: malformed messages change nothing and break nothing', () => {
  /** Signs arbitrary text with the pinned key, as a controller with a bug (or a stolen key) would. */
  const signed = (payload: string): string =>
    JSON.stringify({
      type: 'command',
      payload,
      signature: cryptoSign(null, Buffer.from(payload, 'utf8'), pinned.privateKey).toString('base64url'),
    });

  it('refuses and logs garbage, wrong shapes and signed nonsense, then still runs a genuine command', async () => {
    const conn = await nextConnection(1);
    const base = { v: 1, channel: conn.channel, enrollment: enrollmentHash(token), issuedAt: Date.now() };
    const cases: [string, string, RegExp][] = [
      ['not JSON', '{"type":', /refused a message that is not JSON/],
      ['a command without payload', '{"type":"command"}', /"reason":"malformed command message"/],
      ['a numeric payload', '{"type":"command","payload":5,"signature":"x"}', /"reason":"malformed command message"/],
      [
        'a signature that is not base64url',
        `{"type":"command","payload":"{}","signature":"!!!"}`,
        /"reason":"signature does not verify/,
      ],
      ['signed text that is not JSON', signed('not json'), /"reason":"signed payload is not JSON"/],
      [
        'a signed unknown command',
        signed(JSON.stringify({ ...base, id: 'u1', command: 'exec', args: { cmd: 'rm -rf /' } })),
        /"reason":"unsupported command payload"/,
      ],
      [
        'signed args that are an array',
        signed(JSON.stringify({ ...base, id: 'u2', command: 'status', args: [] })),
        /"reason":"command args must be an object"/,
      ],
      [
        'a signed command without an issue time',
        signed(JSON.stringify({ ...base, issuedAt: undefined, id: 'u3', command: 'status', args: {} })),
        /"reason":"command is not fresh/,
      ],
    ];
    for (const [what, text, logged] of cases) {
      await refusals.run(async () => {
        const before = serve.output().length;
        conn.socket.send(text);
        await serve.waitFor(new RegExp(`[^]{${before}}[^]*${logged.source}`));
        expect(serve.child.exitCode, what).toBeNull();
      });
    }
    const fresh = sign(conn, 'ping');
    expect(await send(conn, fresh.message, fresh.id)).toMatchObject({ ok: true, result: { pong: true } });
    expect(await shareCount()).toBe(1);
  });

  it('drops an oversized message by closing the connection, reconnects, and runs genuine commands again', () =>
    refusals.run(async () => {
      const conn = await nextConnection(1);
      conn.socket.send(JSON.stringify({ type: 'command', payload: 'x'.repeat(512 * 1024), signature: 'x' }));
      const next = await nextConnection(2);
      const fresh = sign(next, 'status');
      expect(await send(next, fresh.message, fresh.id)).toMatchObject({ ok: true });
      expect(serve.child.exitCode).toBeNull();
    }));
});
