import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFrontendConfig, type FrontendConfig } from '../../lib/config/frontend.ts';
import { createLogger } from '../../lib/logger.ts';
import type { ShareIdentity } from '../../lib/share-keys.ts';
import { staticShares } from '../../lib/share/source.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { HandOvers } from '../../sidecar/handover.ts';
import { createSealer, type Sealer } from '../../sidecar/seal.ts';
import { sessionCookies } from '../../sidecar/session.ts';
import { installationKeyRing, shareKeyRing } from '../../sidecar/share-keys.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { LogCapture } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { testSession } from '../support/session.ts';
import { startTestIssuer, type TestIssuer } from '../support/test-issuer.ts';
import { AUTH_SECRET, authShareEntries } from './auth-config-files.ts';
import type { ControlPlane } from './envtest.ts';
import {
  DOMAIN,
  RELEASE_NS,
  SECRET_VALUES,
  api,
  decodeSecret,
  eventually,
  getOrNone,
  oauthSection,
  paths,
  startCluster,
  startTestOperator,
  writeFrontendSecret,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';

/**
 * What a tenant namespace holds, on a real API server: two OAuth Shares in two namespaces, the
 * operator writing their children. Everything namespace A holds (every Secret and ConfigMap, as a
 * tenant who may read Secrets there sees it) contains none of the installation's secrets, and with
 * it no session for the share in namespace B can be opened or made, nor a login for it started:
 * B's sidecar (started from the config the operator wrote into namespace B) and the auth endpoint
 * (started from the config the operator wrote into the release namespace) refuse it.
 */
const figures = suiteFigures('tenant-namespace');
const forgery = figures.attackClass(
  'A tenant namespace’s Secrets used against another namespace’s share (open, mint, start a login, renew)',
  'each OAuth share’s namespace held the installation’s client secret, signing and encryption keys (one Secret per share); now only keys derived for that share and a credential for the auth endpoint’s internal port',
);

const TEAM_A = 'team-a';
const TEAM_B = 'team-b';
let cp: ControlPlane;
let operator: TestOperator;
let issuer: TestIssuer;
let backend: EchoBackend;
let shareA: ShareIdentity;
let shareB: ShareIdentity;
let tenantA: { secrets: Obj[]; configMaps: Obj[] };
let configA: FrontendConfig;
let sidecarB: RunningFrontend;
let authEndpoint: RunningFrontend;
const running: RunningFrontend[] = [];

const shareSpec = (token: string) => ({
  backendMode: 'proxy',
  target: 'http://app.internal.svc',
  token,
  oauth: { provider: 'dev', checkInterval: '30m' },
});

/** A frontend config the operator wrote, listening on loopback port 0 (and its share at `target`). */
function loopback(text: string, target?: URL): Record<string, unknown> {
  const doc = parseYaml(text) as { oauth: Record<string, unknown>; shares: Record<string, unknown>[] };
  delete doc.oauth.internal_address;
  const oauth = { ...doc.oauth, bind_address: '127.0.0.1:0' };
  const shares = target ? doc.shares.map((s) => ({ ...s, target: target.href })) : doc.shares;
  return { oauth, shares };
}

async function start(doc: Record<string, unknown>, internal = false): Promise<RunningFrontend> {
  const parsed = parseFrontendConfig({
    ...doc,
    oauth: { ...(doc.oauth as object), ...(internal ? { internal_address: '127.0.0.1:0' } : {}) },
  });
  const fe = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: parsed.oauth.endpointUrl,
    domain: parsed.oauth.cookieDomain,
    oauth: parsed.oauth,
    shares: staticShares(parsed.shares),
    logger: createLogger('tenant-test', { level: 'debug', destination: new LogCapture() }),
  });
  running.push(fe);
  return fe;
}

