import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAccessClient, type RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import { listenHandler, type RunningListener } from '../../agent/backends/listener.ts';
import { remoteAccessHandler } from '../../agent/tunnel/remote-access.ts';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import type { TransportChoice } from '../../agent/tunnel/transport.ts';
import { createLogger } from '../../lib/logger.ts';
import {
  ACCESS_PATH,
  DEFAULT_TUNNEL_LIMITS,
  TUNNEL_PATH,
  tunnelUrl,
  type TunnelTransport,
} from '../../lib/tunnel/protocol.ts';
import { LogCapture } from '../support/frontend.ts';
import { request } from '../support/raw-http.ts';
import {
  startTunnelFrontend,
  TWO_MACHINES,
  twoMachineDirectory,
  type TunnelFrontend,
} from '../support/tunnel-frontend.ts';
import { until } from '../support/until.ts';

/**
 * The tunnel's two transports and the rule between versions (docs/design.md, "The tunnel"): an
 * agent on `auto` dials `Upgrade: svc-tunnel-h2` and falls back to a WebSocket when the installation
 * does not complete it; an installation accepts both. "Older" is simulated by forcing the
 * WebSocket-only mode on either side (`SVC_TUNNEL_TRANSPORT=websocket` for an agent,
 * `tunnel.transports: [websocket]` for an installation, which then answers the direct upgrade 400
 * exactly as an installation without it does). Plus byte-exact 100 MiB both ways on the direct
 * transport, public and through a private access. Real frontends, agents and backend on loopback.
 */
const DOMAIN = 'transport.localhost';
const OWNER = TWO_MACHINES.owner;
const SECOND = TWO_MACHINES.second;
const BLOCK = createHash('sha256')
  .update('transport.test')
  .digest()
  .toString('hex')
  .repeat(16 * 1024);
const BLOCK_BYTES = Buffer.from(BLOCK);
const MIB_100 = 100;

const directory = twoMachineDirectory();

interface Installation extends TunnelFrontend {
  readonly logs: LogCapture;
}

let backend: http.Server;
let backendUrl: string;
const closers: (() => unknown)[] = [];

/** `count` blocks of 1 MiB, and the SHA-256 of them all. */
function expectedDigest(count: number): string {
  const hash = createHash('sha256');
  for (let i = 0; i < count; i++) hash.update(BLOCK_BYTES);
  return hash.digest('hex');
}

/** `/down?mib=N` streams N blocks; `/up` answers the SHA-256 and length of the body it received. */
async function startBackend(): Promise<void> {
  backend = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://backend');
    if (url.pathname === '/down') {
      let left = Number(url.searchParams.get('mib'));
      res.writeHead(200, { 'content-length': left * BLOCK_BYTES.length });
      const pump = () => {
        while (left-- > 0) if (!res.write(BLOCK_BYTES)) return void res.once('drain', pump);
        res.end();
      };
      return pump();
    }
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      hash.update(c);
      bytes += c.length;
    });
    req.on('end', () => res.end(JSON.stringify({ sha256: hash.digest('hex'), bytes })));
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
}

async function installation(transports: readonly TunnelTransport[]): Promise<Installation> {
  const logs = new LogCapture();
  const limits = { ...DEFAULT_TUNNEL_LIMITS, transports };
  const running = await startTunnelFrontend({
    domain: DOMAIN,
    directory,
    limits,
    logger: createLogger('frontend', { destination: logs }),
  });
  closers.push(
    () => running.frontend.close(),
    () => running.endpoint.close(),
  );
  return { ...running, logs };
}

const base = (at: Installation) => `http://127.0.0.1:${at.frontend.port}`;

/** An agent's tunnel to `at` on `transport`, connected; its log lines go to `logs`. */
async function agent(at: Installation, transport: TransportChoice, logs = new LogCapture()): Promise<RunningTunnel> {
  const shares = new Map<string, TunnelledShare>([
    ['pub1', { shareMode: 'public', backendUrl: new URL(backendUrl) }],
    ['priv1', { shareMode: 'private', backendUrl: new URL(backendUrl) }],
  ]);
  const running = startTunnel({
    url: tunnelUrl(base(at), TUNNEL_PATH),
    token: OWNER,
    transport,
    logger: createLogger('agent', { destination: logs }),
    resolve: (t) => shares.get(t),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  closers.push(() => running.close());
  await until(() => running.connected && at.locator.find('aaaaaaaaaaaa') !== undefined, 'the tunnel', 10_000, 25);
  return running;
}

/** A tunnel with no shares that `at` is expected to refuse; retries slowly (once in the test's time). */
function refusedAgent(at: Installation, token: string, transport: TransportChoice) {
  const logs = new LogCapture();
  const running = startTunnel({
    url: tunnelUrl(base(at), TUNNEL_PATH),
    token,
    transport,
    logger: createLogger('agent', { destination: logs }),
    resolve: () => undefined,
    backoff: { baseMs: 5_000, maxMs: 5_000 },
  });
  closers.push(() => running.close());
  return { running, logs };
}

/** The transport `at` logged for its newest tunnel. */
const lastTransport = (at: Installation): string | undefined =>
  [...at.logs.text.matchAll(/"transport":"(\w+)"[^\n]*tunnel: agent connected/g)].at(-1)?.[1];

const echo = async (at: Installation) =>
  (await request(at.frontend.port, '/echo', { host: `pub1.${DOMAIN}:${at.frontend.port}` })).status;

beforeAll(startBackend);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  backend.closeAllConnections();
  await new Promise((resolve) => backend.close(resolve));
});

