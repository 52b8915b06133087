/**
 * svc on a real one-node cluster (cluster.ts): the image built from the project's Dockerfile
 * (build-image.sh), the chart installed with `helm install`, and every pod run by the kubelet on
 * containerd + runc. Nothing here is started by hand the way a pod would be: probes, Secrets,
 * Services, DNS, RBAC and leader election are the cluster's own.
 *
 * The tests run in order against one installation (a cluster start is the expensive part).
 * Visitors come in through `kubectl port-forward`-style tunnels on loopback (Chromium maps the share
 * and auth hosts to them); the development OIDC provider listens on the node's host-side address,
 * where both the browser and the share pods reach it.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { MEDIA_TYPE } from '../../../lib/api-client.ts';
import { startDevIdentityProvider, type DevIdentityProvider } from '../../../devidp/provider.ts';
import { devLogin, expectLoginStartedOn, launchBrowser, navigations } from '../../support/browser.ts';
import { locateHelm } from '../binaries.ts';
import { CHART, RELEASE, RELEASE_NS, helmRunner, run, type HelmRunner, type Obj } from '../helm-runner.ts';
import { ApiError, rawRequest, serverSideApply } from '../raw.ts';
import { svcCli, type Process } from '../../controller/harness.ts';
import { request } from '../../support/raw-http.ts';
import { startTunnelBackend, type TunnelTestBackend } from '../../support/tunnel-backend.ts';
import { startKubeCluster, type AuditEvent, type Cluster } from './cluster.ts';
import { buildImages, SVC_IMAGE, type BuiltImages } from './images.ts';
import { describePods, execIn, forwardPort, listPods, podLog, readyPods, until, type Forward } from './kube.ts';
import { configShape, proxiedCount, startOutsideAgent } from './public-frontend.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const SVC = join(ROOT, 'bin', 'svc.js');
const DOMAIN = 'svc.localhost';
const TEAM = 'team-a';
const BACKENDS = 'backends';
const ENV_NS = 'env-a';
const IMAGE = `${SVC_IMAGE.repository}:${SVC_IMAGE.tag}`;
/** The public frontend's Service as the host reaches it: a fixed NodePort on the node's address. */
const PF_NODE_PORT = 31080;
/** Its endpoint host (agents' tunnels, OAuth callbacks); under the cookie domain, as OAuth requires. */
const PF_HOST = `pf.${DOMAIN}`;
const PF_ENDPOINT = `http://${PF_HOST}:${PF_NODE_PORT}`;

/** An HTTP server echoing the request (path, headers) as JSON: the share backends' pod. */
const ECHO_SERVER = `require('node:http').createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ url: req.url, headers: req.headers, pod: process.env.HOSTNAME }));
}).listen(8080);`;

let images: BuiltImages;
let cluster: Cluster;
let idp: DevIdentityProvider;
let work: string;
let runner: HelmRunner;
let authForward: Forward;
let shareForward: Forward;
let publicPort = 0;
let outsideAgent: Process | undefined;
let tunnelBackend: TunnelTestBackend | undefined;

const kc = () => cluster.kubeConfig;
const selector = (component: string): string =>
  `app.kubernetes.io/instance=${RELEASE},app.kubernetes.io/component=${component}`;

async function get(path: string): Promise<Obj> {
  return (await rawRequest(kc(), path)) as Obj;
}
async function getOrNone(path: string): Promise<Obj | undefined> {
  try {
    return await get(path);
  } catch (err) {
    if (err instanceof ApiError && err.code === 404) return undefined;
    throw err;
  }
}
async function apply(obj: Record<string, unknown>): Promise<void> {
  await serverSideApply(kc(), obj, { fieldManager: 'svc-e2e' });
}
const helm = (...args: string[]) => runner.helm('--kubeconfig', cluster.kubeconfigPath, ...args);
/** `helm upgrade --reuse-values --wait` with each `key=value` given as a `--set`. */
const helmUpgrade = (...values: string[]) =>
  helm(
    'upgrade',
    RELEASE,
    CHART,
    '-n',
    RELEASE_NS,
    '--reuse-values',
    ...values.flatMap((v) => ['--set', v]),
    '--wait',
    '--timeout',
    '5m',
  );

