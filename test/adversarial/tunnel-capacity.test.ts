import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { ClientHttp2Stream } from 'node:http2';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAccessClient, type RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import { createLogger } from '../../lib/logger.ts';
import type { PublishedShare } from '../../lib/tunnel/directory.ts';
import {
  ACCESS_PATH,
  DEFAULT_TUNNEL_LIMITS,
  ROUTE_HEADER,
  STREAM_WINDOW_BYTES,
  tunnelUrl,
  type TunnelLimits,
} from '../../lib/tunnel/protocol.ts';
import { PeerSessions } from '../../sidecar/tunnel/peer-client.ts';
import type { PeerServer } from '../../sidecar/tunnel/peer-server.ts';
import { suiteFigures } from '../support/figures.ts';
import { request } from '../support/raw-http.ts';
import {
  malloryAndAlice,
  mapDirectory,
  publishedShare,
  startTunnelFrontendWithPeer,
  type TunnelFrontendWithPeer,
} from '../support/tunnel-frontend.ts';
import { until } from '../support/until.ts';

/**
 * Every account and every share's visitors may attack the others' capacity. One share's visitors
 * (the account's own, or anyone's on a public share) open requests and never read: each stream parks
 * a window of the agent's response in the frontend, and holds one of its tunnel's streams. The
 * frontend caps the streams of one share (`max_streams_per_share`, on every path that opens one:
 * the fast path, Node's server, a private access, a stream forwarded by another replica) and of one
 * account across all its environments and tunnels (`max_streams_per_account`), so the other shares
 * keep answering and one account's memory here is bounded by its cap × the stream window.
 */
const DOMAIN = 'capacity.localhost';
const { tokens: TOKENS, identities: IDENTITIES } = malloryAndAlice();
const share = (token: string, envZId: string, accountId: string, mode: 'public' | 'private') =>
  publishedShare(token, envZId, accountId, mode);
const SHARES: Record<string, PublishedShare> = {
  big1: share('big1', 'mmmmmmmmmmmm', 'mallory', 'public'),
  big2: share('big2', 'mmmmmmmmmmmm', 'mallory', 'public'),
  other: share('other', 'mmmmmmmmmmmm', 'mallory', 'public'),
  held: share('held', 'mmmmmmmmmmmm', 'mallory', 'public'),
  privheld: share('privheld', 'mmmmmmmmmmmm', 'mallory', 'private'),
  big3: share('big3', 'nnnnnnnnnnnn', 'mallory', 'public'),
  alicepub: share('alicepub', 'aaaaaaaaaaaa', 'alice', 'public'),
};
const directory = mapDirectory(SHARES, IDENTITIES);
/** Small enough to measure on a shared machine; the shape of the defaults (share < tunnel, account < tunnels). */
const LIMITS: TunnelLimits = {
  ...DEFAULT_TUNNEL_LIMITS,
  maxStreamsPerTunnel: 60,
  maxStreamsPerShare: 8,
  maxStreamsPerAccount: 20,
};
const PEER_CREDENTIAL = 'tunnel-capacity-test-replica-credential-0123456789';
const MIB = 1024 * 1024;

const logger = createLogger('tunnel-capacity', { level: 'silent' });
const figures = suiteFigures('tunnel-capacity');
const crossPath = figures.attackClass(
  "One share's streams opened on every path at once (fast path, Node's server, private access, a replica's forwarded stream) past the share's cap",
  'no per-share cap for HTTP shares (only the tunnel’s 100): a per-share cap on every path, 503 "Share busy"',
);
const neighbours = figures.attackClass(
  "One share's visitors open requests and never read; its environment's other share and another account's share answer",
  'the share took all 100 streams of the newest tunnel: the other share answered 503 "Share busy"',
);
const memory = figures.attackClass(
  "One account's visitors stall requests on shares of two environments (three tunnels): the frontend's memory stays within the account's cap × stream window",
  'no per-account cap: ~0.9 MiB held per stalled stream, up to 100 per tunnel, 4 tunnels per environment, any number of environments',
);

let installation: TunnelFrontendWithPeer;
let peer: PeerServer;
let peers: PeerSessions;
let access: RunningAccessClient;
const children: ChildProcess[] = [];
const closers: (() => unknown)[] = [];
/** Ends the held requests and streams of the first tests, so the account starts the next ones with none. */
const releases: (() => unknown)[] = [];