beforeAll(async () => {
  [issuer, backend] = await Promise.all([startTestIssuer(), startEchoBackend()]);
  cp = await startCluster();
  await writeFrontendSecret(cp, oauthSection(issuer.issuer));
  for (const name of [TEAM_A, TEAM_B])
    await api(cp, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name } } });
  operator = await startTestOperator(cp);
  const created = await Promise.all(
    [
      [TEAM_A, 'docs', 'alpha-docs'],
      [TEAM_B, 'docs', 'beta-docs'],
    ].map(([ns, name, token]) =>
      api(cp, paths.shares(ns), {
        method: 'POST',
        body: {
          apiVersion: 'svc.dev/v1alpha1',
          kind: 'Share',
          metadata: { name, namespace: ns },
          spec: shareSpec(token as string),
        },
      }),
    ),
  );
  shareA = { token: 'alpha-docs', instance: created[0]?.metadata.uid ?? '' };
  shareB = { token: 'beta-docs', instance: created[1]?.metadata.uid ?? '' };
  const secretA = await eventually(
    () => getOrNone(cp, paths.secret('svc-share-docs-frontend', TEAM_A)),
    'A sidecar config',
  );
  const secretB = await eventually(
    () => getOrNone(cp, paths.secret('svc-share-docs-frontend', TEAM_B)),
    'B sidecar config',
  );
  // The auth endpoint's config: its oauth section with the shares of its shard Secrets.
  const authShares = await eventually(async () => {
    const entries = await authShareEntries(cp);
    const tokens = entries.map((e) => e.token);
    return tokens.includes('alpha-docs') && tokens.includes('beta-docs') ? entries : undefined;
  }, 'auth endpoint shards listing both shares');
  const authConfig = parseYaml(
    decodeSecret(await api(cp, paths.secret(AUTH_SECRET, RELEASE_NS)), 'config.yaml'),
  ) as object;
  const authSecret = toYaml({ ...authConfig, shares: authShares });

  // As a tenant of namespace A sees it: every Secret and ConfigMap there.
  const list = async (kind: string) =>
    ((await api(cp, `/api/v1/namespaces/${TEAM_A}/${kind}`)) as { items?: Obj[] }).items ?? [];
  tenantA = { secrets: await list('secrets'), configMaps: await list('configmaps') };
  configA = parseFrontendConfig(parseYaml(decodeSecret(secretA, 'config.yaml')));
  sidecarB = await start(loopback(decodeSecret(secretB, 'config.yaml'), backend.url));
  authEndpoint = await start(loopback(authSecret), true);
}, 180_000);

afterAll(async () => {
  figures.write();
  await Promise.all(running.map((fe) => fe.close()));
  await operator?.close();
  await cp?.stop();
  await Promise.all([issuer?.close(), backend?.close()]);
});

const visitB = (cookie: string) =>
  get(sidecarB.port, `beta-docs.${DOMAIN}:${sidecarB.port}`, '/', { headers: { cookie } });

/** A genuine session for share B, as the auth endpoint (installation keys) makes it at a login. */
function genuineB(): string {
  const cookies = sessionCookies(
    installationKeyRing({ signingKey: SECRET_VALUES.signingKey, encryptionKey: SECRET_VALUES.encryptionKey }),
    'svc-auth-session',
    { secure: false },
  );
  const session = testSession({
    share: shareB.token,
    instance: shareB.instance,
    provider: 'dev',
    email: 'bob@example.com',
  });
  return cookies.write(session, undefined).split(';')[0] ?? '';
}

/** The auth endpoint's start path as a browser follows a share host's login redirect to it. */
const startAtAuthEndpoint = (start: URL) => get(authEndpoint.port, start.host, `${start.pathname}${start.search}`);

/**
 * B's sidecar does not serve the cookie: it sends the visitor to a new login, which starts on the
 * auth endpoint's host (the ticket B's sidecar made with B's keys opens there) and goes on to the
 * provider.
 */
async function refusedByB(cookie: string): Promise<void> {
  const seen = backend.seen.length;
  const reply = await visitB(cookie);
  expect(reply.status).toBe(302);
  const start = new URL(reply.headers.location ?? '');
  expect(`${start.origin}${start.pathname}`).toBe(new URL('/dev/auth/start', authEndpoint.endpointUrl).href);
  expect(start.searchParams.get('ticket')).toMatch(/^beta-docs~/);
  const started = await startAtAuthEndpoint(start);
  expect(started.status).toBe(302);
  expect(new URL(started.headers.location ?? '').origin).toBe(issuer.issuer);
  expect(backend.seen.length).toBe(seen);
}