/** A hardened pod spec running the svc image with `node -e <script>` (image built by this suite). */
function nodePod(script: string, port?: number): Record<string, unknown> {
  return {
    securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    containers: [
      {
        name: 'main',
        image: IMAGE,
        imagePullPolicy: 'Never',
        command: ['node', '-e', script],
        securityContext: {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        },
        ...(port
          ? { ports: [{ containerPort: port }], readinessProbe: { tcpSocket: { port }, periodSeconds: 2 } }
          : {}),
      },
    ],
  };
}

/** `node -e` in the toolbox pod: a fetch from inside the cluster (cluster DNS, kube-proxy). */
async function fetchInCluster(
  url: string,
  init: { headers?: Record<string, string> } = {},
): Promise<{
  status: number;
  location: string | null;
  body: string;
}> {
  const [toolbox] = await readyPods(kc(), TEAM, 'app=toolbox');
  // node:http rather than fetch: fetch drops a Host header, and the sidecar routes by host.
  const script = `require('node:http')
    .request(${JSON.stringify(url)}, { headers: ${JSON.stringify(init.headers ?? {})} }, (r) => {
      let body = '';
      r.on('data', (d) => (body += d));
      r.on('end', () => console.log(JSON.stringify({ status: r.statusCode, location: r.headers.location ?? null, body })));
    })
    .on('error', (e) => console.log(JSON.stringify({ status: 0, location: null, body: String(e) })))
    .end();`;
  const out = await execIn(kc(), TEAM, toolbox!.metadata.name, 'main', ['node', '-e', script]);
  if (out.code !== 0) throw new Error(`in-cluster fetch failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as { status: number; location: string | null; body: string };
}

async function shareStatus(ns: string, name: string): Promise<Record<string, unknown> | undefined> {
  return (await getOrNone(`/apis/svc.dev/v1alpha1/namespaces/${ns}/shares/${name}`))?.status as
    Record<string, unknown> | undefined;
}

beforeAll(async () => {
  images = await buildImages();
  console.info(images.log.trim());
  cluster = await startKubeCluster();
  const importStart = Date.now();
  await cluster.importImages([images.svc, images.pause]);
  console.info(`[cluster] images imported into containerd in ${Date.now() - importStart} ms`);

  work = await mkdtemp(join(tmpdir(), 'svc-e2e-'));
  runner = helmRunner(locateHelm(), work);

  // Visitors' entry: one tunnel per host, on the same port of two loopback addresses.
  authForward = await forwardPort(kc(), RELEASE_NS, selector('auth'), 8080, '127.0.0.2');
  publicPort = authForward.port;
  shareForward = await forwardPort(kc(), TEAM, 'svc.dev/share=live', 8080, '127.0.0.3', publicPort);

  idp = await startDevIdentityProvider({
    listenAddress: cluster.node.hostIp,
    issuerHost: cluster.node.hostIp,
    redirectUris: [`http://auth.${DOMAIN}:${publicPort}/dev/auth/callback`, `${PF_ENDPOINT}/dev/auth/callback`],
  });

  const identityFile = join(work, 'identity.json');
  const created = await run(NODE, [SVC, 'admin', 'create', 'identity', 'cluster', '--output', identityFile]);
  if (created.code !== 0) throw new Error(created.stderr);

  const values = {
    image: { ...SVC_IMAGE, pullPolicy: 'Never' },
    shareDomain: DOMAIN,
    frontend: {
      oauth: {
        endpoint_url: `http://auth.${DOMAIN}:${publicPort}`,
        cookie_name: 'svc-auth-session',
        cookie_domain: DOMAIN,
        session_lifetime: '6h',
        intermediate_lifetime: '5m',
        signing_key: 'cluster-e2e-signing-key-0123456789-abcdef',
        encryption_key: 'cluster-e2e-encryption-key-0123',
        providers: [
          {
            name: 'dev',
            type: 'oidc',
            client_id: idp.clientId,
            client_secret: idp.clientSecret,
            scopes: ['openid', 'email', 'profile'],
            issuer: idp.issuer.href.replace(/\/$/, ''),
            supports_pkce: true,
            // The issuer is plain http on the node's host-side address (not loopback for the pods).
            insecure_allow_http: true,
          },
        ],
      },
    },
    controller: { enabled: true },
  };
  await writeFile(join(work, 'values.yaml'), toYaml(values));
  for (const ns of [TEAM, BACKENDS, ENV_NS])
    await apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
}, 1_200_000);

