/**
 * Two frontend replicas on a real kube-apiserver, the agent's tunnel connected to replica A only, and
 * every visitor request sent to replica B (docs/design.md, "More than one frontend replica"). A runs
 * in its own process so that it can be killed (SIGKILL: no cleanup, its Lease stays behind); B runs
 * in this process. Both read one share registry (the controller's file store) and write their Leases
 * as a user holding only the Role the chart grants the frontend.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import http2 from 'node:http2';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { newEnvironmentToken } from '../../controller/tokens.ts';
import { ShareRegistry } from '../../controller/share-registry.ts';
import type { Lease } from '../../lib/kube/lease.ts';
import { createLogger } from '../../lib/logger.ts';
import { TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import { LogCapture } from '../support/frontend.ts';
import { request, type Reply } from '../support/raw-http.ts';
import { startTunnelBackend, type TunnelTestBackend, websocketRoundTrip } from '../support/tunnel-backend.ts';
import { until } from '../support/until.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { leasesOnlyUser, tunnelLeases } from './tunnel-leases.ts';
import { startReplicaFrontend, type ReplicaOptions, type RunningReplica } from './replica-frontend.ts';

const ROOT = join(import.meta.dirname, '../..');
const NODE = join(ROOT, 'node_modules/.bin/node');
const NAMESPACE = 'svc-frontend';
const DOMAIN = 'replicas.localhost';
const ENV = 'laptopaaaaaa';
const CREDENTIAL = 'replica-credential-0123456789abcdefghijklmnop';
const LEASE_MS = 2_000;

let cp: ControlPlane;
let dataDir: string;
let backend: TunnelTestBackend;
let envToken: string;
let a: { child: ChildProcess; port: number; peerPort: number; stderr: string[] };
let b: RunningReplica;
let bLogs: LogCapture;
let options: Omit<ReplicaOptions, 'podName'>;
const tunnels: RunningTunnel[] = [];

const host = (token: string, port: number) => `${token}.${DOMAIN}:${port}`;
const leases = (): Promise<Lease[]> => tunnelLeases(cp, NAMESPACE, ENV);

/** A request to B that must be answered within 5 s: an offline share must never hang. */
const toB = (path: string, extra: Parameters<typeof request>[2] = {}): Promise<Reply> =>
  request(b.port, path, { host: host('pub1', b.port), timeoutMs: 5_000, ...extra });

function connectAgent(): RunningTunnel {
  const shares = new Map([
    ['pub1', { shareMode: 'public' as const, backendUrl: new URL(backend.url) }],
    ['priv1', { shareMode: 'private' as const, backendUrl: new URL(backend.url) }],
  ]);
  const tunnel = startTunnel({
    url: tunnelUrl(`http://127.0.0.1:${a.port}`, TUNNEL_PATH),
    token: envToken,
    logger: createLogger('agent', { level: 'silent' }),
    resolve: (t) => shares.get(t),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  tunnels.push(tunnel);
  return tunnel;
}

async function startReplicaA(): Promise<typeof a> {
  const child = spawn(NODE, [join(ROOT, 'test/k8s/replica-frontend.ts'), JSON.stringify({ ...options, podName: 'a' })]);
  const stderr: string[] = [];
  child.stderr.on('data', (c: Buffer) => stderr.push(c.toString()));
  const ports = await new Promise<{ port: number; peerPort: number }>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      const m = /ready (\{.*\})/.exec(c.toString());
      if (m) resolve(JSON.parse(m[1] as string) as { port: number; peerPort: number });
    });
    child.on('exit', (code) => reject(new Error(`replica A exited ${code}: ${stderr.join('')}`)));
  });
  return { child, stderr, ...ports };
}

