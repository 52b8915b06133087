import http2 from 'node:http2';
import { createConnection, createServer, type Server } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { readEnvironment } from '../../lib/remoting/files.ts';
import { startSvc, svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';
import { launchBrowser } from '../support/browser.ts';
import { cookiesFrom, get, type Reply } from '../support/http.ts';
import { cliShare, startControllerProcess, startPublicFrontendProcess } from '../support/installation.ts';
import { echoBackend, request } from '../support/raw-http.ts';
import { startControlPlane, type ControlPlane } from '../k8s/envtest.ts';
import { leasesOnlyUser } from '../k8s/tunnel-leases.ts';

/**
 * The console of `svc controller` whose public frontend runs as two `svc public-frontend` replicas
 * in Lease mode (`replicas:` sections, their Leases on a real kube-apiserver written as a user
 * holding only the chart's Leases Role), all real processes on loopback: each replica reports its
 * tunnels and traffic to the controller (`POST /api/v1/frontend/report`), and the console (HTTP
 * and Chromium) shows them merged: each account's environments online with their agent version,
 * per-share traffic summed over the replicas, and in the admin view which replica holds which
 * tunnel. The agents reach the replicas through a switchable TCP proxy (the endpoint_url, as a
 * Service would balance), so alice's tunnel lands on replica A and bob's on B; a visitor on the
 * other replica is forwarded to the holder, which counts the request (once). Forged,
 * unauthenticated, malformed and oversized reports are refused with clear errors and change
 * nothing; neither a report nor a peer stream puts traffic on a share of an environment the
 * replica does not hold.
 */
const DOMAIN = 'cr.localhost';
const CREDENTIAL = 'console-replicas-credential-0123456789abcdefghij';
const ADMIN = 'root@example.com';
const NAMESPACE = 'svc-console-replicas';

interface Replica {
  readonly process: Process;
  readonly port: number;
  readonly name: string;
  /** The peer listener other replicas forward streams to. */
  readonly peerPort: number;
}
interface Agent {
  readonly process: Process;
  readonly dir: string;
  readonly envZId: string;
  readonly accountToken: string;
  readonly share: string;
}

let base: string;
let cp: ControlPlane;
/** The frontend replicas' environment: the kubeconfig of a user holding only the Leases Role. */
let kubeEnv: NodeJS.ProcessEnv;
let controller: { process: Process; port: number; apiBase: string };
let a: Replica;
let b: Replica;
let alice: Agent;
let bob: Agent;
let proxy: { server: Server; port: number; target: number };
let backend: Awaited<ReturnType<typeof echoBackend>>;
let browser: Awaited<ReturnType<typeof launchBrowser>>;
/** bob's console session (token sign-in over HTTP). */
let signedInBob = '';
const problems: string[] = [];

const apiHost = () => `127.0.0.1:${controller.port}`;
const visit = (replica: Replica, token: string, path = '/') =>
  request(replica.port, path, { host: `${token}.${DOMAIN}:${replica.port}`, timeoutMs: 5_000 });

/** A TCP proxy to the port in `target`, switchable between connections: the replicas' "Service". */
async function startProxy(): Promise<typeof proxy> {
  const state = { target: 0 };
  const server = createServer((client) => {
    const upstream = createConnection(state.target, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    get target() {
      return state.target;
    },
    set target(p: number) {
      state.target = p;
    },
  };
}

async function startReplica(name: string): Promise<Replica> {
  const config = writeYaml(join(base, `frontend-${name}.yaml`), [
    'frontend:',
    '  listen: 127.0.0.1:0',
    `  domain: ${DOMAIN}`,
    `  endpoint_url: http://127.0.0.1:${proxy.port}`,
    'controller:',
    `  url: ${controller.apiBase}`,
    `  credential_file: ${join(base, 'credential')}`,
    'replicas:',
    `  namespace: ${NAMESPACE}`,
    `  pod_name: frontend-${name}`,
    '  pod_ip: 127.0.0.1',
    '  peer_listen: 127.0.0.1:0',
    '  lease_duration: 5s',
  ]);
  const { process, port } = await startPublicFrontendProcess(config, kubeEnv);
  const reported = await process.waitFor(/reports: {3}as (\S+) to the controller/);
  const peer = await process.waitFor(/peer listener on port (\d+)/);
  return { process, port, name: reported[1] as string, peerPort: Number(peer[1]) };
}

/**
 * One request to `token` through `replica`, which does not hold its tunnel: answered once that
 * replica reads the holder's Lease (before, "Share offline", which it counts for an environment it
 * does not hold: the controller drops that). Exactly one request is answered.
 */
async function forwarded(replica: Replica, token: string, path: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { status } = await visit(replica, token, path);
    if (status === 200) return;
    if (status !== 503 || Date.now() > deadline) throw new Error(`${replica.name} answered ${status} for ${token}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** An account, a `svc serve` agent enabled for it whose tunnel lands on `replica`, and one public share. */
async function startAgent(email: string, replica: Replica): Promise<Agent> {
  const created = await svcCli(['admin', 'create', 'account', email, '--data-dir', join(base, 'controller')]);
  expect(created.code, created.stderr).toBe(0);
  const accountToken = created.stdout.trim();
  const dir = tempDir('svc-cr-agent-');
  proxy.target = replica.port;
  const process = await startSvc(['serve', '--data-dir', dir, '--listen', '127.0.0.1:0'], /svc serve is ready/);
  const enabled = await svcCli(['enable', accountToken, '--api-endpoint', controller.apiBase, '--data-dir', dir]);
  expect(enabled.code, enabled.stderr).toBe(0);
  await process.waitFor(/tunnel: connected to the installation/);
  const { token } = await cliShare(dir, ['public', backend.url]);
  return { process, dir, envZId: enabled.stdout.trim(), accountToken, share: token };
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const csrfOf = (reply: Reply) => /name="_csrf" value="([^"]+)"/.exec(reply.body)?.[1] ?? '';

/** Token sign-in over HTTP: the session's cookie. */
async function signIn(accountToken: string): Promise<string> {
  const page = await get(controller.port, apiHost(), '/console/signin');
  const reply = await get(controller.port, apiHost(), '/console/signin', {
    method: 'POST',
    headers: {
      cookie: cookiesFrom(page),
      'content-type': 'application/x-www-form-urlencoded',
      origin: controller.apiBase,
    },
    body: form({ _csrf: csrfOf(page), token: accountToken }),
  });
  expect(reply.status, reply.body).toBe(303);
  return cookiesFrom(reply);
}

/** An API error body. */
const errorOf = (reply: Reply) => JSON.parse(reply.body) as { code: string; message: string; details?: string[] };

/** `POST /api/v1/frontend/report` as a replica (or an attacker holding the credential) would. */
const report = (body: string | object, headers: Record<string, string> = {}) =>
  get(controller.port, apiHost(), '/api/v1/frontend/report', {
    method: 'POST',
    headers: { 'x-frontend-token': CREDENTIAL, 'content-type': MEDIA_TYPE, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

/** The environment token of `agent` presented to `/frontend/authenticate` as a replica does, and its ticket. */
async function ticketOf(agent: Agent): Promise<{ environmentToken: string; ticket: string }> {
  const environmentToken = readEnvironment(agent.dir)?.environmentToken ?? '';
  const auth = await get(controller.port, apiHost(), '/api/v1/frontend/authenticate', {
    method: 'POST',
    headers: { 'x-frontend-token': CREDENTIAL, 'content-type': MEDIA_TYPE },
    body: JSON.stringify({ environmentToken }),
  });
  expect(auth.status, auth.body).toBe(200);
  return { environmentToken, ticket: (JSON.parse(auth.body) as { ticket: string }).ticket };
}

/** One GET on a replica's peer listener with the replicas' credential, as another replica forwards it. */
function peerStream(port: number, envZId: string, authority: string): Promise<{ status: number }> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const stream = session.request({
    ':path': '/',
    ':authority': authority,
    'svc-tunnel-route': 'public',
    'svc-tunnel-env': envZId,
    'svc-peer-credential': CREDENTIAL,
  });
  stream.end();
  return new Promise((resolve, reject) => {
    stream.on('response', (headers) => {
      stream.resume();
      stream.on('end', () => {
        session.close();
        resolve({ status: Number(headers[':status']) });
      });
    });
    stream.on('error', reject);
  });
}

/** Polls `read` until `done` holds (the replicas report every 5 s, the console pushes every 5 s). */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 40_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const dashboard = async (cookie: string) =>
  (await get(controller.port, apiHost(), '/console', { headers: { cookie } })).body;
const summaryOf = (page: string, token: string) =>
  new RegExp(`data-summary="${token}">([^<]*)<`).exec(page)?.[1]?.trim() ?? '';

describe('console of svc controller with two frontend replicas', () => {
  beforeAll(async () => {
    base = tempDir('svc-console-replicas-');
    cp = await startControlPlane();
    const user = await leasesOnlyUser(cp, NAMESPACE, 'svc-frontend');
    kubeEnv = {
      KUBECONFIG: user.kubeconfigPath,
      KUBERNETES_SERVICE_HOST: '',
      SVC_POD_NAMESPACE: '',
      SVC_POD_NAME: '',
      SVC_POD_IP: '',
    };
    writeFileSync(join(base, 'credential'), `${CREDENTIAL}\n`, { mode: 0o600 });
    backend = await echoBackend();
    proxy = await startProxy();
    const config = writeYaml(join(base, 'controller.yaml'), [
      'controller:',
      '  listen: 127.0.0.1:0',
      'public_frontend:',
      `  domain: ${DOMAIN}`,
      `  endpoint_url: http://127.0.0.1:${proxy.port}`,
      `  credential_file: ${join(base, 'credential')}`,
      'console:',
      `  admins: [${ADMIN}]`,
    ]);
    controller = await startControllerProcess(config, join(base, 'controller'));
    [a, b] = await Promise.all([startReplica('a'), startReplica('b')]);
    alice = await startAgent('alice@example.com', a);
    bob = await startAgent('bob@example.com', b);
    signedInBob = await signIn(bob.accountToken);
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([alice?.process.stop(), bob?.process.stop()]);
    await Promise.all([a?.process.stop(), b?.process.stop()]);
    await controller?.process.stop();
    proxy?.server.close();
    await backend?.close();
    await cp?.stop();
  });

  it('prints the console address and names each replica', () => {
    expect(controller.process.output()).toContain(`console:   ${controller.apiBase}/console`);
    expect(a.name).not.toBe(b.name);
  });

  it('shows each account its environments online and the traffic of its shares summed over both replicas', async () => {
    // alice's share: three answered through A (its tunnel), two through B, which forwards them to A
    // over the peer channel: A counts them (the controller takes A's traffic for alice's environment,
    // never B's), B does not. bob's share the other way round: two through B, one forwarded by A.
    for (const path of ['/', '/x', '/y']) expect((await visit(a, alice.share, path)).status).toBe(200);
    await forwarded(b, alice.share, '/via-b');
    expect((await visit(b, alice.share, '/via-b-again')).status).toBe(200);
    for (const path of ['/', '/z']) expect((await visit(b, bob.share, path)).status).toBe(200);
    await forwarded(a, bob.share, '/via-a');

    const aliceCookie = await signIn(alice.accountToken);
    const page = await eventually(
      () => dashboard(aliceCookie),
      (p) => /^5 requests/.test(summaryOf(p, alice.share)),
      "alice's merged traffic",
    );
    expect(summaryOf(page, alice.share)).toMatch(/^5 requests, [\d.]+ (B|KB), 0 errors in the last hour$/);
    expect(page).toMatch(new RegExp(`data-env="${alice.envZId}"\\s*>online<`));
    expect(page).toContain('0.1.0');
    expect(page).not.toContain(bob.envZId);
    expect(page).not.toContain(bob.share);

    const bobPage = await eventually(
      () => dashboard(signedInBob),
      (p) => /^3 requests/.test(summaryOf(p, bob.share)),
      "bob's traffic",
    );
    expect(bobPage).not.toContain(alice.envZId);
  }, 90_000);

  it('shows the figures live in Chromium without console errors', async () => {
    const context = browser.context;
    const page = await context.newPage();
    watch(page);
    await page.goto(`${controller.apiBase}/console`);
    await page.fill('#token', alice.accountToken);
    await Promise.all([
      page.waitForURL(`${controller.apiBase}/console`),
      page.click('form[action="/console/signin"] button'),
    ]);
    expect(await page.textContent(`[data-env="${alice.envZId}"]`)).toBe('online');
    const summary = page.locator(`[data-summary="${alice.share}"]`);
    expect(await summary.textContent()).toMatch(/^5 requests/);
    expect((await visit(b, alice.share, '/live')).status).toBe(200);
    // Forwarded by B, counted and reported by A within 5 s, pushed by the console's event stream
    // within 5 s more: no reload.
    await expect.poll(() => summary.textContent(), { timeout: 30_000 }).toMatch(/^6 requests/);
    expect(await page.locator(`[data-chart="${alice.share}"] svg rect.err`).count()).toBe(0);
    expect(await page.textContent('main')).not.toContain(bob.envZId);
    await page.close();
    expect(problems).toEqual([]);
  });

  it('shows an admin each replica with the tunnels it holds', async () => {
    const created = await svcCli(['admin', 'create', 'account', ADMIN, '--data-dir', join(base, 'controller')]);
    const page = await browser.context.newPage();
    watch(page);
    await browser.context.clearCookies();
    await page.goto(`${controller.apiBase}/console/signin`);
    await page.fill('#token', created.stdout.trim());
    await Promise.all([
      page.waitForURL(`${controller.apiBase}/console`),
      page.click('form[action="/console/signin"] button'),
    ]);
    await page.click('nav a[href="/console/admin"]');
    await page.waitForURL(`${controller.apiBase}/console/admin`);
    expect(await page.textContent(`tr[data-replica="${a.name}"]`)).toContain(alice.envZId);
    expect(await page.textContent(`tr[data-replica="${a.name}"]`)).not.toContain(bob.envZId);
    expect(await page.textContent(`tr[data-replica="${b.name}"]`)).toContain(bob.envZId);
    expect(await page.locator('tr[data-replica]').count()).toBe(2);
    await page.close();
    expect(problems).toEqual([]);
  });

  it('refuses a report for a tunnel the replica does not hold, and bad reports, changing nothing', async () => {
    // A real ticket: alice's environment token presented to /frontend/authenticate, as a replica does.
    const { environmentToken, ticket } = await ticketOf(alice);
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const forged = {
      replica: 'intruder',
      run: 'r1',
      seq: 0,
      environments: [{ envZId: bob.envZId, ticket, tunnels: 1 }],
      traffic: [{ token: bob.share, minute, requests: 1000, bytesIn: 0, bytesOut: 0, errors: 1000 }],
    };
    const refused = await report(forged);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'tunnel_not_held' });
    expect(errorOf(refused).message).toContain(`environment ${bob.envZId}`);

    const wrong = await report(forged, { 'x-frontend-token': 'not-the-credential' });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toMatchObject({ code: 'unauthorized' });
    const malformed = await report('{"replica": ');
    expect([malformed.status, errorOf(malformed).code]).toEqual([400, 'malformed_json']);
    const invalid = await report({ ...forged, environments: [], traffic: [{ ...forged.traffic[0], minute: 5 }] });
    expect(invalid.status).toBe(422);
    expect((errorOf(invalid).details ?? []).join(' ')).toContain('minute');
    const oversized = await report({ ...forged, environments: [], pad: 'x'.repeat(1024 * 1024) });
    expect([oversized.status, errorOf(oversized).code]).toEqual([413, 'body_too_large']);

    // Nothing changed: bob's figures, presence and the replicas as before; the real replicas still report.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const bobPage = await dashboard(signedInBob);
    expect(summaryOf(bobPage, bob.share)).toMatch(/^3 requests, [\d.]+ (B|KB), 0 errors/);
    expect(bobPage).toMatch(new RegExp(`data-env="${bob.envZId}"\\s*>online<`));
    expect(controller.process.output()).not.toContain(CREDENTIAL);
    expect(controller.process.output()).not.toContain(environmentToken);
  });

  it('puts no traffic on a share of an environment the replica does not hold, by report or by peer stream', async () => {
    // The replicas' credential and bob's real ticket prove bob's tunnel only: traffic for alice's
    // share in the same report is ignored (and the run leaves again, so bob's presence is B's alone).
    const { ticket } = await ticketOf(bob);
    const minute = Math.floor(Date.now() / 60_000) * 60_000;
    const claim = {
      replica: 'intruder',
      run: 'r2',
      seq: 0,
      environments: [{ envZId: bob.envZId, ticket, tunnels: 1 }],
      traffic: [{ token: alice.share, minute, requests: 1000, bytesIn: 0, bytesOut: 0, errors: 1000 }],
    };
    const taken = await report(claim);
    expect([taken.status, JSON.parse(taken.body)]).toEqual([200, { traffic: 0, ignored: 1 }]);
    const left = await report({ ...claim, seq: 1, environments: [], traffic: [], leaving: true });
    expect(left.status, left.body).toBe(200);

    // The same credential on B's peer listener: a stream into bob's tunnel (B holds it) naming alice's
    // share is forwarded (bob's agent answers it, not alice's backend) and counted for no share.
    const answer = await peerStream(b.peerPort, bob.envZId, `${alice.share}.${DOMAIN}:${b.port}`);
    expect(answer.status).not.toBe(200);
    expect(answer.status).toBeLessThan(500);

    // Two reports of each replica later, alice's and bob's figures are as before.
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const alicePage = await dashboard(await signIn(alice.accountToken));
    expect(summaryOf(alicePage, alice.share)).toMatch(/^6 requests, [\d.]+ (B|KB), 0 errors/);
    expect(summaryOf(await dashboard(signedInBob), bob.share)).toMatch(/^3 requests, [\d.]+ (B|KB), 0 errors/);
  });

  it('shows the replicas again after a controller restart (their tunnels re-authenticated for new tickets)', async () => {
    await controller.process.stop();
    controller = await startControllerProcess(
      join(base, 'controller.yaml'),
      join(base, 'controller'),
      `127.0.0.1:${controller.port}`,
    );
    // Session keys are per start: sign in again. The counters started over with the process.
    signedInBob = await signIn(bob.accountToken);
    const page = await eventually(
      () => dashboard(signedInBob),
      (p) => new RegExp(`data-env="${bob.envZId}"\\s*>online<`).test(p),
      "bob's environment reported online to the restarted controller",
    );
    expect(page).toContain('0.1.0');
    expect((await visit(b, bob.share)).status).toBe(200);
    await eventually(
      () => dashboard(signedInBob),
      (p) => /^1 request,/.test(summaryOf(p, bob.share)),
      "bob's traffic after the restart",
    );
  });

  it('takes a stopped replica out: its tunnels go offline, last seen kept', async () => {
    await b.process.stop();
    const page = await eventually(
      () => dashboard(signedInBob),
      (p) => new RegExp(`data-env="${bob.envZId}"\\s*>offline<`).test(p),
      "bob's environment offline",
    );
    expect(page).toMatch(new RegExp(`data-seen="${bob.envZId}"\\s*>\\d{4}-\\d\\d-\\d\\dT`));
    // The counts B reported before it left stay.
    expect(summaryOf(page, bob.share)).toMatch(/^1 request,/);
  });
});

/** Console errors (CSP violations among them) and uncaught exceptions of the console's pages. */
function watch(page: Page): void {
  const ours = () => page.url().startsWith(controller.apiBase);
  page.on('console', (m) => {
    if (ours() && (m.type() === 'error' || m.type() === 'warning')) problems.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (err) => {
    if (ours()) problems.push(`${page.url()}: ${err.message}`);
  });
}
