import http from 'node:http';
import type { ClientHttp2Stream } from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAccessClient, type RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import { startTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import type { PublishedShare } from '../../lib/tunnel/directory.ts';
import { ACCESS_PATH, DEFAULT_TUNNEL_LIMITS, ROUTE_HEADER, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import { tcpStreamHeaders } from '../../lib/tunnel/tcp-relay.ts';
import { PeerSessions } from '../../sidecar/tunnel/peer-client.ts';
import type { PeerServer } from '../../sidecar/tunnel/peer-server.ts';
import { suiteFigures } from '../support/figures.ts';
import { request } from '../support/raw-http.ts';
import { startRawAgent } from '../support/raw-agent.ts';
import {
  malloryAndAlice,
  mapDirectory,
  publishedShare,
  startTunnelFrontendWithPeer,
  type TunnelFrontendWithPeer,
} from '../support/tunnel-frontend.ts';
import { until } from '../support/until.ts';

/**
 * An account's agent is the account's own code: a hand-written one answers the installation's
 * streams with response heads Node's HTTP/2 server would never send. Node's `respond` throws on a
 * status outside 200–599, and a throw in an event handler ends the frontend's process with every
 * other account's tunnels and visitors in it. Every path that relays an agent's head (a private
 * access, a private TCP access, a stream forwarded from another replica) answers 502 instead, and
 * the agent's own side answers 502 for a backend's status HTTP/2 cannot carry.
 */
const DOMAIN = 'hostile.localhost';
const { tokens: TOKENS, identities: IDENTITIES } = malloryAndAlice();
const SHARES: Record<string, PublishedShare> = {
  priv: publishedShare('priv', 'mmmmmmmmmmmm', 'mallory', 'private', 'proxy'),
  tcpdb: publishedShare('tcpdb', 'mmmmmmmmmmmm', 'mallory', 'private', 'tcp'),
  mpub: publishedShare('mpub', 'mmmmmmmmmmmm', 'mallory', 'public', 'proxy'),
  alicepub: publishedShare('alicepub', 'aaaaaaaaaaaa', 'alice', 'public', 'proxy'),
};
const directory = mapDirectory(SHARES, IDENTITIES);
const PEER_CREDENTIAL = 'hostile-agent-test-replica-credential-0123456789';
const HOSTILE_STATUSES = ['600', '999'];

let installation: TunnelFrontendWithPeer;
let peer: PeerServer;
let access: RunningAccessClient;
const closers: (() => unknown)[] = [];
const logger = createLogger('hostile-agent', { level: 'silent' });
let hostileStatus = HOSTILE_STATUSES[0] as string;
const figures = suiteFigures('hostile-agent');
const relayed = figures.attackClass(
  "An account's agent answers the installation's streams with :status 600–999 (private access, TCP access, a stream forwarded by a replica)",
  'the installation exited (Node refuses such a status when relaying it): 502 now',
);

/** Errors nothing caught in this process: in the frontend's own process each would have ended it. */
const uncaught: string[] = [];
process.on('uncaughtExceptionMonitor', (err) => uncaught.push(err.message));

function urlOf(server: http.Server): URL {
  return new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
}

/** The status a stream's response came back with (0 when it was reset before one). */
function statusOf(stream: ClientHttp2Stream): Promise<number> {
  return new Promise((resolve) => {
    stream.on('error', () => undefined);
    stream.once('response', (headers) => resolve(Number(headers[':status'])));
    stream.once('close', () => resolve(0));
    stream.resume();
  });
}

/** Alice's public share answers through her own agent: the installation still serves other accounts. */
async function aliceServed(): Promise<number> {
  const reply = await request(installation.frontend.port, '/', {
    host: `alicepub.${DOMAIN}:${installation.frontend.port}`,
  });
  return reply.status;
}

beforeAll(async () => {
  const limits = DEFAULT_TUNNEL_LIMITS;
  installation = await startTunnelFrontendWithPeer({
    domain: DOMAIN,
    directory,
    limits,
    logger,
    credential: PEER_CREDENTIAL,
  });
  closers.push(() => installation.frontend.close());
  peer = installation.peer;
  closers.push(() => peer.close());
  const backend = http.createServer((_req, res) => res.end('alice'));
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  closers.push(() => backend.close());
  const alice = startTunnel({
    url: tunnelUrl(`http://127.0.0.1:${installation.frontend.port}`, TUNNEL_PATH),
    token: TOKENS.alice,
    transport: 'direct',
    logger,
    resolve: (token) => (token === 'alicepub' ? { shareMode: 'public', backendUrl: urlOf(backend) } : undefined),
  });
  closers.push(() => alice.close());
  const hostile = await startRawAgent(installation.frontend.port, TOKENS.mallory, () => [[':status', hostileStatus]]);
  closers.push(() => hostile.close());
  access = startAccessClient({
    transport: 'direct',
    url: tunnelUrl(`http://127.0.0.1:${installation.frontend.port}`, ACCESS_PATH),
    token: TOKENS.mallorySecond,
    logger,
  });
  closers.push(() => access.close());
  await until(
    async () => access.target() !== undefined && (await aliceServed()) === 200,
    'both tunnels and the access',
  );
});

afterAll(async () => {
  figures.write();
  for (const close of closers.reverse()) await close();
});

describe.each(HOSTILE_STATUSES)("a hostile agent's :status %s", (status) => {
  beforeAll(() => {
    hostileStatus = status;
  });

  it('on a private access: 502 to the access, the installation serves others', async () => {
    const stream = access.target()!.open({ ':method': 'GET', ':path': '/', ':authority': 'priv.access.invalid' }, true);
    await relayed.run(async () => {
      expect(await statusOf(stream)).toBe(502);
      expect(await aliceServed()).toBe(200);
      expect(uncaught).toEqual([]);
    });
  });

  it('on a private TCP access: 502 to the access, the installation serves others', async () => {
    const stream = access.target()!.open(tcpStreamHeaders('tcpdb', 'access'), false);
    await relayed.run(async () => {
      expect(await statusOf(stream)).toBe(502);
      expect(await aliceServed()).toBe(200);
      expect(uncaught).toEqual([]);
    });
  });

  it('on a public stream forwarded by another replica: 502 to that replica, the holder serves others', async () => {
    const peers = new PeerSessions(DEFAULT_TUNNEL_LIMITS, PEER_CREDENTIAL, logger);
    closers.push(() => peers.close());
    const stream = peers
      .target(`127.0.0.1:${peer.port}`, 'mmmmmmmmmmmm')
      .open({ ':method': 'GET', ':path': '/', ':authority': `mpub.${DOMAIN}`, [ROUTE_HEADER]: 'public' }, true);
    await relayed.run(async () => {
      expect(await statusOf(stream)).toBe(502);
      expect(await aliceServed()).toBe(200);
      expect(uncaught).toEqual([]);
    });
  });
});

it("a backend's status HTTP/2 cannot carry: the agent answers 502 and keeps serving", async () => {
  const odd = http.createServer((req, res) => {
    res.writeHead(req.url === '/odd' ? 600 : 200);
    res.end('body');
  });
  await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve));
  closers.push(() => odd.close());
  const bob = 'svcv_bbbbbbbbbbbb_secret-of-environment-b-0123456789abcdefghijk';
  IDENTITIES[bob] = { envZId: 'bbbbbbbbbbbb', accountId: 'bob' };
  SHARES.bobpub = publishedShare('bobpub', 'bbbbbbbbbbbb', 'bob', 'public', 'proxy');
  const agent = startTunnel({
    url: tunnelUrl(`http://127.0.0.1:${installation.frontend.port}`, TUNNEL_PATH),
    token: bob,
    transport: 'direct',
    logger,
    resolve: (token) => (token === 'bobpub' ? { shareMode: 'public', backendUrl: urlOf(odd) } : undefined),
  });
  closers.push(() => agent.close());
  const host = `bobpub.${DOMAIN}:${installation.frontend.port}`;
  await until(async () => (await request(installation.frontend.port, '/', { host })).status === 200, "bob's share");
  const odd600 = await request(installation.frontend.port, '/odd', { host });
  expect(odd600.status).toBe(502);
  expect((await request(installation.frontend.port, '/', { host })).status).toBe(200);
  expect(uncaught).toEqual([]);
});
