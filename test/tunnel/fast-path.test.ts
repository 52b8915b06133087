import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import { ShareTraffic, trafficTotals } from '../../lib/share/traffic.ts';
import type { PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import { tunnelledShares } from '../../sidecar/tunnel/routes.ts';
import { LogCapture } from '../support/frontend.ts';
import { tunnelTransport } from '../support/tunnel-transport.ts';
import { until } from '../support/until.ts';

/**
 * The installation's fast path for tunnelled shares (sidecar/fast-path/tunnel-exchange.ts) against
 * its slow path (Node's server, lib/tunnel/forward.ts), differentially: every request is sent twice
 * through the same tunnel to the same raw backend, once as the fast path takes it and once with a
 * `Keep-Alive` request header, which sends it to Node's server (the header is hop-by-hop: the agent
 * and the backend see the same request). Both answers must be the same bytes (the Date header's
 * value aside), end the same way (complete, or cut), and count the same in the traffic counters.
 * Node's own client reads every answer, so its parser checks the framing too.
 */
const DOMAIN = 'tunnel.localhost';
const TOKEN = 'svcv_aaaaaaaaaaaa_secret-of-environment-a-0123456789abcdefghijk';
const IDLE_MS = 1_500;

/** Raw responses by request path: the agent's node:http client reads these, as it would any backend. */
const RESPONSES: Record<string, string> = {
  '/length':
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Multi: a\r\nX-Multi: b\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello',
  '/own-date': 'HTTP/1.1 200 OK\r\nDate: Tue, 01 Jan 2030 00:00:00 GMT\r\nContent-Length: 2\r\n\r\nok',
  '/hop':
    'HTTP/1.1 200 OK\r\nConnection: X-Secret\r\nX-Secret: s\r\nKeep-Alive: timeout=1\r\nContent-Length: 2\r\n\r\nok',
  '/empty': 'HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n',
  '/not-modified': 'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n\r\n',
  '/odd-status': 'HTTP/1.1 599 Whatever\r\nContent-Length: 2\r\n\r\nno',
  '/large': `HTTP/1.1 200 OK\r\nContent-Length: ${3 * 1024 * 1024}\r\n\r\n${'x'.repeat(3 * 1024 * 1024)}`,
};

/** A backend that answers each request of a connection from RESPONSES, or as its path's behaviour says. */
function startRawBackend(): Promise<{ server: net.Server; port: number; seen: string[] }> {
  const seen: string[] = [];
  const server = net.createServer((socket) => {
    let pending = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const path = pending.slice(0, end).split(' ')[1] ?? '';
        pending = pending.slice(end + 4);
        seen.push(path);
        answer(socket, path);
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port, seen })),
  );
}

function answer(socket: net.Socket, path: string): void {
  const fixed = RESPONSES[path];
  if (fixed !== undefined) return void socket.write(fixed, 'latin1');
  switch (path) {
    case '/chunked':
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n');
      setTimeout(() => socket.write('6\r\nsecond\r\n0\r\n\r\n'), 30);
      return;
    case '/until-close':
      return void socket.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the backend closes');
    case '/truncated':
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789');
      setTimeout(() => socket.destroy(), 30);
      return;
    case '/chunk-cut':
      socket.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n');
      setTimeout(() => socket.destroy(), 30);
      return;
    case '/hold':
      return void socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789');
    default:
      // '/silent' and anything else: no answer.
      return;
  }
}

interface Seen {
  /** Everything the frontend sent, Latin-1, the Date headers' values masked (Node's and the agent's own). */
  readonly raw: string;
  /** Node's client read a whole response (false: the connection was cut, or no response came). */
  readonly complete: boolean;
}

const share = (token: string, envZId: string): PublishedShare => ({
  token,
  instance: `${token}-1`,
  envZId,
  accountId: 'alice',
  shareMode: 'public',
  backendMode: 'proxy',
});

let backend: Awaited<ReturnType<typeof startRawBackend>>;
let frontend: RunningFrontend;
let endpoint: TunnelEndpoint;
let tunnel: RunningTunnel;
let traffic: ShareTraffic;
let downPort: number;

