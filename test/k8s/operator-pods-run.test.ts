/**
 * "The pod spec the operator writes really runs": the containers of the Deployments the operator
 * generated (their args, env and mounted Secret files) are started as local processes
 * (`node bin/svc.js <args>`, the image's entrypoint being `svc`), and the share is reached through
 * them — OAuth login in a real browser included.
 *
 * What a kubelet and the cluster network would do is done here explicitly, and only that: Secret
 * volumes become files in a temp dir (mount paths rewritten), each container port gets a local port
 * (the pod's fixed ports 9000/8080/9090 could collide with other processes on this machine), and
 * the in-cluster Service URL of a share is mapped to its agent's local address. For the OAuth
 * share the auth endpoint runs too (from the config the operator writes into the release
 * namespace, as the chart's auth Deployment does), and a host-routing proxy on the public port
 * stands for the Ingress: `auth.*` to the auth endpoint, share hosts to the share pod.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevIdentityProvider, type DevIdentityProvider } from '../../devidp/provider.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { devLogin, expectLoginStartedOn, launchBrowser, navigations } from '../support/browser.ts';
import { authShareEntries, mountAuthConfig } from './auth-config-files.ts';
import type { ControlPlane } from './envtest.ts';
import {
  api,
  createAccess,
  createShare,
  eventually,
  markAvailable,
  paths,
  readyShare,
  startCluster,
  startTestOperator,
  writeFrontendSecret,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';
import { freePort } from './processes.ts';

const SVC = join(import.meta.dirname, '..', '..', 'bin', 'svc.js');
const DOMAIN = 'svc.localhost';

interface Container {
  name: string;
  args: string[];
  env?: { name: string; value?: string }[];
  ports?: { containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string }[];
  readinessProbe?: { httpGet?: { path: string; port: number }; tcpSocket?: { port: number } };
}
interface PodSpec {
  containers: Container[];
  volumes: { name: string; secret?: { secretName: string } }[];
}

let cp: ControlPlane;
let operator: TestOperator;
let idp: DevIdentityProvider;
let backend: EchoBackend;
let publicPort: number;
let ingress: Server | undefined;
let workDir: string;
const children: { name: string; child: ChildProcess; output: string[] }[] = [];

beforeAll(async () => {
  cp = await startCluster();
  let callbacks: string[] = [];
  idp = await startDevIdentityProvider({ redirectUris: () => callbacks });
  backend = await startEchoBackend();
  // The frontend's public port: what the Ingress would expose for the pod's port 8080.
  publicPort = await freePort();
  callbacks = [`http://auth.${DOMAIN}:${publicPort}/dev/auth/callback`];
  await writeFrontendSecret(cp, {
    bind_address: '0.0.0.0:8080',
    endpoint_url: `http://auth.${DOMAIN}:${publicPort}`,
    cookie_name: 'svc-auth-session',
    cookie_domain: DOMAIN,
    session_lifetime: '6h',
    intermediate_lifetime: '5m',
    signing_key: 'pods-run-signing-key-0123456789-abcdefgh',
    encryption_key: 'pods-run-encryption-key-012345',
    providers: [
      {
        name: 'dev',
        type: 'oidc',
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        scopes: ['openid', 'email', 'profile'],
        issuer: idp.issuer.href,
        supports_pkce: true,
      },
    ],
  });
  operator = await startTestOperator(cp, { shareDomain: DOMAIN });
  workDir = await mkdtemp(join(tmpdir(), 'svc-pods-'));
}, 180_000);

afterAll(async () => {
  for (const c of children) {
    if (c.child.exitCode === null) {
      c.child.kill('SIGTERM');
      await new Promise((r) => c.child.once('exit', r));
    }
  }
  await operator?.close();
  await new Promise((r) => (ingress ? ingress.close(r) : r(undefined)));
  await idp?.close();
  await backend?.close();
  await cp?.stop();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** An Ingress stand-in on `port`: each request goes to the local port `route` gives its host. */