afterAll(async () => {
  await outsideAgent?.stop();
  await tunnelBackend?.close();
  await authForward?.close();
  await shareForward?.close();
  await idp?.close();
  await cluster?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe('svc on a real one-node cluster', () => {
  it('runs the image built from the Dockerfile and records its size', async () => {
    const listing = await cluster.images();
    expect(listing).toMatch(/docker\.io\/library\/svc:test\s/);
    const size = /docker\.io\/library\/svc:test\s.*?\s([\d.]+ [KMG]iB)\s/.exec(listing)?.[1];
    console.info(`[cluster] svc image size (uncompressed, as containerd holds it): ${size}`);
    expect(size).toBeDefined();
  });

  it('helm install: operator, controller and auth endpoint become Ready through their probes, non-root, read-only root', async () => {
    const out = await helm(
      'install',
      RELEASE,
      CHART,
      '-n',
      RELEASE_NS,
      '--create-namespace',
      '-f',
      join(work, 'values.yaml'),
      '--set-file',
      `controller.identity.json=${join(work, 'identity.json')}`,
      '--wait',
      '--timeout',
      '5m',
    );
    expect(out.code, out.stderr + (await describePods(kc(), RELEASE_NS))).toBe(0);

    for (const component of ['operator', 'auth', 'controller']) {
      const [pod] = await readyPods(kc(), RELEASE_NS, selector(component));
      const container = pod!.spec.containers[0]!.name;
      const id = await execIn(kc(), RELEASE_NS, pod!.metadata.name, container, ['id', '-u']);
      expect(id.stdout.trim(), `${component} uid`).toBe('1000');
      const write = await execIn(kc(), RELEASE_NS, pod!.metadata.name, container, ['touch', '/app/written']);
      expect(write.code, `${component}: writing the root filesystem`).not.toBe(0);
      expect(write.stderr).toContain('Read-only file system');
      const tmp = await execIn(kc(), RELEASE_NS, pod!.metadata.name, container, ['touch', '/tmp/written']);
      expect(tmp.code, `${component}: /tmp is writable (emptyDir)`).toBe(0);
    }
  }, 600_000);

  it('an OAuth Share runs as a sidecar-only pod; its backend is a pod in another namespace reached by DNS name; Chromium logs in', async () => {
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'echo', namespace: BACKENDS },
      spec: {
        selector: { matchLabels: { app: 'echo' } },
        template: { metadata: { labels: { app: 'echo' } }, spec: nodePod(ECHO_SERVER, 8080) },
      },
    });
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'echo', namespace: BACKENDS },
      spec: { selector: { app: 'echo' }, ports: [{ port: 8080, targetPort: 8080 }] },
    });
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'toolbox', namespace: TEAM },
      spec: {
        selector: { matchLabels: { app: 'toolbox' } },
        template: {
          metadata: { labels: { app: 'toolbox' } },
          spec: nodePod('setInterval(() => {}, 1 << 30)'),
        },
      },
    });
    await apply({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Share',
      metadata: { name: 'live', namespace: TEAM },
      spec: {
        backendMode: 'proxy',
        target: `http://echo.${BACKENDS}.svc.cluster.local:8080`,
        token: 'live',
        oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'] },
      },
    });
    await readyPods(kc(), BACKENDS, 'app=echo');
    const [sharePod] = await readyPods(kc(), TEAM, 'svc.dev/share=live');
    expect(sharePod!.spec.containers.map((c) => c.name)).toEqual(['frontend']);

    // Through the share's Service (cluster DNS + kube-proxy): no session yet → the login redirect.
    // A Ready pod is not yet a programmed Service: until kube-proxy has written the Service's rules
    // the ClusterIP is routed nowhere (ENETUNREACH), so wait for a connection, then judge the answer.
    const viaService = await until('the share Service to accept connections', async () => {
      const r = await fetchInCluster(`http://svc-share-live.${TEAM}.svc.cluster.local/`, {
        headers: { host: `live.${DOMAIN}:${publicPort}` },
      });
      return r.status !== 0 ? r : undefined;
    });
    expect(viaService.status, viaService.body).toBe(302);
    // To the auth endpoint's start path, which sets the login cookie and goes on to the provider.
    expect(viaService.location).toMatch(/\/auth\/start\?ticket=live%7E/);

    // The auth endpoint learns the share from its config Secret, which the kubelet brings into the
    // pod within its sync period: the callback can only succeed once the auth pod has reloaded it.
    await until('the auth endpoint lists the OAuth share', async () => {
      const [authPod] = await listPods(kc(), RELEASE_NS, selector('auth'));
      if (!authPod) return false;
      const log = await podLog(kc(), RELEASE_NS, authPod.metadata.name, 'frontend');
      return /"shares":[1-9]/.test(log);
    });
    const browser = await launchBrowser([
      `--host-resolver-rules=MAP auth.${DOMAIN} 127.0.0.2, MAP live.${DOMAIN} 127.0.0.3`,
    ]);
    try {
      const page = await browser.context.newPage();
      const hops = navigations(page);
      await page.goto(`http://live.${DOMAIN}:${publicPort}/hello?x=1`);
      expect(page.url()).toContain(idp.issuer.host);
      // The share pod sent the browser to the auth endpoint's host, where the login began.
      await expectLoginStartedOn(page, hops, new URL(`http://auth.${DOMAIN}:${publicPort}`), 'dev');
      await devLogin(page, 'Alice@Example.com');
      await page.waitForURL(`http://live.${DOMAIN}:${publicPort}/hello?x=1`);
      const seen = JSON.parse((await page.textContent('body')) ?? '{}') as {
        url: string;
        pod: string;
        headers: Record<string, string>;
      };
      expect(seen.url).toBe('/hello?x=1');
      expect(seen.pod).toMatch(/^echo-/);
      expect(seen.headers['svc-auth-provider']).toBe('dev');
      expect(seen.headers['svc-auth-email']?.toLowerCase()).toBe('alice@example.com');
      expect(seen.headers['svc-auth-expires']).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(seen.headers.cookie ?? '').not.toContain('svc-auth-session');
    } finally {
      await browser.close();
    }
  }, 600_000);

  it('an Access pod reaches a private share through its Service', async () => {
    await apply({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Share',
      metadata: { name: 'plain', namespace: TEAM },
      spec: { shareMode: 'private', backendMode: 'proxy', target: `http://echo.${BACKENDS}.svc:8080`, token: 'plain' },
    });
    await apply({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Access',
      metadata: { name: 'reach-plain', namespace: TEAM },
      spec: { shareToken: 'plain', bindPort: 18080 },
    });
    await readyPods(kc(), TEAM, 'svc.dev/share=plain');
    await readyPods(kc(), TEAM, 'svc.dev/access=reach-plain');
    const res = await until('the access to answer', async () => {
      const r = await fetchInCluster(`http://svc-access-reach-plain.${TEAM}.svc.cluster.local:18080/through-access`, {
        headers: { 'svc-auth-email': 'spoofed@evil.test' },
      });
      return r.status === 200 ? r : undefined;
    });
    const seen = JSON.parse(res.body) as { url: string; pod: string; headers: Record<string, string> };
    expect(seen.url).toBe('/through-access');
    expect(seen.pod).toMatch(/^echo-/);
    expect(seen.headers['svc-auth-email']).toBeUndefined();
  }, 300_000);

  it('an AgentEnrollment: the environment agent pod connects to the controller pod; /api/v1/agent/share becomes a running share pod', async () => {
    const account = await run(
      NODE,
      [SVC, 'admin', 'create', 'account', 'e2e@example.com', '--store', 'kubernetes', '--namespace', RELEASE_NS],
      { KUBECONFIG: cluster.kubeconfigPath },
    );
    expect(account.code, account.stderr).toBe(0);
    const token = account.stdout.trim();
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'account', namespace: ENV_NS },
      stringData: { token },
    });
    await apply({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'AgentEnrollment',
      metadata: { name: 'env', namespace: ENV_NS },
      spec: {
        controllerUrl: `http://svc-controller.${RELEASE_NS}.svc.cluster.local`,
        accountTokenSecretRef: { name: 'account', key: 'token' },
        description: 'e2e environment',
      },
    });
    const envZId = await until('the enrollment', async () => {
      const e = await get(`/apis/svc.dev/v1alpha1/namespaces/${ENV_NS}/agentenrollments/env`);
      const status = e.status as { enrolled?: boolean; envZId?: string } | undefined;
      return status?.enrolled && status.envZId ? status.envZId : undefined;
    });
    await readyPods(kc(), ENV_NS, 'svc.dev/agent-enrollment=env');

    const api = await forwardPort(kc(), RELEASE_NS, selector('controller'), 18080);
    try {
      const res = await until('the controller to reach the environment agent', async () => {
        const r = await fetch(`http://127.0.0.1:${api.port}/api/v1/agent/share`, {
          method: 'POST',
          headers: { 'content-type': MEDIA_TYPE, 'x-token': token },
          body: JSON.stringify({
            envZId,
            shareMode: 'public',
            backendMode: 'proxy',
            target: `http://echo.${BACKENDS}.svc.cluster.local:8080`,
          }),
        });
        const body = (await r.json()) as { token?: string; frontendEndpoints?: string[] };
        return r.ok ? body : undefined;
      });
      expect(res.token).toMatch(/^[a-z0-9-]+$/);
      expect(res.frontendEndpoints?.[0]).toContain(`${res.token}.${DOMAIN}`);
      const share = await until('the Share object the agent created', async () => {
        const list = (await get(`/apis/svc.dev/v1alpha1/namespaces/${ENV_NS}/shares`)) as unknown as { items: Obj[] };
        return list.items.find((s) => (s.status as { token?: string } | undefined)?.token === res.token);
      });
      const [pod] = await readyPods(kc(), ENV_NS, `svc.dev/share=${share.metadata!.name}`);
      expect(pod!.spec.containers.map((c) => c.name)).toContain('agent');
    } finally {
      await api.close();
    }
  }, 400_000);

  it('deleting a Share removes its pods (garbage collection of the owned Deployment)', async () => {
    await rawRequest(kc(), `/apis/svc.dev/v1alpha1/namespaces/${TEAM}/shares/plain`, { method: 'DELETE' });
    await until('the share pods and Deployment to go', async () => {
      const pods = await listPods(kc(), TEAM, 'svc.dev/share=plain');
      const deployment = await getOrNone(`/apis/apps/v1/namespaces/${TEAM}/deployments/svc-share-plain`);
      return pods.length === 0 && !deployment;
    });
  }, 180_000);

  it('the operator pod deleted mid-reconcile: its replacement takes the Lease and finishes the Share', async () => {
    const [old] = await readyPods(kc(), RELEASE_NS, selector('operator'));
    const lease = `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases/svc-operator`;
    const before = ((await get(lease)).spec as { holderIdentity?: string }).holderIdentity;
    expect(before).toBeTruthy();
    await apply({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Share',
      metadata: { name: 'resilient', namespace: TEAM },
      spec: { backendMode: 'proxy', target: `http://echo.${BACKENDS}.svc:8080`, token: 'resilient' },
    });
    await rawRequest(kc(), `/api/v1/namespaces/${RELEASE_NS}/pods/${old!.metadata.name}`, { method: 'DELETE' });
    const [replacement] = await until('a new operator pod', async () => {
      const pods = await readyPods(kc(), RELEASE_NS, selector('operator'));
      return pods[0]?.metadata.uid !== old!.metadata.uid ? pods : undefined;
    });
    await until('the new leader', async () => {
      const holder = ((await get(lease)).spec as { holderIdentity?: string }).holderIdentity;
      return holder && holder !== before ? holder : undefined;
    });
    await readyPods(kc(), TEAM, 'svc.dev/share=resilient');
    const status = await shareStatus(TEAM, 'resilient');
    expect((status?.conditions as { type: string; status: string }[]).find((c) => c.type === 'Ready')?.status).toBe(
      'True',
    );
    expect(replacement!.metadata.name).not.toBe(old!.metadata.name);
  }, 400_000);

  it('helm upgrade with a changed value rolls the pods', async () => {
    const [old] = await readyPods(kc(), RELEASE_NS, selector('auth'));
    const out = await helmUpgrade('auth.podAnnotations.svc\\.dev/rolled=yes');
    expect(out.code, out.stderr).toBe(0);
    const [rolled] = await readyPods(kc(), RELEASE_NS, selector('auth'));
    expect(rolled!.metadata.uid).not.toBe(old!.metadata.uid);
    await until(
      'the old pod to go',
      async () => !(await getOrNone(`/api/v1/namespaces/${RELEASE_NS}/pods/${old!.metadata.name}`)),
    );
  }, 400_000);

  it('helm upgrade with publicFrontend: both replicas Ready through /readyz, non-root, read-only root, config written by the init container', async () => {
    const out = await helmUpgrade(
      'publicFrontend.enabled=true',
      'publicFrontend.replicas=2',
      `publicFrontend.endpointUrl=${PF_ENDPOINT}`,
      'publicFrontend.service.type=NodePort',
      `publicFrontend.service.nodePort=${PF_NODE_PORT}`,
      'controller.service.type=NodePort',
    );
    expect(out.code, out.stderr + (await describePods(kc(), RELEASE_NS))).toBe(0);
    const pods = await readyPods(kc(), RELEASE_NS, selector('public-frontend'), 2);
    for (const pod of pods) {
      const name = pod.metadata.name;
      expect(pod.spec.containers[0]!.readinessProbe?.httpGet?.path).toBe('/readyz');
      // Ready means the kubelet's probe saw /readyz 200, which needs the controller pod's registry snapshot.
      const readyz = await execIn(kc(), RELEASE_NS, name, 'public-frontend', [
        'node',
        '-e',
        "fetch('http://127.0.0.1:8080/readyz').then((r) => console.log(r.status))",
      ]);
      expect(readyz.stdout.trim(), `${name} /readyz`).toBe('200');
      const id = await execIn(kc(), RELEASE_NS, name, 'public-frontend', ['id', '-u']);
      expect(id.stdout.trim(), `${name} uid`).toBe('1000');
      const write = await execIn(kc(), RELEASE_NS, name, 'public-frontend', ['touch', '/app/written']);
      expect(write.stderr, `${name}: writing the root filesystem`).toContain('Read-only file system');
      const tmp = await execIn(kc(), RELEASE_NS, name, 'public-frontend', ['touch', '/tmp/written']);
      expect(tmp.code, `${name}: /tmp is writable (emptyDir)`).toBe(0);

      const init = pod.status?.initContainerStatuses?.find((c) => c.name === 'config');
      expect(init?.state?.terminated?.exitCode, `${name}: init container`).toBe(0);
      expect(await configShape(kc(), RELEASE_NS, name)).toEqual({
        mode: '440',
        keys: ['controller', 'frontend', 'oauth', 'replicas'],
      });
    }
  }, 600_000);

  it('an agent outside the cluster publishes through the public frontend Service: both replicas answer, one through the other; the Lease names the holder; replicas write only Leases', async () => {
    const nodeIp = cluster.node.nodeIp;
    const controllerService = await get(`/api/v1/namespaces/${RELEASE_NS}/services/${RELEASE}-controller`);
    const apiPort = (controllerService.spec as { ports: { nodePort: number }[] }).ports[0]!.nodePort;
    // As NOTES.txt says: in the controller pod, with its own ServiceAccount (Secrets in its namespace).
    const [controllerPod] = await readyPods(kc(), RELEASE_NS, selector('controller'));
    const account = await execIn(kc(), RELEASE_NS, controllerPod!.metadata.name, 'controller', [
      'node',
      '/app/bin/svc.js',
      'admin',
      'create',
      'account',
      'laptop@example.com',
      '--store',
      'kubernetes',
    ]);
    expect(account.code, account.stderr).toBe(0);

    tunnelBackend = await startTunnelBackend();
    const laptop = join(work, 'laptop');
    await mkdir(laptop);
    outsideAgent = await startOutsideAgent(laptop, nodeIp, [PF_HOST]);
    const dataDir = ['--data-dir', join(laptop, 'data')];
    const enabled = await svcCli([
      'enable',
      account.stdout.trim(),
      '--api-endpoint',
      `http://${nodeIp}:${apiPort}`,
      ...dataDir,
    ]);
    expect(enabled.code, enabled.stderr).toBe(0);
    const envZId = enabled.stdout.trim();
    await outsideAgent.waitFor(/tunnel: connected to the installation/, 60_000);

    const shared = await svcCli(['share', 'public', tunnelBackend.url, '--json', ...dataDir]);
    expect(shared.code, shared.stderr).toBe(0);
    const entry = JSON.parse(shared.stdout) as { token: string; frontendEndpoints: string[] };
    const shareHost = `${entry.token}.${DOMAIN}:${PF_NODE_PORT}`;
    expect(entry.frontendEndpoints).toEqual([`http://${shareHost}`]);
    const visit = () => request(PF_NODE_PORT, '/echo', { address: nodeIp, host: shareHost });
    await until('the share to be served through the NodePort', async () => (await visit()).status === 200);

    const leases = async () =>
      (
        (await get(
          `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases?labelSelector=${encodeURIComponent(`svc.dev/tunnel-env=${envZId}`)}`,
        )) as unknown as { items: Obj[] }
      ).items;
    const [lease, ...more] = await leases();
    expect(more).toEqual([]);
    const pods = await readyPods(kc(), RELEASE_NS, selector('public-frontend'), 2);
    const holderName = (lease!.spec as { holderIdentity: string }).holderIdentity;
    const holder = pods.find((p) => p.metadata.name === holderName);
    const other = pods.find((p) => p.metadata.name !== holderName)!;
    expect(holder, `holder ${holderName} among ${pods.map((p) => p.metadata.name).join(', ')}`).toBeDefined();
    expect(lease!.metadata!.name).toBe(`svc-tunnel-${envZId}-${holderName}`);
    expect(lease!.metadata!.annotations?.['svc.dev/tunnel-peer']).toBe(`${holder!.status?.podIP}:8444`);
    expect(await podLog(kc(), RELEASE_NS, holderName, 'public-frontend')).toContain('tunnel: agent connected');
    expect(await podLog(kc(), RELEASE_NS, other.metadata.name, 'public-frontend')).not.toContain(
      'tunnel: agent connected',
    );

    // Each visit is a new connection, which kube-proxy sends to either replica. The one without the
    // tunnel can only answer 200 by forwarding to the holder's peer port.
    const statuses: number[] = [];
    const counts = await until('both replicas to have served the share', async () => {
      for (let i = 0; i < 8; i++) statuses.push((await visit()).status);
      const proxied = await Promise.all(pods.map((p) => proxiedCount(kc(), RELEASE_NS, p.metadata.name)));
      return proxied.every((n) => n > 0) ? proxied : undefined;
    });
    console.info(`[cluster] public frontend: ${statuses.length} visits, proxied per replica ${counts.join(' / ')}`);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const seen = tunnelBackend.seen.at(-1)!;
    expect(seen.headers['x-forwarded-host']).toBe(shareHost);

    // The replicas' own identities (RBAC as installed): each wrote nothing but Leases, and nothing was refused.
    const sa = `system:serviceaccount:${RELEASE_NS}:${RELEASE}-public-frontend`;
    const events = (await cluster.auditEvents()).filter((e) => e.user.username === sa);
    const podOf = (e: AuditEvent) => e.user.extra?.['authentication.kubernetes.io/pod-name']?.[0];
    const writes = events.filter((e) => ['create', 'update', 'patch', 'delete', 'deletecollection'].includes(e.verb));
    expect([...new Set(writes.map((e) => `${e.objectRef?.apiGroup}/${e.objectRef?.resource}`))]).toEqual([
      'coordination.k8s.io/leases',
    ]);
    expect(writes.some((e) => e.verb === 'create' && podOf(e) === holderName)).toBe(true);
    for (const pod of pods)
      expect(
        events.some((e) => podOf(e) === pod.metadata.name),
        pod.metadata.name,
      ).toBe(true);
    expect(
      events.filter((e) => e.responseStatus?.code === 403).map((e) => `${e.verb} ${e.objectRef?.resource}`),
    ).toEqual([]);
  }, 400_000);

  it('an OAuth share of the outside agent: Chromium logs in through the public frontend, whose own host takes the callback', async () => {
    const nodeIp = cluster.node.nodeIp;
    const dataDir = ['--data-dir', join(work, 'laptop', 'data')];
    const shared = await svcCli([
      'share',
      'public',
      '--oauth-provider',
      'dev',
      '--oauth-email-address-pattern',
      '*@example.com',
      tunnelBackend!.url,
      '--json',
      ...dataDir,
    ]);
    expect(shared.code, shared.stderr).toBe(0);
    const { token } = JSON.parse(shared.stdout) as { token: string };
    const shareUrl = `http://${token}.${DOMAIN}:${PF_NODE_PORT}/echo?via=public-frontend`;
    const browser = await launchBrowser([
      `--host-resolver-rules=MAP ${PF_HOST} ${nodeIp}, MAP ${token}.${DOMAIN} ${nodeIp}`,
    ]);
    try {
      const page = await browser.context.newPage();
      const visited: string[] = [];
      page.on('request', (r) => visited.push(r.url()));
      await until('the OAuth share to send the login redirect', async () => {
        await page.goto(shareUrl);
        return page.url().includes(idp.issuer.host);
      });
      // The login began on the public frontend's own host, which holds the login cookie host-only.
      await expectLoginStartedOn(page, visited, new URL(PF_ENDPOINT), 'dev');
      await devLogin(page, 'Bob@Example.com');
      await page.waitForURL(shareUrl);
      expect(visited.some((u) => u.startsWith(`${PF_ENDPOINT}/dev/auth/callback?`))).toBe(true);
      const seen = JSON.parse((await page.textContent('body')) ?? '{}') as {
        url: string;
        headers: Record<string, string>;
      };
      expect(seen.url).toBe('/echo?via=public-frontend');
      expect(seen.headers['svc-auth-provider']).toBe('dev');
      expect(seen.headers['svc-auth-email']?.toLowerCase()).toBe('bob@example.com');
      expect(seen.headers.cookie ?? '').not.toContain('svc-auth-session');
    } finally {
      await browser.close();
    }

    // The agent stops: its replica deletes the Lease at once (no waiting for it to expire).
    await outsideAgent!.stop();
    outsideAgent = undefined;
    await until(
      'the tunnel Lease to go',
      async () => {
        const list = (await get(
          `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases?labelSelector=${encodeURIComponent('app.kubernetes.io/managed-by=svc-frontend')}`,
        )) as unknown as { items: Obj[] };
        return list.items.length === 0;
      },
      30_000,
    );
  }, 300_000);

  it('helm uninstall leaves no svc object of the release behind, only the CRDs', async () => {
    const out = await helm('uninstall', RELEASE, '-n', RELEASE_NS, '--wait', '--timeout', '5m');
    expect(out.code, out.stderr).toBe(0);
    await until('the release pods to go', async () => (await listPods(kc(), RELEASE_NS, '')).length === 0);
    const q = `labelSelector=${encodeURIComponent(`app.kubernetes.io/instance=${RELEASE}`)}`;
    const kinds = [
      `/apis/apps/v1/namespaces/${RELEASE_NS}/deployments`,
      `/api/v1/namespaces/${RELEASE_NS}/services`,
      `/api/v1/namespaces/${RELEASE_NS}/secrets`,
      `/api/v1/namespaces/${RELEASE_NS}/configmaps`,
      `/api/v1/namespaces/${RELEASE_NS}/serviceaccounts`,
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${RELEASE_NS}/roles`,
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${RELEASE_NS}/rolebindings`,
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    ];
    for (const path of kinds) {
      const list = (await get(`${path}?${q}`)) as unknown as { items: Obj[] };
      expect(
        list.items.map((o) => o.metadata?.name),
        path,
      ).toEqual([]);
    }
    const secrets = (await get(`/api/v1/namespaces/${RELEASE_NS}/secrets`)) as unknown as { items: Obj[] };
    console.info(
      `[cluster] Secrets left in ${RELEASE_NS} after uninstall: ${secrets.items.map((s) => s.metadata?.name).join(', ')}`,
    );
    expect(await getOrNone(`/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases/svc-operator`)).toBeDefined();
    const tunnelLeases = (await get(
      `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases?labelSelector=${encodeURIComponent('app.kubernetes.io/managed-by=svc-frontend')}`,
    )) as unknown as { items: Obj[] };
    expect(tunnelLeases.items.map((l) => l.metadata?.name)).toEqual([]);
    for (const crd of ['shares', 'accesses', 'agentenrollments']) {
      expect(await getOrNone(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}.svc.dev`)).toBeDefined();
    }
  }, 400_000);
});