describe('what a tenant namespace holds', () => {
  it('none of the installation’s secrets, in any Secret or ConfigMap of namespace A', () => {
    expect(tenantA.secrets.map((s) => s.metadata.name)).toContain('svc-share-docs-frontend');
    const everything = [...tenantA.secrets, ...tenantA.configMaps]
      .flatMap((o) => [
        JSON.stringify(o),
        ...Object.values(o.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8')),
      ])
      .join('\n');
    for (const value of Object.values(SECRET_VALUES)) expect(everything).not.toContain(value);
    // What it does hold: its own share's section (the auth endpoint's internal URL, its credential).
    expect(configA.oauth.authService?.url.href).toBe('http://svc-auth-internal.svc-system.svc:8081/');
    expect(configA.oauth.providers.every((p) => p.clientSecret === '')).toBe(true);
    expect(configA.shares.map((s) => [s.token, s.instance])).toEqual([[shareA.token, shareA.instance]]);
  });

  it('B’s sidecar serves B’s genuine session (the control case)', async () => {
    const reply = await visitB(genuineB());
    expect(reply.status).toBe(200);
    expect(backend.seen.at(-1)?.headers['svc-auth-email']).toBe('bob@example.com');
  });

  /** A's keys as a forger would try them: as a share's own keys, and as installation keys to derive B's from. */
  const ringsOfA = () => {
    const keys = { signingKey: configA.oauth.signingKey, encryptionKey: configA.oauth.encryptionKey };
    return [shareKeyRing(keys, () => true), installationKeyRing(keys)];
  };

  it('cannot open B’s session with A’s keys', () =>
    forgery.run(() => {
      for (const ring of ringsOfA()) {
        const withA = sessionCookies(ring, 'svc-auth-session', { secure: false });
        expect(withA.read(genuineB(), shareB)).toBeUndefined();
        expect(withA.readAll(genuineB(), () => shareB.instance)).toEqual([]);
      }
    }));

  it('cannot make a session B’s sidecar accepts with A’s keys', () =>
    forgery.run(async () => {
      for (const ring of ringsOfA()) {
        const withA = sessionCookies(ring, 'svc-auth-session', { secure: false });
        const eve = testSession({
          share: shareB.token,
          instance: shareB.instance,
          provider: 'dev',
          email: 'eve@example.com',
        });
        await refusedByB(withA.write(eve, undefined).split(';')[0] ?? '');
      }
      const sealer = createSealer(configA.oauth.signingKey, configA.oauth.encryptionKey);
      const ownA = testSession({ share: shareA.token, instance: shareA.instance, provider: 'dev' });
      await refusedByB(`svc-auth-session=beta-docs~${sealer.seal('session', ownA, ownA.expiresAt)}`);
    }));

  it('cannot hand B’s sidecar a session with A’s keys', () =>
    forgery.run(async () => {
      for (const ring of ringsOfA()) {
        // A hand-over bound to this very browser, so only the keys can be what refuses it.
        const handOvers = new HandOvers(ring, 'svc-auth-session', false, 60_000);
        const binding = handOvers.bind(undefined);
        const eve = testSession({
          share: shareB.token,
          instance: shareB.instance,
          provider: 'dev',
          email: 'eve@example.com',
        });
        const path = `/dev/auth/handover?ticket=${encodeURIComponent(handOvers.ticket(eve, binding.digest, '/'))}`;
        const reply = await get(sidecarB.port, `beta-docs.${DOMAIN}:${sidecarB.port}`, path, {
          headers: { cookie: binding.setCookie.split(';')[0] ?? '' },
        });
        expect(reply.status).toBe(400);
        expect(reply.body).toContain('the sign-in link is invalid or expired');
        expect(reply.headers['set-cookie']).toBeUndefined();
      }
    }));

  it('cannot start a login for B at the auth endpoint with A’s keys', () =>
    forgery.run(async () => {
      const ticket = { provider: 'dev', share: shareB.token, instance: shareB.instance, path: '/' };
      for (const ring of ringsOfA()) {
        const sealer = ring.sealerFor(shareB) as Sealer;
        const start = new URL('/dev/auth/start', authEndpoint.endpointUrl);
        start.searchParams.set('ticket', `beta-docs~${sealer.seal('start', ticket, Date.now() + 60_000)}`);
        const reply = await startAtAuthEndpoint(start);
        expect(reply.status).toBe(400);
        expect(reply.body).toContain('the login link is invalid or expired, or its share was replaced');
        expect(reply.headers['set-cookie']).toBeUndefined();
      }
    }));

  it('cannot have the auth endpoint renew B’s session with A’s credential', () =>
    forgery.run(async () => {
      const entry = genuineB().slice('svc-auth-session=beta-docs~'.length);
      const renew = (share: string) =>
        get(authEndpoint.internalPort as number, `127.0.0.1:${authEndpoint.internalPort}`, '/internal/v1/renew', {
          method: 'POST',
          headers: {
            'svc-share': share,
            authorization: `Bearer ${configA.oauth.authService?.credential ?? ''}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ session: entry }),
        });
      expect((await renew('beta-docs')).status).toBe(401);
      expect((await renew('alpha-docs')).status).toBe(400);
    }));
});