async function startIngress(port: number, route: (hostname: string) => number): Promise<Server> {
  const server = createServer((req, res) => {
    const hostname = (req.headers.host ?? '').replace(/:\d+$/, '');
    const upstream = request(
      { host: '127.0.0.1', port: route(hostname), method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

/**
 * Runs the auth endpoint from the operator's `<release>-auth-frontend` Secret and its shard Secrets,
 * mounted as the chart's auth Deployment mounts them (the config's share_directory read by `svc frontend`).
 */
async function runAuthEndpoint(ports: Map<number, number>): Promise<void> {
  await eventually(
    async () => (await authShareEntries(cp)).some((e) => e.token === 'live'),
    'auth endpoint shard listing the share',
  );
  const file = await mountAuthConfig(cp, join(workDir, 'svc-auth'), rewriter(ports, new Map()));
  const child = spawn(process.execPath, [SVC, 'frontend', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  children.push({ name: 'svc-auth/frontend', child, output });
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`auth endpoint exited: ${output.join('')}`);
      const res = await fetch(`http://127.0.0.1:${ports.get(9090)}/readyz`);
      await res.arrayBuffer();
      return res.ok;
    },
    'auth endpoint ready',
    30_000,
  );
}

/** Rewrites `0.0.0.0:<p>` / `127.0.0.1:<p>` for mapped pod ports, and Service URLs to local addresses. */
function rewriter(ports: Map<number, number>, services: Map<string, string>): (text: string) => string {
  return (text) => {
    let out = text.replace(/\b(?:0\.0\.0\.0|127\.0\.0\.1):(\d+)\b/g, (whole, port: string) => {
      const mapped = ports.get(Number(port));
      return mapped ? `127.0.0.1:${mapped}` : whole;
    });
    for (const [from, to] of services) out = out.split(from).join(to);
    return out;
  };
}

/**
 * Runs every container of a Deployment as `node bin/svc.js <args>`: Secret volumes written as files,
 * mount paths and ports rewritten; resolves when each container's readiness probe passes.
 */
async function runPod(
  deploymentName: string,
  ports: Map<number, number>,
  services = new Map<string, string>(),
): Promise<void> {
  const deployment = await api(cp, paths.deployment(deploymentName));
  const pod = (deployment.spec as { template: { spec: PodSpec } }).template.spec;
  const rewrite = rewriter(ports, services);
  const podDir = join(workDir, deploymentName);
  const mounts = new Map<string, string>();
  for (const volume of pod.volumes) {
    const dir = join(podDir, volume.name);
    await mkdir(dir, { recursive: true });
    mounts.set(volume.name, dir);
    if (volume.secret) {
      const secret: Obj = await api(cp, paths.secret(volume.secret.secretName));
      for (const [key, value] of Object.entries(secret.data ?? {})) {
        await writeFile(join(dir, key), rewrite(Buffer.from(value, 'base64').toString('utf8')));
      }
    }
  }
  for (const c of pod.containers) {
    const args = c.args.map((arg) => {
      let out = rewrite(arg);
      for (const m of c.volumeMounts ?? [])
        if (out.startsWith(`${m.mountPath}/`)) out = join(mounts.get(m.name) ?? '', out.slice(m.mountPath.length + 1));
      return out;
    });
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? '']));
    const child = spawn(process.execPath, [SVC, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
    children.push({ name: `${deploymentName}/${c.name}`, child, output });
  }
  for (const [i, c] of pod.containers.entries()) {
    const probe = c.readinessProbe;
    const run = children[children.length - pod.containers.length + i];
    const port = ports.get(probe?.httpGet?.port ?? probe?.tcpSocket?.port ?? (c.ports?.[0]?.containerPort as number));
    if (!port) continue;
    await eventually(
      async () => {
        if (run?.child.exitCode !== null) throw new Error(`${run?.name} exited: ${run?.output.join('')}`);
        const res = await fetch(`http://127.0.0.1:${port}${probe?.httpGet?.path ?? '/'}`);
        await res.arrayBuffer();
        return probe?.httpGet ? res.ok : true;
      },
      `container ${c.name} of ${deploymentName} ready`,
      30_000,
    );
  }
}

describe('the pod specs the operator writes really run', () => {
  it('OAuth share: agent + sidecar from the generated Deployment and Secret, login in a real browser', async () => {
    await createShare(cp, 'live', {
      backendMode: 'proxy',
      target: backend.url.href,
      token: 'live',
      oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'] },
    });
    await readyShare(cp, 'live', 1);
    const [sharePort, authPort, internalPort] = [await freePort(), await freePort(), await freePort()];
    await runAuthEndpoint(
      new Map([
        [8080, authPort],
        [8081, internalPort],
        [9090, await freePort()],
      ]),
    );
    await runPod(
      'svc-share-live',
      new Map([
        [9000, await freePort()],
        [8080, sharePort],
        [9090, await freePort()],
      ]),
      new Map([['http://svc-auth-internal.svc-system.svc:8081', `http://127.0.0.1:${internalPort}`]]),
    );
    ingress = await startIngress(publicPort, (hostname) => (hostname.startsWith('auth.') ? authPort : sharePort));

    const browser = await launchBrowser();
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
        headers: Record<string, string>;
      };
      expect(seen.url).toBe('/hello?x=1');
      expect(seen.headers['svc-auth-provider']).toBe('dev');
      expect(seen.headers['svc-auth-email']?.toLowerCase()).toBe('alice@example.com');
      expect(seen.headers['svc-auth-expires']).toMatch(/^\d{4}-\d{2}-\d{2}T/);
      expect(seen.headers.cookie ?? '').not.toContain('svc-auth-session');
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('public share without OAuth, and an Access forwarding to a private share', async () => {
    const agentPort = await freePort();
    await createShare(cp, 'plain', {
      shareMode: 'private',
      backendMode: 'proxy',
      target: backend.url.href,
      token: 'plain',
    });
    await readyShare(cp, 'plain', 1);
    await runPod('svc-share-plain', new Map([[9000, agentPort]]));

    const direct = await fetch(`http://127.0.0.1:${agentPort}/direct`, {
      headers: { 'svc-auth-email': 'spoofed@evil.test' },
    });
    const seenDirect = (await direct.json()) as { headers: Record<string, string> };
    expect(seenDirect.headers['svc-auth-email']).toBeUndefined();

    await createAccess(cp, 'reach-plain', { shareToken: 'plain', bindPort: 18080 });
    await eventually(async () => {
      await markAvailable(cp, 'svc-access-reach-plain');
      const a = await api(cp, paths.access('reach-plain'));
      return (a.status?.conditions as { type: string; status: string }[] | undefined)?.some(
        (c) => c.type === 'Ready' && c.status === 'True',
      );
    }, 'Access Ready');
    const accessPort = await freePort();
    await runPod(
      'svc-access-reach-plain',
      new Map([[18080, accessPort]]),
      new Map([['http://svc-share-plain.default.svc:80', `http://127.0.0.1:${agentPort}`]]),
    );
    const via = await fetch(`http://127.0.0.1:${accessPort}/through-access`, {
      headers: { svc_auth_email: 'spoofed@evil.test' },
    });
    expect(via.status).toBe(200);
    const seen = (await via.json()) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/through-access');
    expect(seen.headers.svc_auth_email).toBeUndefined();
    expect(seen.headers['svc-auth-email']).toBeUndefined();
  }, 120_000);
});