beforeAll(async () => {
  cp = await startControlPlane();
  // Exactly the Role docs/design.md names for the frontend: Leases in its own namespace, nothing else.
  const frontendUser = await leasesOnlyUser(cp, NAMESPACE, 'svc-frontend');

  dataDir = await mkdtemp(join(tmpdir(), 'svc-replicas-'));
  const store = new ControllerFileStore(dataDir);
  const now = new Date().toISOString();
  await store.createAccount({ id: 'alice', email: 'alice@example.com', tokenHash: 'a'.repeat(64), createdAt: now });
  const { token, hash } = newEnvironmentToken(ENV);
  envToken = token;
  const env = {
    envZId: ENV,
    accountId: 'alice',
    description: 'laptop',
    host: 'laptop',
    tokenHash: hash,
    createdAt: now,
  };
  await store.createEnvironment(env);
  const registry = await ShareRegistry.open(store, [], createLogger('registry', { level: 'silent' }));
  await registry.register(env, { token: 'pub1', shareMode: 'public', backendMode: 'proxy' });
  await registry.register(env, { token: 'priv1', shareMode: 'private', backendMode: 'proxy' });

  backend = await startTunnelBackend();
  options = {
    dataDir,
    kubeconfigPath: frontendUser.kubeconfigPath,
    namespace: NAMESPACE,
    credential: CREDENTIAL,
    leaseDurationMs: LEASE_MS,
    domain: DOMAIN,
  };
  a = await startReplicaA();
  bLogs = new LogCapture();
  b = await startReplicaFrontend({ ...options, podName: 'b' }, bLogs);
  const tunnel = connectAgent();
  await until(() => tunnel.connected && b.locator.find(ENV) !== undefined, 'B to see the Lease of A');
}, 120_000);