beforeAll(async () => {
  backend = await startRawBackend();
  downPort = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const limits = { ...DEFAULT_TUNNEL_LIMITS, streamIdleMs: IDLE_MS };
  const logger = createLogger('frontend', { destination: new LogCapture() });
  const published = new Map([
    ['web', share('web', 'aaaaaaaaaaaa')],
    ['down', share('down', 'aaaaaaaaaaaa')],
    ['nobody', share('nobody', 'dddddddddddd')],
  ]);
  const directory: ShareDirectory = {
    lookup: (token) => published.get(token),
    authenticate: (token) =>
      Promise.resolve(token === TOKEN ? { envZId: 'aaaaaaaaaaaa', accountId: 'alice' } : undefined),
    onRevoked: () => () => undefined,
  };
  const locator = new LocalTunnels(limits.maxTunnelsPerEnvironment);
  traffic = new ShareTraffic();
  endpoint = new TunnelEndpoint({ directory, locator, limits, logger });
  frontend = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`http://${DOMAIN}:${port}`),
    domain: DOMAIN,
    shares: tunnelledShares({ directory, locator, limits, logger, traffic }),
    logger,
    onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
  });
  const agentShares = new Map<string, TunnelledShare>([
    ['web', { shareMode: 'public', backendUrl: new URL(`http://127.0.0.1:${backend.port}`) }],
    ['down', { shareMode: 'public', backendUrl: new URL(`http://127.0.0.1:${downPort}`) }],
  ]);
  tunnel = startTunnel({
    transport: tunnelTransport(),
    url: tunnelUrl(`http://127.0.0.1:${frontend.port}`, TUNNEL_PATH),
    token: TOKEN,
    logger: createLogger('agent', { level: 'silent' }),
    resolve: (t) => agentShares.get(t),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  await until(() => tunnel.connected && locator.find('aaaaaaaaaaaa') !== undefined, 'the tunnel');
});

afterAll(async () => {
  await tunnel?.close();
  endpoint?.close();
  await frontend?.close();
  await new Promise((resolve) => backend?.server.close(resolve));
});

function fastPathCount(): number {
  return frontend.metrics.fastPathRequests.values().reduce((sum, sample) => sum + sample.value, 0);
}

/**
 * One request on a new kept-alive connection; `slow` adds the header that sends it to Node's server.
 * `heard` is told of every read.
 */
function fetchRaw(token: string, path: string, slow: boolean, method = 'GET', heard?: () => void): Promise<Seen> {
  return new Promise((resolve) => {
    let raw = '';
    let settled = false;
    const done = (complete: boolean): void => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve({ raw: raw.replace(/\r\n(date): [^\r]*/gi, '\r\n$1: (masked)'), complete });
    };
    const req = http.request({
      method,
      path,
      headers: {
        host: `${token}.${DOMAIN}:${frontend.port}`,
        connection: 'keep-alive',
        ...(slow ? { 'keep-alive': 'timeout=5' } : {}),
      },
      createConnection: () => {
        const socket = net.connect(frontend.port, '127.0.0.1');
        socket.on('data', (chunk: Buffer) => {
          raw += chunk.toString('latin1');
          heard?.();
        });
        return socket;
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => done(res.complete));
      res.on('close', () => done(res.complete));
      res.on('error', () => done(false));
    });
    req.on('error', () => done(false));
    req.end();
  });
}

/** The same request on both paths: what each answered, and what the traffic counters and fast path counted. */
async function bothPaths(token: string, path: string, method = 'GET') {
  const run = async (slow: boolean) => {
    const before = trafficTotals(traffic.lastHour(token));
    const fastBefore = fastPathCount();
    const seen = await fetchRaw(token, path, slow, method);
    await until(() => trafficTotals(traffic.lastHour(token)).requests > before.requests, 'the traffic count');
    const after = trafficTotals(traffic.lastHour(token));
    return {
      seen,
      fast: fastPathCount() - fastBefore,
      counted: {
        requests: after.requests - before.requests,
        bytesOut: after.bytesOut - before.bytesOut,
        errors: after.errors - before.errors,
      },
    };
  };
  const fast = await run(false);
  const slow = await run(true);
  expect(fast.fast).toBe(1);
  expect(slow.fast).toBe(0);
  expect(fast.seen.raw).toBe(slow.seen.raw);
  expect(fast.seen.complete).toBe(slow.seen.complete);
  expect(fast.counted).toEqual(slow.counted);
  return fast;
}