/** A stock agent with its backend in a child process (the memory measured here is the frontend's). */
async function agentProcess(token: string, shares: string[]): Promise<void> {
  const script = join(import.meta.dirname, '../support/stock-agent-child.ts');
  const child = spawn(process.execPath, [script, String(installation.frontend.port), token, shares.join(',')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the agent process exited (${code})`)));
  });
}

/** `n` visitors that send one request each and never read; resolves with their statuses after `waitS`. */
async function stalledVisitors(token: string, method: string, path: string, n: number, waitS = 20) {
  const script = join(import.meta.dirname, '../support/stalled-visitors.py');
  const host = `${token}.${DOMAIN}:${installation.frontend.port}`;
  const args = [script, String(installation.frontend.port), host, method, path, String(n), String(waitS)];
  const child = spawn('python3', args, { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const line = await new Promise<string>((resolve) => child.stdout.once('data', (d: Buffer) => resolve(d.toString())));
  return JSON.parse(line) as Record<string, number>;
}

/** A request whose response head has come (its body held open by the backend's `/hold`). */
function heldRequest(token: string, method: 'GET' | 'POST'): Promise<{ status: number; title: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: installation.frontend.port,
      method,
      path: '/hold',
      agent: false,
      headers: { host: `${token}.${DOMAIN}:${installation.frontend.port}`, 'content-length': '0' },
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      releases.push(() => req.destroy());
      if (res.statusCode === 200) return resolve({ status: 200, title: undefined });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, title: /<title>([^<]*)/.exec(body)?.[1] }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The status of a stream once its response head came. */
function statusOf(stream: ClientHttp2Stream): Promise<number> {
  releases.push(() => stream.close());
  return new Promise((resolve) => {
    stream.on('error', () => undefined);
    stream.once('response', (headers) => resolve(Number(headers[':status'])));
    stream.once('close', () => resolve(0));
    stream.resume();
  });
}

function peerStream(token: string, route: 'public' | 'access'): ClientHttp2Stream {
  const authority = route === 'public' ? `${token}.${DOMAIN}` : `${token}.access.invalid`;
  return peers
    .target(`127.0.0.1:${peer.port}`, 'mmmmmmmmmmmm')
    .open({ ':method': 'GET', ':path': '/hold', ':authority': authority, [ROUTE_HEADER]: route }, true);
}

function accessStream(token: string): ClientHttp2Stream {
  return access.target()!.open({ ':method': 'GET', ':path': '/hold', ':authority': `${token}.access.invalid` }, true);
}

async function served(token: string): Promise<number> {
  const host = `${token}.${DOMAIN}:${installation.frontend.port}`;
  return (await request(installation.frontend.port, '/echo', { host, timeoutMs: 10_000 })).status;
}

/** A full collection first, so that the heap's garbage (answered requests, 503 pages) is not counted. */
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

function rss(): number {
  collectGarbage();
  collectGarbage();
  return process.memoryUsage().rss;
}

/** The RSS once it stopped growing (the bodies take a while to fill the windows on a loaded machine). */
async function settledRss(): Promise<number> {
  let last = rss();
  for (let i = 0; i < 30; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = rss();
    if (i >= 3 && Math.abs(now - last) < MIB) return now;
    last = now;
  }
  return last;
}

beforeAll(async () => {
  const credential = PEER_CREDENTIAL;
  installation = await startTunnelFrontendWithPeer({ domain: DOMAIN, directory, limits: LIMITS, logger, credential });
  closers.push(() => installation.frontend.close());
  peer = installation.peer;
  closers.push(() => peer.close());
  peers = new PeerSessions(LIMITS, PEER_CREDENTIAL, logger);
  closers.push(() => peers.close());
  // Mallory: two tunnels of environment m, one of environment n; Alice: one of her own.
  const mShares = ['big1', 'big2', 'other', 'held', 'privheld:private'];
  await agentProcess(TOKENS.mallory, mShares);
  await agentProcess(TOKENS.mallory, mShares);
  await agentProcess(TOKENS.mallorySecond, ['big3']);
  await agentProcess(TOKENS.alice, ['alicepub']);
  access = startAccessClient({
    transport: 'direct',
    url: tunnelUrl(`http://127.0.0.1:${installation.frontend.port}`, ACCESS_PATH),
    token: TOKENS.mallorySecond,
    logger,
  });
  closers.push(() => access.close());
  await until(async () => access.target() !== undefined && (await served('alicepub')) === 200, 'the tunnels');
}, 60_000);

afterAll(async () => {
  figures.write();
  for (const child of children) child.kill();
  for (const release of releases) release();
  for (const close of closers.reverse()) await close();
});