afterAll(async () => {
  for (const tunnel of tunnels) await tunnel.close();
  a?.child.kill('SIGKILL');
  await b?.close();
  await backend?.close();
  await cp?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('a tunnel held by replica A, visitors on replica B', () => {
  it('A announces the tunnel as a Lease naming its pod and peer address', async () => {
    const [lease, ...others] = await leases();
    expect(others).toEqual([]);
    expect(lease?.metadata.name).toBe(`svc-tunnel-${ENV}-a`);
    expect(lease?.metadata.labels?.['svc.dev/tunnel-env']).toBe(ENV);
    expect(lease?.metadata.annotations).toMatchObject({
      'svc.dev/tunnel-env': ENV,
      'svc.dev/tunnel-peer': `127.0.0.1:${a.peerPort}`,
    });
    expect(lease?.spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: LEASE_MS / 1000 });
    expect(b.locator.connected()).toEqual([]);
  });

  it('serves a request through B: status, body, and no svc header of any hop reaches the backend', async () => {
    const body = 'x'.repeat(200_000);
    const seenBefore = backend.seen.length;
    const reply = await toB('/echo?q=1', {
      method: 'POST',
      headers: { 'svc-auth-email': 'forged@example.com', 'svc-tunnel-env': 'other', 'content-type': 'text/plain' },
      body,
    });
    expect(reply.status).toBe(200);
    const seen = JSON.parse(reply.body) as { url: string; headers: Record<string, string>; bodyLength: number };
    expect(seen.url).toBe('/echo?q=1');
    expect(seen.bodyLength).toBe(body.length);
    expect(seen.headers['x-forwarded-host']).toBe(host('pub1', b.port));
    expect(Object.keys(seen.headers).filter((h) => h.replace(/_/g, '-').startsWith('svc-'))).toEqual([]);
    expect(JSON.stringify(backend.seen.slice(seenBefore))).not.toContain(CREDENTIAL);
    expect(reply.headers['set-cookie']).toEqual(['backend-cookie=1; Path=/']);
  });

  it('carries a websocket through B', async () => {
    const echoed = await websocketRoundTrip(b.port, host('pub1', b.port), 'hello');
    expect(echoed).toBe('echo:hello:');
  });

  it('streams a 20 MiB response through B', async () => {
    const received = await new Promise<number>((resolve, reject) => {
      http
        .get(
          { host: '127.0.0.1', port: b.port, path: '/big?mb=20', headers: { host: host('pub1', b.port) } },
          (res) => {
            let bytes = 0;
            res.on('data', (c: Buffer) => (bytes += c.length));
            res.on('end', () => resolve(bytes));
            res.on('error', reject);
          },
        )
        .on('error', reject);
    });
    expect(received).toBe(20 * 1024 * 1024);
  });
});

describe('the peer listeners', () => {
  const peerRequest = (headers: Record<string, string>, peerPort = b.peerPort, token = 'pub1') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${peerPort}`);
      session.on('error', reject);
      const stream = session.request({ ':path': '/echo', ':authority': host(token, b.port), ...headers });
      let status = 0;
      let body = '';
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (c: Buffer) => (body += c.toString()));
      stream.on('end', () => {
        session.close();
        resolve({ status, body });
      });
      stream.on('error', reject);
      stream.end();
    });

  it('B refuses a wrong or missing credential with 401 and logs it without the credential', async () => {
    const wrong = 'not-the-replica-credential-0123456789abcdef';
    const base = { 'svc-tunnel-env': ENV, 'svc-tunnel-route': 'public' };
    expect((await peerRequest({ ...base, 'svc-peer-credential': wrong })).status).toBe(401);
    expect((await peerRequest(base)).status).toBe(401);
    expect(bLogs.text).toContain('peer stream refused: missing or wrong replica credential');
    expect(bLogs.text).not.toContain(wrong);
    expect(bLogs.text).not.toContain(CREDENTIAL);
  });

  it("keep the route the first replica decided: a private share only on 'access' streams", async () => {
    const peer = (route: string, token: string) =>
      peerRequest(
        { 'svc-tunnel-env': ENV, 'svc-tunnel-route': route, 'svc-peer-credential': CREDENTIAL },
        a.peerPort,
        token,
      );
    expect((await peer('access', 'priv1')).status).toBe(200);
    expect((await peer('public', 'priv1')).status).toBe(404);
    expect((await peer('public', 'pub1')).status).toBe(200);
    expect((await peer('sideways', 'pub1')).status).toBe(400);
  });

  it('B forwards only into a tunnel it holds itself: never on to a third replica (503 here)', async () => {
    const reply = await peerRequest({
      'svc-tunnel-env': ENV,
      'svc-tunnel-route': 'public',
      'svc-peer-credential': CREDENTIAL,
    });
    expect(reply.status).toBe(503);
    expect(reply.body).toContain('share offline');
  });
});

describe("B's own Leases", () => {
  it('end in the state of the last attach or detach, however quickly they follow each other', async () => {
    const env = 'quickbbbbbbb';
    const held = {
      id: 'held',
      openStreams: 0,
      open: () => {
        throw new Error('no stream is opened in this test');
      },
      close: () => undefined,
    };
    const ownLeases = () => tunnelLeases(cp, NAMESPACE, env);
    for (let i = 0; i < 20; i++) {
      expect(b.locator.attach(env, held)).toBe(true);
      b.locator.detach(env, held);
    }
    b.locator.attach(env, held);
    const [lease] = await until(async () => {
      const items = await ownLeases();
      return items.length === 1 ? items : undefined;
    }, "B's Lease");
    expect(lease?.spec?.holderIdentity).toBe('b');
    expect(lease?.metadata.annotations?.['svc.dev/tunnel-peer']).toBe(`127.0.0.1:${b.peerPort}`);
    const renewed = lease?.spec?.renewTime;
    await until(async () => ((await ownLeases())[0]?.spec?.renewTime !== renewed ? true : undefined), 'a renewal');
    b.locator.detach(env, held);
    await until(
      async () => ((await ownLeases()).length === 0 ? true : undefined),
      'the Lease deleted on the last detach',
    );
  });
});

describe('failures', () => {
  it('agent disconnects: the Lease is deleted and B answers "Share offline"', async () => {
    await tunnels[0]?.close();
    await until(async () => (await leases()).length === 0, 'A to delete its Lease');
    const reply = await until(async () => {
      const r = await toB('/echo');
      return r.status === 503 ? r : undefined;
    }, 'B to answer offline');
    expect(reply.body).toContain('Share offline');
    expect(reply.headers['retry-after']).toBe('5');
  });

  it('replica A crashes: B answers offline once the Lease expired (never hangs), and collects the Lease', async () => {
    const tunnel = connectAgent();
    await until(async () => tunnel.connected && (await leases()).length === 1, 'the Lease of the reconnected agent');
    await until(async () => ((await toB('/echo')).status === 200 ? true : undefined), 'B to serve through A again');

    a.child.kill('SIGKILL');
    await new Promise((resolve) => a.child.once('exit', resolve));
    const [left] = await leases();
    expect(left?.spec?.holderIdentity).toBe('a');
    const expiresAt = Date.parse(left?.spec?.renewTime ?? '') + LEASE_MS;

    // A request not answered within toB's bound is recorded (not retried), and fails the test.
    const statuses: (number | string)[] = [];
    const offline = await until(async () => {
      const r = await toB('/echo').catch((err: Error) => {
        statuses.push(err.message);
        return undefined;
      });
      if (r) statuses.push(r.status);
      return r?.status === 503 ? r : undefined;
    }, 'B to answer offline after the Lease expired');
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 100);
    expect(offline.body).toContain('Share offline');
    // Before expiry B still routes to A's dead address: a clean 502, not a hang (toB bounds each one).
    expect(statuses.filter((s) => s !== 502 && s !== 503)).toEqual([]);

    await until(async () => ((await leases()).length === 0 ? true : undefined), 'B to collect the dead Lease', 20_000);
    expect(bLogs.text).toContain('removed the expired tunnel Lease of a gone replica');
  }, 40_000);
});
