import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { CookieJar, request } from '../../bench/lib/http.ts';
import { devInteractionsLogin } from '../../bench/lib/dev-login.ts';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { startController, type RunningController } from '../../controller/start.ts';
import { DEFAULT_AGENT_TIMEOUT_MS } from '../../controller/config.ts';
import { newSecretToken } from '../../controller/tokens.ts';
import { ShareRegistry, TOKEN_QUARANTINE_MS } from '../../controller/share-registry.ts';
import { createLogger } from '../../lib/logger.ts';
import { DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, shareUrl, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import { startDevLogin } from '../../serve/dev.ts';
import { startTunnelFrontend, type RunningTunnelFrontend } from '../../sidecar/tunnel/public-frontend.ts';
import { api, tempDir } from '../controller/harness.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { TestClock } from '../support/clock.ts';
import { suiteFigures } from '../support/figures.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, providerRedirect, startLogin } from '../support/oauth-flow.ts';
import { rawExchange } from '../support/raw-socket.ts';

/**
 * A share token that changes hands, on the installation as it runs on one machine (controller API,
 * share registry in the file store, public frontend with the tunnel endpoint, the bundled dev
 * identity provider), with two accounts whose agents dial real tunnels to their own backends.
 * Account 1 publishes T, alice logs in on T, account 1 withdraws T; account 2 then tries to take T.
 * The registry's clock is a TestClock, so the quarantine can be passed without waiting.
 */
const DOMAIN = 'handover.localhost';
const TOKEN = 'handedover1';
const figures = suiteFigures('share-handover');
const quiet = createLogger('share-handover', { level: 'silent' });
const clock = new TestClock();
const closers: (() => Promise<unknown>)[] = [];

let controller: RunningController;
let installation: RunningTunnelFrontend;
let registry: ShareRegistry;
let dev: Awaited<ReturnType<typeof startDevLogin>>;
let backends: [EchoBackend, EchoBackend];
let environments: [{ envZId: string; environmentToken: string }, { envZId: string; environmentToken: string }];

const apiUrl = () => controller.apiUrl;
const shareAt = (path = '/') => new URL(path, `http://${TOKEN}.${DOMAIN}:${installation.frontend.port}`);
const publicOAuthShare = { token: TOKEN, shareMode: 'public', backendMode: 'proxy', oauthProvider: 'dev' };

/** The agent side of an environment: a tunnel serving T from this backend. */
function agentTunnel(environmentToken: string, backend: EchoBackend): RunningTunnel {
  const running = startTunnel({
    url: tunnelUrl(`http://127.0.0.1:${installation.frontend.port}`, TUNNEL_PATH),
    token: environmentToken,
    logger: quiet,
    resolve: (t) => (t === TOKEN ? { shareMode: 'public', backendUrl: backend.url } : undefined),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  closers.push(() => running.close());
  return running;
}

/** A WebSocket upgrade to a share with this cookie, as raw bytes; the frontend's answer. */
function upgradeWith(port: number, host: string, cookie: string) {
  const head = [
    'GET /socket HTTP/1.1',
    `host: ${host}`,
    `cookie: ${cookie}`,
    'connection: upgrade',
    'upgrade: websocket',
    'sec-websocket-version: 13',
    'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==',
  ];
  return rawExchange(port, `${head.join('\r\n')}\r\n\r\n`);
}

async function connected(tunnel: RunningTunnel): Promise<void> {
  for (let i = 0; i < 200 && !tunnel.connected; i++) await new Promise((r) => setTimeout(r, 25));
  expect(tunnel.connected).toBe(true);
}

beforeAll(async () => {
  const dataDir = tempDir('svc-adv-handover-');
  const store = new ControllerFileStore(join(dataDir, 'controller'));
  const listen = { host: '127.0.0.1', port: 0 };
  const bound: { endpoint?: URL } = {};
  dev = await startDevLogin(dataDir, listen, DOMAIN, () => bound.endpoint);
  closers.push(() => dev.close());
  registry = await ShareRegistry.open(store, ['dev'], quiet, { clock });
  installation = await startTunnelFrontend({
    directory: registry,
    limits: DEFAULT_TUNNEL_LIMITS,
    listen,
    endpointUrl: (port) => new URL(`http://auth.${DOMAIN}:${port}`),
    domain: DOMAIN,
    oauth: dev.oauth,
    logger: quiet,
  });
  closers.push(() => installation.close());
  bound.endpoint = installation.frontend.endpointUrl;
  const base = { protocol: 'http:', port: String(installation.frontend.port) };
  controller = await startController({
    settings: { listen, maxBodyBytes: 64 * 1024, agentTimeoutMs: DEFAULT_AGENT_TIMEOUT_MS },
    store,
    logger: quiet,
    tunnel: {
      registry,
      offer: { tunnelUrl: TUNNEL_PATH, accessUrl: TUNNEL_PATH, shareUrl: (token) => shareUrl(token, DOMAIN, base) },
    },
  });
  closers.push(() => controller.close());
  backends = [await startEchoBackend(), await startEchoBackend()];
  closers.push(() => Promise.all(backends.map((b) => b.close())));
  const enable = async (email: string) => {
    const account = newSecretToken('svca');
    await store.createAccount({ id: account.id, email, tokenHash: account.hash, createdAt: new Date().toISOString() });
    const reply = await api(apiUrl(), '/environment/enable', { description: email }, { token: account.token });
    expect(reply.status).toBe(200);
    return reply.body as { envZId: string; environmentToken: string };
  };
  environments = [await enable('one@example.com'), await enable('two@example.com')];
}, 60_000);

afterAll(async () => {
  figures.write();
  for (const close of closers.reverse()) await close();
});

describe('a share token freed by one account', () => {
  const tally = figures.attackClass(
    'Share token handed over between accounts (freed token re-registered by another account; a session carried to the new owner)',
    'a freed token could be registered at once by another account, whose backend then got the old share’s visitors; now 409 share_token_quarantined for 7 days, and sessions are bound to the share instance',
  );

  it('does not pass to another account, and alice\u2019s session never reaches the new owner', async () => {
    const [one, two] = environments;
    const registered = await api(apiUrl(), '/tunnel/shares/register', publicOAuthShare, {
      token: one.environmentToken,
    });
    expect(registered.status).toBe(200);
    await connected(agentTunnel(one.environmentToken, backends[0]));

    const jar = new CookieJar();
    const login = await devInteractionsLogin({ start: shareAt('/inbox'), jar, login: 'alice@example.com' });
    expect(login.reply.status).toBe(200);
    const seenByOne = JSON.parse(login.reply.body) as { headers: Record<string, string> };
    expect(seenByOne.headers['svc-auth-email']).toBe('alice@example.com');

    const withdrawn = await api(
      apiUrl(),
      '/tunnel/shares/unregister',
      { token: TOKEN },
      {
        token: one.environmentToken,
      },
    );
    expect(withdrawn.status).toBe(200);

    // Account 2, through the API an agent publishes with, and through the reconcile of a
    // returning agent: both refused while the token is quarantined.
    await tally.run(async () => {
      const taken = await api(apiUrl(), '/tunnel/shares/register', publicOAuthShare, { token: two.environmentToken });
      expect(taken.status).toBe(409);
      expect(taken.body).toMatchObject({ code: 'share_token_quarantined' });
      expect(JSON.stringify(taken.body)).toMatch(/was freed by another account.*until \d{4}-\d\d-\d\dT/);
    });
    await tally.run(async () => {
      const synced = await api(
        apiUrl(),
        '/tunnel/shares/sync',
        { shares: [publicOAuthShare] },
        {
          token: two.environmentToken,
        },
      );
      expect(synced.status).toBe(200);
      expect(synced.body).toMatchObject({ shares: [], refused: [{ token: TOKEN, code: 'share_token_quarantined' }] });
    });
    expect(registry.lookup(TOKEN)).toBeUndefined();

    // After the quarantine, account 2 may have the token: it is a new share, and alice's session
    // for the old one is not accepted there (a new login is asked for).
    clock.advance(TOKEN_QUARANTINE_MS + 1_000);
    const handedOver = await api(apiUrl(), '/tunnel/shares/register', publicOAuthShare, {
      token: two.environmentToken,
    });
    expect(handedOver.status).toBe(200);
    await connected(agentTunnel(two.environmentToken, backends[1]));
    await tally.run(async () => {
      const visit = await request(shareAt('/inbox'), { headers: { cookie: jar.header(shareAt()) ?? '' } });
      expect(visit.status).toBe(302);
      const start = new URL(String(visit.headers.location));
      const started = await request(start, { headers: { cookie: jar.header(start) ?? '' } });
      expect(started.status).toBe(302);
      expect(new URL(String(started.headers.location)).origin).toBe(new URL(dev.loginUrl).origin);
      expect(backends[1].seen.filter((s) => s.headers['svc-auth-email'] !== undefined)).toEqual([]);
    });
    await tally.run(async () => {
      const upgrade = await upgradeWith(installation.frontend.port, shareAt().host, jar.header(shareAt()) ?? '');
      expect(upgrade.status).toBe(401);
      expect(backends[1].seen).toEqual([]);
    });
  }, 60_000);
});

/**
 * The frontend on its own: one installation's keys and domain, the token `reused` served first by one
 * share (`instance: first-share`) and then, the config changed, by another (`second-share`, another
 * backend). Two frontends with the same keys stand for before and after.
 */
describe('a session or a login made for one share instance', () => {
  const tally = figures.attackClass(
    'Session or login state replayed on a later share with the same token (another share instance)',
    'sessions and login states named only the token; now they carry the share instance, and another instance asks for a new login',
  );
  let idp1: Idp1Server;
  let before: TestFrontend;
  let after: TestFrontend;
  let oldBackend: EchoBackend;
  let newBackend: EchoBackend;
  const reused = (instance: string, backend: EchoBackend) => ({
    token: 'reused',
    instance,
    target: backend.url.href,
    oauth_provider: 'idp1',
  });

  beforeAll(async () => {
    [idp1, oldBackend, newBackend] = await Promise.all([startIdp1Server(), startEchoBackend(), startEchoBackend()]);
    before = await startTestFrontend({
      providers: [idp1.providerConfig('idp1')],
      shares: [reused('first-share', oldBackend)],
    });
    after = await startTestFrontend({
      providers: [idp1.providerConfig('idp1')],
      shares: [reused('second-share', newBackend)],
    });
    idp1.redirectUris = [before, after].map((f) => `http://${f.authHost}/idp1/auth/callback`);
  });

  afterAll(async () => {
    await Promise.all([before?.close(), after?.close()]);
    await Promise.all([idp1?.close(), oldBackend?.close(), newBackend?.close()]);
  });

  it('a session for the first share is refused by the second: a new login, nothing reaches its backend', async () => {
    idp1.nextUser = { email: 'alice@example.com', email_verified: true };
    const { authorizeUrl, loginCookie } = await startLogin(before, 'reused');
    const done = await callback(before, await idp1.authorize(authorizeUrl), loginCookie);
    expect(done.status).toBe(302);
    const cookie = cookiesFrom(done);
    const own = await get(before.port, before.host('reused'), '/', { headers: { cookie } });
    expect(own.status).toBe(200);
    expect((JSON.parse(own.body) as { headers: Record<string, string> }).headers['svc-auth-email']).toBe(
      'alice@example.com',
    );

    await tally.run(async () => {
      const visit = await get(after.port, after.host('reused'), '/', { headers: { cookie } });
      expect(visit.status).toBe(302);
      expect(new URL((await providerRedirect(after, visit)).headers.location ?? '').origin).toBe(
        new URL(idp1.url).origin,
      );
    });
    await tally.run(async () => {
      const upgrade = await upgradeWith(after.port, after.host('reused'), cookie);
      expect(upgrade.status).toBe(401);
    });
    expect(newBackend.seen).toEqual([]);
  });

  it('a login started for the first share does not complete on the second', async () => {
    await tally.run(async () => {
      idp1.nextUser = { email: 'alice@example.com', email_verified: true };
      const { authorizeUrl, loginCookie } = await startLogin(before, 'reused');
      const back = await idp1.authorize(authorizeUrl);
      const done = await get(after.port, after.authHost, `${back.pathname}${back.search}`, {
        headers: { cookie: loginCookie },
      });
      expect(done.status).toBe(400);
      expect(done.body).toMatch(/replaced by another share/);
      expect((done.headers['set-cookie'] ?? []).some((c) => c.startsWith('svc-auth-session='))).toBe(false);
    });
    expect(newBackend.seen).toEqual([]);
  });
});
