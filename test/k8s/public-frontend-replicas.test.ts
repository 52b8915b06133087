/**
 * Two `svc public-frontend` replicas as real processes on a real kube-apiserver (docs/design.md
 * "More than one frontend replica"): each with a `replicas:` section and a kubeconfig (KUBECONFIG) of a
 * user holding only the chart's Leases Role; `svc controller` with `public_frontend` (file store) whose
 * endpoint_url is replica A, so the `svc serve` agent enabled against it holds its tunnel on A only;
 * every visitor request goes to replica B. A is set up from the file, B from the SVC_POD_* variables
 * the chart fills from the downward API.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaseName } from '../../sidecar/tunnel/tunnel-leases.ts';
import { tempDir, writeYaml, type Process } from '../controller/harness.ts';
import {
  cliShare,
  cliUnshare,
  startControllerProcess,
  startEnabledAgent,
  startPublicFrontendProcess,
  type ControllerProcess,
} from '../support/installation.ts';
import { request, type Reply } from '../support/raw-http.ts';
import { spawnTunnelBackend, websocketRoundTrip } from '../support/tunnel-backend.ts';
import { until } from '../support/until.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { leasesOnlyUser, tunnelLeases } from './tunnel-leases.ts';

const NAMESPACE = 'svc-frontend';
const DOMAIN = 'replicas.localhost';
const CREDENTIAL = 'replica-process-credential-0123456789abcdefghij';
const LEASE_SECONDS = 2;

interface Replica {
  readonly name: string;
  readonly process: Process;
  readonly port: number;
  readonly peerPort: number;
}

let cp: ControlPlane;
let base: string;
let controller: ControllerProcess;
let a: Replica;
let b: Replica;
let agent: Process;
let backend: { child: ChildProcess; port: number };
let envZId: string;
const dirs = { controller: '', laptop: '' };

const host = (token: string, port: number) => `${token}.${DOMAIN}:${port}`;
/** Every request to B is bounded: an offline share must be answered, never hang. */
const toB = (token: string, path = '/echo'): Promise<Reply> =>
  request(b.port, path, { host: host(token, b.port), timeoutMs: 5_000 });
const readyz = async (replica: Replica) =>
  (await request(replica.port, '/readyz', { host: `127.0.0.1:${replica.port}`, timeoutMs: 5_000 })).status;
const answeredByB = (token: string, status: number) =>
  until(async () => {
    const reply = await toB(token);
    return reply.status === status ? reply : undefined;
  }, `B to answer ${status} for ${token}`);

async function startReplica(name: string, config: string, env: NodeJS.ProcessEnv): Promise<Replica> {
  const { process, port } = await startPublicFrontendProcess(config, env);
  const peer = await process.waitFor(
    new RegExp(
      `replicas: {2}pod ${name} in namespace ${NAMESPACE}; peer listener on port (\\d+) \\(advertised as 127\\.0\\.0\\.1:\\1\\)`,
    ),
  );
  return { name, process, port, peerPort: Number(peer[1]) };
}

beforeAll(async () => {
  cp = await startControlPlane();
  const frontendUser = await leasesOnlyUser(cp, NAMESPACE, 'svc-frontend');
  base = tempDir('svc-pf-replicas-');
  dirs.controller = join(base, 'controller');
  dirs.laptop = join(base, 'laptop');
  const credentialFile = join(base, 'credential');
  writeFileSync(credentialFile, `${CREDENTIAL}\n`, { mode: 0o600 });

  // The controller's port first (a plain controller), so the replicas can be pointed at it before
  // the controller with their address in public_frontend runs there.
  const plain = writeYaml(join(base, 'plain.yaml'), ['controller:', '  listen: 127.0.0.1:0']);
  controller = await startControllerProcess(plain, dirs.controller);
  await controller.process.stop();

  const frontendYaml = (name: string, replicas: string[]) =>
    writeYaml(join(base, `frontend-${name}.yaml`), [
      'frontend:',
      '  listen: 127.0.0.1:0',
      `  domain: ${DOMAIN}`,
      'controller:',
      `  url: ${controller.apiBase}`,
      `  credential_file: ${credentialFile}`,
      'replicas:',
      ...replicas,
      '  peer_listen: 127.0.0.1:0',
      `  lease_duration: ${LEASE_SECONDS}s`,
    ]);
  const kube = { KUBECONFIG: frontendUser.kubeconfigPath, KUBERNETES_SERVICE_HOST: '' };
  const noPod = { SVC_POD_NAMESPACE: '', SVC_POD_NAME: '', SVC_POD_IP: '' };
  a = await startReplica(
    'frontend-a',
    frontendYaml('a', [`  namespace: ${NAMESPACE}`, '  pod_name: frontend-a', '  pod_ip: 127.0.0.1']),
    { ...kube, ...noPod },
  );
  b = await startReplica('frontend-b', frontendYaml('b', []), {
    ...kube,
    SVC_POD_NAMESPACE: NAMESPACE,
    SVC_POD_NAME: 'frontend-b',
    SVC_POD_IP: '127.0.0.1',
  });
  backend = await spawnTunnelBackend();
}, 150_000);

afterAll(async () => {
  backend?.child.kill('SIGKILL');
  await agent?.stop();
  a?.process.child.kill('SIGKILL');
  await b?.process.stop();
  await controller?.process.stop();
  await cp?.stop();
  if (base) rmSync(base, { recursive: true, force: true });
});