describe('the fast path for a tunnelled share answers as the slow path does', () => {
  it.each([
    ['a body with a length, repeated headers and cookies', '/length'],
    ['the backend’s own Date', '/own-date'],
    ['the backend’s connection headers dropped', '/hop'],
    ['204 and 304 without a body', '/empty'],
    ['a 304', '/not-modified'],
    ['a status Node has no text for', '/odd-status'],
    ['a chunked body', '/chunked'],
    ['a body that runs to the backend’s close (chunked to the visitor)', '/until-close'],
    ['a 3 MiB body', '/large'],
  ])('%s', async (_what, path) => {
    const { seen, counted } = await bothPaths('web', path);
    expect(seen.complete).toBe(true);
    expect(counted.errors).toBe(path === '/odd-status' ? 1 : 0);
  });

  it('answers HEAD with the head only', async () => {
    const { seen } = await bothPaths('web', '/length', 'HEAD');
    expect(seen.raw).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*content-length: 5\r\n[^]*\r\n\r\n$/);
  });

  it('cuts the visitor’s connection when the body ends short, with a length or chunked', async () => {
    for (const path of ['/truncated', '/chunk-cut']) {
      const { seen, counted } = await bothPaths('web', path);
      expect(seen.complete).toBe(false);
      expect(seen.raw).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      expect(counted.errors).toBe(1);
    }
  });

  it('relays the agent’s 502 for a backend that is down, and answers 504 for a silent one', async () => {
    const down = await bothPaths('down', '/');
    expect(down.seen.raw).toMatch(/^HTTP\/1\.1 502 Bad Gateway\r\n/);
    expect(down.seen.raw).toContain('the share backend did not answer');
    const silent = await bothPaths('web', '/silent');
    expect(silent.seen.raw).toMatch(/^HTTP\/1\.1 504 Gateway Timeout\r\n[^]*Backend timeout/);
    expect(silent.seen.complete).toBe(true);
  });

  it('answers "Share offline" for a share whose agent holds no tunnel', async () => {
    const { seen } = await bothPaths('nobody', '/');
    expect(seen.raw).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\nretry-after: 5\r\n[^]*Share offline/);
    const head = await bothPaths('nobody', '/', 'HEAD');
    expect(head.seen.raw).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n[^]*\r\n\r\n$/);
  });

  it('cuts a response under way and answers 502 to one not begun when the agent goes, then "Share offline"', async () => {
    const counted = trafficTotals(traffic.lastHour('web')).requests;
    let heard = 0;
    const silentBefore = backend.seen.filter((path) => path === '/silent').length;
    const started = [true, false].map((slow) => fetchRaw('web', '/hold', slow, 'GET', () => heard++));
    const waiting = [true, false].map((slow) => fetchRaw('web', '/silent', slow));
    // Both held responses under way (their heads read), both silent requests at the backend.
    await until(() => heard >= 2, 'the held responses');
    await until(() => backend.seen.filter((path) => path === '/silent').length >= silentBefore + 2, 'the requests');
    await tunnel.close();
    const [heldSlow, heldFast] = await Promise.all(started);
    const [silentSlow, silentFast] = await Promise.all(waiting);
    expect(heldFast).toEqual(heldSlow);
    expect(heldFast?.complete).toBe(false);
    expect(heldFast?.raw).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n0123456789$/);
    expect(silentFast).toEqual(silentSlow);
    expect(silentFast?.raw).toMatch(/^HTTP\/1\.1 502 Bad Gateway\r\n[^]*Backend unreachable/);
    await until(() => trafficTotals(traffic.lastHour('web')).requests === counted + 4, 'the four counted');
    const { seen } = await bothPaths('web', '/length');
    expect(seen.raw).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n[^]*Share offline/);
  });
});