describe("one share's streams, whatever path opens them", () => {
  it('a public share: the fast path, Node’s server and a replica share one cap; past it each answers 503', async () => {
    // The share's cap (8) filled over three paths: 3 on the fast path, 3 on Node's server, 2 forwarded.
    const opened = [
      ...(await Promise.all([1, 2, 3].map(() => heldRequest('held', 'GET')))).map((r) => r.status),
      ...(await Promise.all([1, 2, 3].map(() => heldRequest('held', 'POST')))).map((r) => r.status),
      ...(await Promise.all([1, 2].map(() => statusOf(peerStream('held', 'public'))))),
    ];
    await crossPath.run(async () => {
      expect(opened).toHaveLength(LIMITS.maxStreamsPerShare);
      expect(opened.every((status) => status === 200)).toBe(true);
      expect(await heldRequest('held', 'GET')).toEqual({ status: 503, title: 'Share busy' });
      expect(await heldRequest('held', 'POST')).toEqual({ status: 503, title: 'Share busy' });
      expect(await statusOf(peerStream('held', 'public'))).toBe(503);
      expect(await served('other')).toBe(200);
    });
  });

  it('a private share: accesses and a replica share one cap; past it each answers 503', async () => {
    const half = LIMITS.maxStreamsPerShare / 2;
    const opened = await Promise.all([
      ...Array.from({ length: half }, () => statusOf(accessStream('privheld'))),
      ...Array.from({ length: half }, () => statusOf(peerStream('privheld', 'access'))),
    ]);
    await crossPath.run(async () => {
      expect(opened).toEqual(Array.from({ length: LIMITS.maxStreamsPerShare }, () => 200));
      expect(await statusOf(accessStream('privheld'))).toBe(503);
      expect(await statusOf(peerStream('privheld', 'access'))).toBe(503);
    });
  });
});

describe('visitors that never read', () => {
  let before = 0;

  it("a share's visitors fill its cap only: the environment's other share and Alice's answer", async () => {
    for (const release of releases.splice(0)) release();
    // Warm-up of the same shape with answers that end at once: what the connections themselves cost
    // (sockets, parsers, the heap grown for them) is in the baseline, the parked windows are not.
    // (Answered 200 or 503 "Share busy": the share's cap counts these too while they are open.)
    await stalledVisitors('other', 'GET', '/echo', 3 * LIMITS.maxStreamsPerTunnel);
    for (const child of children.splice(-1)) child.kill();
    before = await settledRss();
    const big1 = await stalledVisitors('big1', 'GET', '/big?mb=64', LIMITS.maxStreamsPerTunnel);
    await neighbours.run(async () => {
      expect(await served('other')).toBe(200);
      expect(await served('alicepub')).toBe(200);
      expect(big1['200']).toBe(LIMITS.maxStreamsPerShare);
    });
    figures.measure('stalled requests sent to one share', LIMITS.maxStreamsPerTunnel);
    figures.measure('of those the share holds (max_streams_per_share)', big1['200'] ?? 0);
  }, 60_000);

  it("one account's stalled streams over two environments stay within its cap × the stream window", async () => {
    const big2 = await stalledVisitors('big2', 'POST', '/big?mb=64', LIMITS.maxStreamsPerTunnel);
    const big3 = await stalledVisitors('big3', 'GET', '/big?mb=64', LIMITS.maxStreamsPerTunnel);
    const after = await settledRss();
    const growthMiB = Math.round((after - before) / MIB);
    const boundMiB = (LIMITS.maxStreamsPerAccount * STREAM_WINDOW_BYTES) / MIB;
    figures.measure('stalled requests sent by one account (3 shares, 2 environments, 3 tunnels)', 3 * 60);
    figures.measure('streams the account holds (max_streams_per_account)', LIMITS.maxStreamsPerAccount);
    figures.measure('frontend RSS growth (MiB)', growthMiB);
    figures.measure('bound: max_streams_per_account × stream window (MiB)', boundMiB);
    await memory.run(async () => {
      // The windows, plus what every stream costs besides (pipe buffers, the allocator's slack, which
      // varies run to run: 12–48 MiB measured); without the cap the account's streams (120 here)
      // are held, ~0.9 MiB each (104 MiB measured).
      expect(growthMiB).toBeLessThanOrEqual(boundMiB * 2.5 + 10);
      const held = LIMITS.maxStreamsPerShare + (big2['200'] ?? 0) + (big3['200'] ?? 0);
      expect(held).toBe(LIMITS.maxStreamsPerAccount);
      expect(await served('alicepub')).toBe(200);
    });
  }, 90_000);
});
