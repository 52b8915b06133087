import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startAccessClient, type RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import { listenHandler, type RunningListener } from '../../agent/backends/listener.ts';
import { remoteAccessHandler } from '../../agent/tunnel/remote-access.ts';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { ACCESS_PATH, DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import type { RunningFrontend } from '../../sidecar/frontend.ts';
import type { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import type { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import { LogCapture } from '../support/frontend.ts';
import { request } from '../support/raw-http.ts';
import { startTunnelBackend, type TunnelTestBackend, websocketRoundTrip } from '../support/tunnel-backend.ts';
import { startTunnelFrontend } from '../support/tunnel-frontend.ts';
import { tunnelTransport } from '../support/tunnel-transport.ts';

/**
 * The tunnel on loopback, in one process: the real frontend with the tunnel endpoint, agents' tunnel
 * and access clients dialling it over WebSocket, a real backend. The share directory is a map here
 * (the controller's registry is exercised by the installation tests); everything on the wire is real.
 */
const DOMAIN = 'tunnel.localhost';
const TOKENS = {
  a: 'svcv_aaaaaaaaaaaa_secret-of-environment-a-0123456789abcdefghijk',
  b: 'svcv_bbbbbbbbbbbb_secret-of-environment-b-0123456789abcdefghijk',
  c: 'svcv_cccccccccccc_secret-of-environment-c-0123456789abcdefghijk',
};
const IDENTITIES: Record<string, EnvironmentIdentity> = {
  [TOKENS.a]: { envZId: 'aaaaaaaaaaaa', accountId: 'alice' },
  [TOKENS.b]: { envZId: 'bbbbbbbbbbbb', accountId: 'alice' },
  [TOKENS.c]: { envZId: 'cccccccccccc', accountId: 'mallory' },
};

class MapDirectory implements ShareDirectory {
  readonly shares = new Map<string, PublishedShare>();
  private readonly listeners = new Set<(envZId: string) => void>();
  lookup(token: string) {
    return this.shares.get(token);
  }
  authenticate(token: string) {
    return Promise.resolve(IDENTITIES[token]);
  }
  onRevoked(listener: (envZId: string) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  revoke(envZId: string) {
    for (const l of this.listeners) l(envZId);
  }
}

const share = (token: string, envZId: string, shareMode: 'public' | 'private'): PublishedShare => ({
  token,
  instance: `${token}-1`,
  envZId,
  accountId: 'alice',
  shareMode,
  backendMode: 'proxy',
});

let backend: TunnelTestBackend;
let frontend: RunningFrontend;
let endpoint: TunnelEndpoint;
let directory: MapDirectory;
let tunnel: RunningTunnel;
let logs: LogCapture;
const limits = { ...DEFAULT_TUNNEL_LIMITS, maxStreamsPerTunnel: 8, maxTunnelsPerEnvironment: 2 };
const closers: (() => Promise<unknown>)[] = [];

const host = (token: string) => `${token}.${DOMAIN}:${frontend.port}`;
const url = (path: typeof TUNNEL_PATH | typeof ACCESS_PATH) => tunnelUrl(`http://127.0.0.1:${frontend.port}`, path);
const agentShares = (): Map<string, TunnelledShare> =>
  new Map([
    ['pub1', { shareMode: 'public', backendUrl: new URL(backend.url) }],
    ['priv1', { shareMode: 'private', backendUrl: new URL(backend.url) }],
  ]);
const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

function agentTunnel(token: string, shares = agentShares()): RunningTunnel {
  const running = startTunnel({
    transport: tunnelTransport(),
    url: url(TUNNEL_PATH),
    token,
    logger: createLogger('agent', { level: 'silent' }),
    resolve: (t) => shares.get(t),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  closers.push(() => running.close());
  return running;
}

beforeAll(async () => {
  backend = await startTunnelBackend();
  logs = new LogCapture();
  const logger = createLogger('frontend', { destination: logs });
  directory = new MapDirectory();
  directory.shares.set('pub1', share('pub1', 'aaaaaaaaaaaa', 'public'));
  directory.shares.set('priv1', share('priv1', 'aaaaaaaaaaaa', 'private'));
  directory.shares.set('nobody', share('nobody', 'dddddddddddd', 'public'));
  let locator: LocalTunnels;
  ({ frontend, endpoint, locator } = await startTunnelFrontend({ domain: DOMAIN, directory, limits, logger }));
  tunnel = agentTunnel(TOKENS.a);
  await until(() => tunnel.connected && locator.find('aaaaaaaaaaaa') !== undefined, 'the tunnel');
  // Every suite runs once per transport: make sure it is the one asked for.
  expect(logs.text).toContain(`"transport":"${tunnelTransport()}"`);
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  endpoint?.close();
  await frontend?.close();
  await backend?.close();
});

describe('a public share through the tunnel', () => {
  it('reaches the backend on the agent side with the frontend headers, look-alikes stripped, body streamed', async () => {
    const body = 'x'.repeat(300_000);
    const reply = await request(frontend.port, '/echo?q=1', {
      method: 'POST',
      host: host('pub1'),
      headers: { 'svc-auth-email': 'forged@example.com', SVC_AUTH_PROVIDER: 'forged', 'content-type': 'text/plain' },
      body,
    });
    expect(reply.status).toBe(200);
    const seen = JSON.parse(reply.body) as { url: string; headers: Record<string, string>; bodyLength: number };
    expect(seen.url).toBe('/echo?q=1');
    expect(seen.bodyLength).toBe(body.length);
    expect(seen.headers.host).toBe(new URL(backend.url).host);
    expect(seen.headers['x-forwarded-host']).toBe(host('pub1'));
    expect(Object.keys(seen.headers).filter((h) => h.replace(/_/g, '-').startsWith('svc-'))).toEqual([]);
    expect(reply.headers['set-cookie']).toEqual(['backend-cookie=1; Path=/']);
  });

  it('carries a websocket as an extended CONNECT stream', async () => {
    const echoed = await websocketRoundTrip(frontend.port, host('pub1'), 'hello');
    expect(echoed).toBe('echo:hello:');
  });

  it('serves a small request while a 50 MB download is in flight and not being read', async () => {
    const big = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: frontend.port, path: '/big?mb=50', headers: { host: host('pub1') } }, resolve)
        .on('error', reject);
    });
    big.pause();
    let received = 0;
    big.on('data', (c: Buffer) => (received += c.length));
    const small = await request(frontend.port, '/echo', { host: host('pub1') });
    expect(small.status).toBe(200);
    expect(big.readableEnded).toBe(false);
    const done = new Promise<void>((resolve) => big.on('end', resolve));
    big.resume();
    await done;
    expect(received).toBe(50 * 1024 * 1024);
  });

  it('answers "share offline" (503, not 404) for a registered share whose agent is not connected', async () => {
    const reply = await request(frontend.port, '/', { host: host('nobody') });
    expect(reply.status).toBe(503);
    expect(reply.body).toContain('Share offline');
    expect(reply.headers['retry-after']).toBe('5');
    expect((await request(frontend.port, '/', { host: host('unknown') })).status).toBe(404);
  });

  it('never routes a private share on the public frontend', async () => {
    const reply = await request(frontend.port, '/echo', { host: host('priv1') });
    expect(reply.status).toBe(404);
  });
});

describe('limits and refusals', () => {
  it('refuses a forged token at the upgrade and logs it without the token', async () => {
    const forged = 'svcv_aaaaaaaaaaaa_not-the-secret-0123456789abcdefghijklmnopqrs';
    const status = await new Promise<number>((resolve) => {
      const socket = new WebSocket(url(TUNNEL_PATH), { headers: { 'x-environment-token': forged } });
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      socket.on('open', () => resolve(101));
      socket.on('error', () => undefined);
    });
    expect(status).toBe(401);
    expect(logs.text).toContain('tunnel refused: the environment token is not valid');
    expect(logs.text).not.toContain('not-the-secret');
  });

  it('refuses more tunnels per environment than the cap', async () => {
    const before = logs.lines.length;
    agentTunnel(TOKENS.a);
    agentTunnel(TOKENS.a);
    await until(
      () => logs.lines.slice(before).some((l) => l.includes('the environment holds the maximum number of tunnels')),
      'the refusal',
    );
  });

  it('answers 503 "share busy" beyond the stream cap, and serves again once streams finish', async () => {
    // The environment holds its 2 tunnels (the test above added the second); new streams spread
    // over both, so both are at their cap before one is refused.
    const capacity = limits.maxTunnelsPerEnvironment * limits.maxStreamsPerTunnel;
    const held = Array.from({ length: capacity }, () => request(frontend.port, '/hold', { host: host('pub1') }));
    await until(() => backend.seen.filter((s) => s.url === '/hold').length >= capacity, 'held');
    const refused = await request(frontend.port, '/echo', { host: host('pub1') });
    expect(refused.status).toBe(503);
    expect(refused.body).toContain('Share busy');
    expect(logs.text).toContain('tunnel: stream refused');
    backend.release();
    expect((await Promise.all(held)).map((r) => r.body)).toEqual(held.map(() => 'released\n'));
    expect((await request(frontend.port, '/echo', { host: host('pub1') })).status).toBe(200);
  });
});

describe('private access from a second machine of the account', () => {
  let access: RunningAccessClient;
  let listener: RunningListener;

  beforeAll(async () => {
    access = startAccessClient({
      transport: tunnelTransport(),
      url: url(ACCESS_PATH),
      token: TOKENS.b,
      logger: createLogger('b', { level: 'silent' }),
    });
    closers.push(() => access.close());
    await until(() => access.target() !== undefined, 'the access connection');
    listener = await listenHandler(remoteAccessHandler({ target: () => access.target(), shareToken: 'priv1' }), {
      host: '127.0.0.1',
      port: 0,
    });
    closers.push(() => listener.close());
  });

  it('reaches the private share through the owner tunnel, identity look-alikes removed', async () => {
    const reply = await request(listener.port, '/echo', { headers: { 'svc-auth-email': 'x@example.com' } });
    expect(reply.status).toBe(200);
    const seen = JSON.parse(reply.body) as { headers: Record<string, string> };
    expect(seen.headers['svc-auth-email']).toBeUndefined();
    expect(seen.headers['x-forwarded-host']).toBe(`127.0.0.1:${listener.port}`);
  });

  it('carries websockets too', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${listener.port}/ws`);
    const echoed = await new Promise<string>((resolve, reject) => {
      socket.on('open', () => socket.send('via-access'));
      socket.on('message', (data: Buffer) => resolve(data.toString()));
      socket.on('error', reject);
    });
    socket.close();
    expect(echoed).toBe('echo:via-access:');
  });

  it('refuses a public share and a share of another account', async () => {
    const toPublic = await listenHandler(remoteAccessHandler({ target: () => access.target(), shareToken: 'pub1' }), {
      host: '127.0.0.1',
      port: 0,
    });
    closers.push(() => toPublic.close());
    expect((await request(toPublic.port, '/echo')).status).toBe(404);

    const mallory = startAccessClient({
      transport: tunnelTransport(),
      url: url(ACCESS_PATH),
      token: TOKENS.c,
      logger: createLogger('c', { level: 'silent' }),
    });
    closers.push(() => mallory.close());
    await until(() => mallory.target() !== undefined, "mallory's access connection");
    const foreign = await listenHandler(remoteAccessHandler({ target: () => mallory.target(), shareToken: 'priv1' }), {
      host: '127.0.0.1',
      port: 0,
    });
    closers.push(() => foreign.close());
    const reply = await request(foreign.port, '/echo');
    expect(reply.status).toBe(404);
    expect(backend.seen.filter((s) => s.url === '/echo').length).toBeGreaterThan(0);
  });
});

describe('failures', () => {
  it('fails an in-flight request with a 502 page when the tunnel drops, then serves again after the reconnect', async () => {
    const holds = () => backend.seen.filter((s) => s.url === '/hold').length;
    const before = holds();
    const held = request(frontend.port, '/hold', { host: host('pub1') }).catch((err: Error) => err);
    await until(() => holds() > before, 'held');
    directory.revoke('aaaaaaaaaaaa');
    const outcome = await held;
    // The backend had sent its headers: the visitor's connection is cut mid-response, not ended.
    expect(outcome).toBeInstanceOf(Error);
    await until(() => tunnel.connected, 'the reconnect');
    let reply = await request(frontend.port, '/echo', { host: host('pub1') });
    for (let i = 0; i < 40 && reply.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      reply = await request(frontend.port, '/echo', { host: host('pub1') });
    }
    expect(reply.status).toBe(200);
  });

  it('answers a 502 page when the request never got an answer because the tunnel dropped', async () => {
    // A backend that accepts the connection and never answers.
    const accepted = new Set<net.Socket>();
    const silent = net.createServer((socket) => accepted.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise((resolve) => {
          for (const socket of accepted) socket.destroy();
          silent.close(resolve);
        }),
    );
    const port = (silent.address() as net.AddressInfo).port;
    const stalled = new Map<string, TunnelledShare>([
      ['pub2', { shareMode: 'public', backendUrl: new URL(`http://127.0.0.1:${port}/`) }],
    ]);
    directory.shares.set('pub2', share('pub2', 'eeeeeeeeeeee', 'public'));
    IDENTITIES['svcv_eeeeeeeeeeee_secret-of-environment-e-0123456789abcdefghijk'] = {
      envZId: 'eeeeeeeeeeee',
      accountId: 'alice',
    };
    const e = agentTunnel('svcv_eeeeeeeeeeee_secret-of-environment-e-0123456789abcdefghijk', stalled);
    await until(() => e.connected, 'tunnel e');
    await new Promise((r) => setTimeout(r, 100));
    const pending = request(frontend.port, '/', { host: host('pub2') });
    await new Promise((r) => setTimeout(r, 200));
    await e.close();
    const reply = await pending;
    expect(reply.status).toBe(502);
    expect(reply.body).toContain('Backend unreachable');
  });
});