describe('one version step either way', () => {
  it.each([
    ['an agent that knows only WebSockets connects to an installation that offers both', 'websocket', 'websocket'],
    ['an agent on auto uses the direct transport where it is offered', 'auto', 'direct'],
  ] as const)('%s', async (_title, choice, used) => {
    const newer = await installation(['direct', 'websocket']);
    const tunnel = await agent(newer, choice);
    expect(lastTransport(newer)).toBe(used);
    expect(await echo(newer)).toBe(200);
    await tunnel.close();
  });

  it('an agent on auto falls back to a WebSocket where the direct upgrade is answered 400', async () => {
    const older = await installation(['websocket']);
    const logs = new LogCapture();
    const tunnel = await agent(older, 'auto', logs);
    expect(lastTransport(older)).toBe('websocket');
    expect(logs.text).toContain('tunnel: no direct transport here; using a WebSocket');
    expect(logs.text).toContain('HTTP 400');
    expect(await echo(older)).toBe(200);
    await tunnel.close();
  });

  it('an agent forced to direct does not connect to an installation without it, and says why', async () => {
    const older = await installation(['websocket']);
    const { running, logs } = refusedAgent(older, OWNER, 'direct');
    await until(() => logs.text.includes('tunnel: the installation refused the connection'), 'the refusal', 10_000);
    expect(running.connected).toBe(false);
    expect(older.locator.connected()).toEqual([]);
    expect(logs.text).toContain('"status":400');
  });

  it('a wrong token on auto is a refusal, not a reason to try the WebSocket', async () => {
    const newer = await installation(['direct', 'websocket']);
    const { logs } = refusedAgent(newer, 'svcv_zzzzzzzzzzzz_not-a-valid-secret-0123456789abcdefghijklmno', 'auto');
    await until(() => logs.text.includes('refused this environment'), 'the refusal', 10_000);
    expect(logs.text).not.toContain('using a WebSocket');
    expect(newer.logs.lines.filter((l) => l.includes('tunnel refused'))).toHaveLength(1);
  });
});

/** A GET through `port` as `host`: the body's SHA-256 and length, and the status. */
function download(
  port: number,
  host: string,
  path: string,
): Promise<{ status: number; sha256: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false, headers: { host } }, (res) => {
        const hash = createHash('sha256');
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          hash.update(c);
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, sha256: hash.digest('hex'), bytes }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** A POST of `mib` blocks through `port` as `host`: what the backend says it received. */
function upload(port: number, host: string, mib: number): Promise<{ sha256: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: '/up', method: 'POST', agent: false, headers: { host } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(JSON.parse(text) as { sha256: string; bytes: number }));
      },
    );
    req.on('error', reject);
    let left = mib;
    const pump = () => {
      while (left-- > 0) if (!req.write(BLOCK_BYTES)) return void req.once('drain', pump);
      req.end();
    };
    pump();
  });
}

describe('100 MiB byte-exact on the direct transport', () => {
  let at: Installation;
  let access: RunningAccessClient;
  let listener: RunningListener;
  const want = { sha256: expectedDigest(MIB_100), bytes: MIB_100 * BLOCK_BYTES.length };

  beforeAll(async () => {
    at = await installation(['direct', 'websocket']);
    await agent(at, 'direct');
    access = startAccessClient({
      url: tunnelUrl(base(at), ACCESS_PATH),
      token: SECOND,
      transport: 'direct',
      logger: createLogger('access', { level: 'silent' }),
    });
    closers.push(() => access.close());
    await until(() => access.target() !== undefined, 'the access connection', 10_000, 25);
    listener = await listenHandler(remoteAccessHandler({ target: () => access.target(), shareToken: 'priv1' }), {
      host: '127.0.0.1',
      port: 0,
    });
    closers.push(() => listener.close());
  });

  it('down and up through a public share', async () => {
    const host = `pub1.${DOMAIN}:${at.frontend.port}`;
    expect(await download(at.frontend.port, host, `/down?mib=${MIB_100}`)).toEqual({ status: 200, ...want });
    expect(await upload(at.frontend.port, host, MIB_100)).toEqual(want);
    expect(lastTransport(at)).toBe('direct');
  }, 120_000);

  it('down and up through a private access', async () => {
    const host = `127.0.0.1:${listener.port}`;
    expect(await download(listener.port, host, `/down?mib=${MIB_100}`)).toEqual({ status: 200, ...want });
    expect(await upload(listener.port, host, MIB_100)).toEqual(want);
    expect(at.logs.text).toMatch(/"transport":"direct"[^\n]*access: agent connected/);
  }, 120_000);
});
