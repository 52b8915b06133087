import http2, { type ClientHttp2Stream, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { TrafficTally } from '../../lib/share/traffic-tally.ts';
import type { PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { DEFAULT_TUNNEL_LIMITS, ROUTE_HEADER } from '../../lib/tunnel/protocol.ts';
import { CappedSession } from '../../lib/tunnel/stream-target.ts';
import { PeerSessions } from './peer-client.ts';
import { startPeerServer, type PeerServer } from './peer-server.ts';
import { until } from '../../test/support/until.ts';
import { peerStreamCounter } from './peer-traffic.ts';

/**
 * The holder's count of requests other replicas forward to it, over real HTTP/2 sessions: a peer
 * (PeerSessions) sends streams to this replica's peer listener, which forwards them into the tunnel
 * of the environment it holds (here a session to an HTTP/2 server standing in for the agent) and
 * counts them in its TrafficTally: once per request, with its bytes and its failure, only for a
 * public share of the environment the stream goes into.
 */
const CREDENTIAL = 'peer-traffic-credential-0123456789abcdefghijk';
const HELD = 'envheldaaaaa';
const OTHER = 'envotherbbbb';
const logger = createLogger('peer-traffic', { level: 'silent' });

const share = (token: string, envZId: string, extra: Partial<PublishedShare> = {}): PublishedShare => ({
  token,
  instance: `i-${token}`,
  envZId,
  accountId: `acct-${envZId}`,
  shareMode: 'public',
  backendMode: 'proxy',
  ...extra,
});
const shares = new Map(
  [
    share('pub1', HELD),
    share('priv1', HELD, { shareMode: 'private' }),
    share('tcp1', HELD, { shareMode: 'private', backendMode: 'tcp' }),
    share('theirs1', OTHER),
  ].map((s) => [s.token, s]),
);
const directory: ShareDirectory = {
  lookup: (token) => shares.get(token),
  authenticate: () => Promise.resolve(undefined),
  onRevoked: () => () => undefined,
};

let agent: http2.Http2Server;
let tunnel: http2.ClientHttp2Session;
let server: PeerServer;
let peers: PeerSessions;
const tally = new TrafficTally();

/** The agent: `/ok` answers 5,000 bytes, `/fail` 500, `/cut` resets its stream after the head. */
function serveAsAgent(stream: ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  stream.on('error', () => undefined);
  stream.resume();
  stream.on('end', () => {
    const path = headers[':path'];
    if (path === '/fail') return stream.respond({ ':status': 500 }, { endStream: true });
    stream.respond({ ':status': 200, 'content-type': 'text/plain', 'x-authority': String(headers[':authority']) });
    if (path === '/cut') stream.write('partial', () => stream.destroy(new Error('cut by the agent')));
    else stream.end('x'.repeat(5_000));
  });
}

/** One stream through the peer listener as another replica sends it: the status and body length. */
function send(
  path: string,
  extra: { authority?: string; route?: string; body?: string; credential?: string } = {},
): Promise<{ status: number; bytes: number; reset: boolean }> {
  const target = extra.credential
    ? new PeerSessions(DEFAULT_TUNNEL_LIMITS, extra.credential, logger).target(`127.0.0.1:${server.port}`, HELD)
    : peers.target(`127.0.0.1:${server.port}`, HELD);
  const stream: ClientHttp2Stream = target.open({
    ':method': extra.body === undefined ? 'GET' : 'POST',
    ':path': path,
    ':authority': extra.authority ?? 'pub1.peer.localhost:8443',
    [ROUTE_HEADER]: extra.route ?? 'public',
  });
  if (extra.body !== undefined) stream.end(extra.body);
  else stream.end();
  return new Promise((resolve) => {
    let status = 0;
    let bytes = 0;
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => (bytes += c.length));
    stream.on('error', () => undefined);
    stream.on('close', () => resolve({ status, bytes, reset: stream.rstCode !== 0 }));
  });
}

/**
 * The tally's entries once `requests` requests were counted: the holder counts when its side of a
 * stream closes, which may come after the sender saw the response end.
 */
async function counted(requests: number) {
  const entries: ReturnType<TrafficTally['take']> = [];
  await until(() => {
    entries.push(...tally.take(100));
    return entries.reduce((sum, e) => sum + e.requests, 0) >= requests;
  }, `${requests} requests counted`);
  return entries.map(({ token, requests: n, bytesIn, bytesOut, errors }) => ({
    token,
    requests: n,
    bytesIn,
    bytesOut,
    errors,
  }));
}

beforeAll(async () => {
  agent = http2.createServer();
  agent.on('stream', serveAsAgent);
  await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
  tunnel = http2.connect(`http://127.0.0.1:${(agent.address() as AddressInfo).port}`);
  const held = new CappedSession(tunnel, 100);
  server = await startPeerServer({
    listen: { host: '127.0.0.1', port: 0 },
    credential: CREDENTIAL,
    local: (envZId) => (envZId === HELD ? held : undefined),
    limits: DEFAULT_TUNNEL_LIMITS,
    logger,
    count: peerStreamCounter(directory, tally),
  });
  peers = new PeerSessions(DEFAULT_TUNNEL_LIMITS, CREDENTIAL, logger);
});

afterAll(async () => {
  peers?.close();
  await server?.close();
  tunnel?.destroy();
  agent?.close();
});

describe('requests forwarded to the replica holding the tunnel', () => {
  it('are marked for the holder to count, so the forwarding replica leaves them alone', () => {
    expect(peers.target('127.0.0.1:1', HELD).countedByHolder).toBe(true);
  });

  it('are counted by the holder once each, with the body in, the head and body out', async () => {
    expect(await send('/ok', { body: 'y'.repeat(1_000) })).toEqual({ status: 200, bytes: 5_000, reset: false });
    expect(await send('/ok')).toMatchObject({ status: 200, bytes: 5_000 });
    const [entry, ...rest] = await counted(2);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ token: 'pub1', requests: 2, bytesIn: 1_000, errors: 0 });
    // Two bodies of 5,000 bytes, each with a head of its status line and header lines.
    expect(entry?.bytesOut).toBeGreaterThan(2 * 5_000 + 2 * 'HTTP/1.1 200 OK\r\n\r\n'.length);
    expect(entry?.bytesOut).toBeLessThan(2 * 5_000 + 2 * 300);
  });

  it('count a 5xx answer and a response cut short as errors', async () => {
    expect(await send('/fail')).toMatchObject({ status: 500 });
    expect(await send('/cut')).toMatchObject({ status: 200, reset: true });
    expect(await counted(2)).toEqual([expect.objectContaining({ token: 'pub1', requests: 2, errors: 2 })]);
  });

  it('are not counted for a share of another environment, a private or unknown share, or a refused peer', async () => {
    // Into HELD's tunnel, naming OTHER's share: forwarded (the agent decides), counted nowhere.
    expect(await send('/ok', { authority: 'theirs1.peer.localhost' })).toMatchObject({ status: 200 });
    expect(await send('/ok', { authority: 'priv1.peer.localhost', route: 'access' })).toMatchObject({ status: 200 });
    expect(await send('/ok', { authority: 'priv1.peer.localhost' })).toMatchObject({ status: 200 });
    expect(await send('/ok', { authority: 'nosuch1.peer.localhost' })).toMatchObject({ status: 200 });
    expect(await send('/ok', { credential: `${CREDENTIAL}x` })).toMatchObject({ status: 401 });
    // The holder decides whether to count when a stream arrives: none of those got a counter. One
    // request of the held share, sent last, is all the tally holds once it is counted.
    expect(await send('/ok')).toMatchObject({ status: 200 });
    expect(await counted(1)).toEqual([expect.objectContaining({ token: 'pub1', requests: 1, errors: 0 })]);
  });
});
