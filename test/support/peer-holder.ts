import http2, { type ClientHttp2Stream, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../lib/logger.ts';
import { TrafficTally } from '../../lib/share/traffic-tally.ts';
import type { PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { DEFAULT_TUNNEL_LIMITS, ROUTE_HEADER } from '../../lib/tunnel/protocol.ts';
import { CappedSession } from '../../lib/tunnel/stream-target.ts';
import { PeerSessions } from '../../sidecar/tunnel/peer-client.ts';
import { PEER_CREDENTIAL_HEADER, PEER_ENV_HEADER } from '../../sidecar/tunnel/peer-protocol.ts';
import { startPeerServer } from '../../sidecar/tunnel/peer-server.ts';
import { peerStreamCounter } from '../../sidecar/tunnel/peer-traffic.ts';
import { until } from './until.ts';

/** The replicas' shared credential of a PeerHolder. */
export const PEER_CREDENTIAL = 'peer-holder-credential-0123456789abcdefghijk';

/** One stream as another replica (or a holder of the replicas' credential) sends it. */
export interface PeerStreamRequest {
  readonly path?: string;
  readonly authority?: string;
  /** `svc-tunnel-route`, `public` unless given; `null` sends none. */
  readonly route?: string | null;
  readonly envZId?: string;
  readonly method?: string;
  readonly body?: string;
  readonly credential?: string;
  /** Extra headers on the stream. */
  readonly headers?: Record<string, string>;
}

export interface PeerAnswer {
  readonly status: number;
  readonly bytes: number;
  /** The stream ended with a reset rather than a complete body. */
  readonly reset: boolean;
}

/** A share of the registry a PeerHolder reads; public HTTP unless `extra` says otherwise. */
export function publishedShare(token: string, envZId: string, extra: Partial<PublishedShare> = {}): PublishedShare {
  return {
    token,
    instance: `i-${token}`,
    envZId,
    accountId: `acct-${envZId}`,
    shareMode: 'public',
    backendMode: 'proxy',
    ...extra,
  };
}

/**
 * A frontend replica's peer side as the replicas run it, over real HTTP/2 sessions: the peer
 * listener with peer-traffic.ts counting into a TrafficTally, holding the tunnel of `held` only — a
 * session to an HTTP/2 server standing in for the agent (`/ok` answers 5,000 bytes, `/fail` a 500,
 * `/cut` resets its stream after 7 bytes of body) — and a share registry of `shares`.
 */
export async function startPeerHolder(held: string, shares: readonly PublishedShare[]) {
  const logger = createLogger('peer-holder', { level: 'silent' });
  const byToken = new Map(shares.map((s) => [s.token, s]));
  const directory: ShareDirectory = {
    lookup: (token) => byToken.get(token),
    authenticate: () => Promise.resolve(undefined),
    onRevoked: () => () => undefined,
  };
  const agent = http2.createServer({ settings: { enableConnectProtocol: true } });
  agent.on('stream', serveAsAgent);
  await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
  const tunnel = http2.connect(`http://127.0.0.1:${(agent.address() as AddressInfo).port}`);
  const target = new CappedSession(tunnel, 100);
  const tally = new TrafficTally();
  const server = await startPeerServer({
    listen: { host: '127.0.0.1', port: 0 },
    credential: PEER_CREDENTIAL,
    local: (envZId) => (envZId === held ? target : undefined),
    limits: DEFAULT_TUNNEL_LIMITS,
    logger,
    count: peerStreamCounter(directory, tally),
  });
  const peers = new PeerSessions(DEFAULT_TUNNEL_LIMITS, PEER_CREDENTIAL, logger);
  return {
    tally,
    port: server.port,
    /** The forwarding replica's target for `envZId` on this holder. */
    target: (envZId: string) => peers.target(`127.0.0.1:${server.port}`, envZId),
    send: (request: PeerStreamRequest = {}) => sendStream(server.port, held, request),
    /**
     * The tally's entries once `requests` requests were counted: the holder counts when its side of
     * a stream closes, which may come after the sender saw the response end.
     */
    async counted(requests: number) {
      const entries: ReturnType<TrafficTally['take']> = [];
      await until(() => {
        entries.push(...tally.take(100));
        return entries.reduce((sum, e) => sum + e.requests, 0) >= requests;
      }, `${requests} requests counted`);
      return entries.map(({ minute: _minute, ...counts }) => counts);
    },
    async close() {
      peers.close();
      await server.close();
      tunnel.destroy();
      agent.close();
    },
  };
}

export type PeerHolder = Awaited<ReturnType<typeof startPeerHolder>>;

function serveAsAgent(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
  stream.on('error', () => undefined);
  if (headers[':method'] === 'CONNECT') {
    stream.respond({ ':status': 200 });
    return void stream.end();
  }
  stream.resume();
  stream.on('end', () => {
    const path = headers[':path'];
    if (path === '/fail') return stream.respond({ ':status': 500 }, { endStream: true });
    stream.respond({ ':status': 200, 'content-type': 'text/plain' });
    if (path === '/cut') stream.write('partial', () => stream.destroy(new Error('cut by the agent')));
    else stream.end('x'.repeat(5_000));
  });
}

/** Sends one stream to the peer listener on `port` on a session of its own, and reads the answer. */
async function sendStream(port: number, held: string, request: PeerStreamRequest): Promise<PeerAnswer> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const method = request.method ?? (request.body === undefined ? 'GET' : 'POST');
  // An extended CONNECT (a WebSocket) may be sent only once the listener's settings allow it.
  if (method === 'CONNECT') await new Promise((resolve) => session.once('remoteSettings', resolve));
  const route = request.route === null ? {} : { [ROUTE_HEADER]: request.route ?? 'public' };
  const stream: ClientHttp2Stream = session.request({
    ':method': method,
    ':path': request.path ?? '/ok',
    ':authority': request.authority ?? 'pub1.peer.localhost:8443',
    ...(method === 'CONNECT' ? { ':protocol': 'websocket', ':scheme': 'http' } : {}),
    ...route,
    [PEER_ENV_HEADER]: request.envZId ?? held,
    [PEER_CREDENTIAL_HEADER]: request.credential ?? PEER_CREDENTIAL,
    ...request.headers,
  });
  stream.end(request.body);
  return new Promise((resolve) => {
    let status = 0;
    let bytes = 0;
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => (bytes += c.length));
    stream.on('error', () => undefined);
    stream.on('close', () => {
      session.close();
      resolve({ status, bytes, reset: stream.rstCode !== 0 });
    });
  });
}