describe('svc public-frontend replicas A and B on a real API server, the agent on A, visitors on B', () => {
  it('/readyz of both: 503 until the first registry snapshot arrived, 200 once it did', async () => {
    expect(await readyz(a)).toBe(503);
    expect(await readyz(b)).toBe(503);
    const config = writeYaml(join(base, 'controller.yaml'), [
      'controller:',
      '  listen: 127.0.0.1:0',
      'public_frontend:',
      `  domain: ${DOMAIN}`,
      `  endpoint_url: http://127.0.0.1:${a.port}`,
      '  credential_file: credential',
    ]);
    controller = await startControllerProcess(config, dirs.controller, `127.0.0.1:${controller.port}`);
    await until(async () => ((await readyz(a)) === 200 && (await readyz(b)) === 200) || undefined, 'both /readyz 200');
  });

  it('the agent tunnels to A only, and A announces it as a Lease naming its pod and peer address', async () => {
    ({ agent } = await startEnabledAgent(dirs.controller, dirs.laptop, controller.apiBase));
    ({ envZId } = JSON.parse(readFileSync(join(dirs.laptop, 'environment.json'), 'utf8')) as { envZId: string });
    const [lease, ...others] = await until(async () => {
      const items = await tunnelLeases(cp, NAMESPACE, envZId);
      return items.length > 0 ? items : undefined;
    }, "A's Lease");
    expect(others).toEqual([]);
    expect(lease?.metadata.name).toBe(leaseName(envZId, 'frontend-a'));
    expect(lease?.metadata.annotations).toMatchObject({
      'svc.dev/tunnel-env': envZId,
      'svc.dev/tunnel-peer': `127.0.0.1:${a.peerPort}`,
    });
    expect(lease?.spec).toMatchObject({ holderIdentity: 'frontend-a', leaseDurationSeconds: LEASE_SECONDS });
    expect(Date.parse(lease?.spec?.renewTime ?? '')).toBeGreaterThan(Date.now() - 2 * LEASE_SECONDS * 1000);
    await a.process.waitFor(new RegExp(`"envZId":"${envZId}".*tunnel: agent connected`));
    expect(b.process.output()).not.toContain('tunnel: agent connected');
  });

  it('serves a public share of the agent when the visitor asks B: status, body, the backend saw it', async () => {
    const entry = await cliShare(dirs.laptop, ['public', `http://127.0.0.1:${backend.port}`]);
    expect(entry.frontendEndpoints).toEqual([`http://${entry.token}.${DOMAIN}:${a.port}`]);
    const reply = await until(async () => {
      const r = await request(b.port, '/echo?via=b', {
        method: 'POST',
        host: host(entry.token, b.port),
        headers: { 'content-type': 'text/plain', 'svc-auth-email': 'forged@example.com' },
        body: 'hello from a visitor of B',
        timeoutMs: 5_000,
      });
      return r.status === 200 ? r : undefined;
    }, 'B to serve the share');
    const seen = JSON.parse(reply.body) as {
      method: string;
      url: string;
      headers: Record<string, string>;
      bodyLength: number;
    };
    expect(seen).toMatchObject({ method: 'POST', url: '/echo?via=b', bodyLength: 'hello from a visitor of B'.length });
    expect(seen.headers['x-forwarded-host']).toBe(host(entry.token, b.port));
    expect(Object.keys(seen.headers).filter((h) => h.startsWith('svc-'))).toEqual([]);
    expect(JSON.stringify(seen)).not.toContain(CREDENTIAL);
    expect(reply.headers['set-cookie']).toEqual(['backend-cookie=1; Path=/']);

    const echoed = await websocketRoundTrip(b.port, host(entry.token, b.port), 'through B');
    expect(echoed).toBe('echo:through B:');

    await cliUnshare(dirs.laptop, entry.token);
    expect((await answeredByB(entry.token, 404)).body).toContain('Share not found');
  });

  it('A killed (SIGKILL, its Lease left behind): B answers 503 "Share offline" once the Lease expired, never hangs', async () => {
    const entry = await cliShare(dirs.laptop, ['public', `http://127.0.0.1:${backend.port}`]);
    await answeredByB(entry.token, 200);
    a.process.child.kill('SIGKILL');
    await new Promise((resolve) => a.process.child.once('exit', resolve));
    const [left] = await tunnelLeases(cp, NAMESPACE, envZId);
    expect(left?.spec?.holderIdentity).toBe('frontend-a');
    const expiresAt = Date.parse(left?.spec?.renewTime ?? '') + LEASE_SECONDS * 1000;

    // A request not answered within toB's bound is recorded (not retried), and fails the test.
    const statuses: (number | string)[] = [];
    const offline = await until(
      async () => {
        const r = await toB(entry.token).catch((err: Error) => {
          statuses.push(err.message);
          return undefined;
        });
        if (r) statuses.push(r.status);
        return r?.status === 503 ? r : undefined;
      },
      'B to answer offline after the Lease expired',
      15_000,
    );
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt - 100);
    expect(offline.body).toContain('Share offline');
    expect(offline.headers['retry-after']).toBe('5');
    // Before expiry B still routes to A's dead peer address: a clean 502, not a hang (each request bounded).
    expect(statuses.filter((s) => s !== 502 && s !== 503)).toEqual([]);
    expect(await readyz(b)).toBe(200);
    expect(b.process.output()).not.toContain(CREDENTIAL);
  }, 40_000);
});
