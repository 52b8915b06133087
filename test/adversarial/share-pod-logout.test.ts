import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sharePodOAuthSection } from '../../lib/config/share-pod.ts';
import type { ShareIdentity } from '../../lib/share-keys.ts';
import { createSealer } from '../../sidecar/seal.ts';
import type { Session } from '../../sidecar/session.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { spawnFrontend, type FrontendProcess } from '../support/frontend-process.ts';
import { TEST_ENCRYPTION_KEY, TEST_SIGNING_KEY } from '../support/frontend.ts';
import { get, type Reply } from '../support/http.ts';
import { issuerProvider } from '../support/issuer-login.ts';
import { testSession } from '../support/session.ts';
import { authEndpointSection, loginAtSharePod, sessionPair, type SharePodShape } from '../support/share-pod-login.ts';
import { startTestIssuer, type TestIssuer } from '../support/test-issuer.ts';
import { until } from '../support/until.ts';

/**
 * Logout at a Kubernetes share pod, which holds no client secret: the seed's rule 1 (the token is
 * revoked at the provider) holds through the auth endpoint's internal port. Real processes: the
 * auth endpoint and share alpha's pod, each a `svc frontend` started from the config the operator
 * writes (the pod's made by lib/config/share-pod.ts), and the test issuer recording revocations.
 * Only alpha's credential with a session entry of alpha revokes; share beta's material (its pod's
 * config, which beta's tenant can read) and a visitor's cookie alone revoke nothing.
 */
const figures = suiteFigures('share-pod-logout');
const forgery = figures.attackClass(
  'Revoking a share’s session tokens at the internal port without that share’s credential and session entry',
  'a share pod’s logout cleared the cookie but revoked nothing (no client secret in the pod); it now asks the auth endpoint, which accepts only the share’s credential with a session entry of that share',
);

const DOMAIN = 'svc.localhost';
const ENDPOINT = `http://auth.${DOMAIN}:8080`;
const ALPHA: ShareIdentity = { token: 'alpha', instance: 'uid-alpha-1' };
const BETA: ShareIdentity = { token: 'beta', instance: 'uid-beta-1' };
const KEYS = { signingKey: TEST_SIGNING_KEY, encryptionKey: TEST_ENCRYPTION_KEY };

let issuer: TestIssuer;
let backend: EchoBackend;
let auth: FrontendProcess;
let pod: FrontendProcess;
/** A second pod of share alpha whose auth endpoint URL leads nowhere (a closed port). */
let cutOff: FrontendProcess;
let internalPort = 0;
let shape: SharePodShape;
let sections: Record<'alpha' | 'beta', Record<string, unknown>>;

const shareEntry = (share: ShareIdentity) => ({ ...share, target: backend.url.href, oauth_provider: 'corp' });

beforeAll(async () => {
  issuer = await startTestIssuer();
  backend = await startEchoBackend();
  const dir = mkdtempSync(join(tmpdir(), 'svc-share-pod-logout-'));
  const installation = { ...authEndpointSection(DOMAIN, [issuerProvider(issuer, 'corp')]), endpoint_url: ENDPOINT };
  const file = (name: string, doc: object): string => {
    const path = join(dir, `${name}.yaml`);
    writeFileSync(path, JSON.stringify(doc));
    return path;
  };
  auth = await spawnFrontend(file('auth', { oauth: installation, shares: [shareEntry(ALPHA), shareEntry(BETA)] }));
  await until(() => /internal port listening/.test(auth.stderr()), 'the auth endpoint’s internal port');
  internalPort = Number(/"port":(\d+)[^\n]*internal port listening/.exec(auth.stderr())?.[1]);
  const internalUrl = `http://127.0.0.1:${internalPort}`;
  sections = {
    alpha: sharePodOAuthSection(installation, KEYS, ALPHA, internalUrl),
    beta: sharePodOAuthSection(installation, KEYS, BETA, internalUrl),
  };
  pod = await spawnFrontend(file('alpha', { oauth: sections.alpha, shares: [shareEntry(ALPHA)] }));
  const nowhere = sharePodOAuthSection(installation, KEYS, ALPHA, 'http://127.0.0.1:9');
  cutOff = await spawnFrontend(file('alpha-cut-off', { oauth: nowhere, shares: [shareEntry(ALPHA)] }));
  shape = { podPort: pod.port, authPort: auth.port, shareHost: `alpha.${DOMAIN}:8080`, provider: 'corp' };
}, 30_000);

afterAll(async () => {
  figures.write();
  for (const child of [pod?.child, cutOff?.child, auth?.child]) child?.kill('SIGTERM');
  await Promise.all([issuer?.close(), backend?.close()]);
});

beforeEach(() => issuer.reset());

const credentialOf = (share: 'alpha' | 'beta'): string =>
  (sections[share].auth_service as { credential: string }).credential;
const entryOf = (cookie: string): string => sessionPair(cookie).replace(/^svc-auth-session=alpha~/, '');
const logout = (cookie: string): Promise<Reply> =>
  get(pod.port, shape.shareHost, '/corp/logout', { headers: { cookie: sessionPair(cookie) } });

/** An internal call as a share pod makes it: `svc-share` names the share, the credential as a bearer token. */
function internalCall(path: string, share: string, credential: string | undefined, entry: string): Promise<Reply> {
  return get(internalPort, `127.0.0.1:${internalPort}`, path, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'svc-share': share,
      ...(credential === undefined ? {} : { authorization: `Bearer ${credential}` }),
    },
    body: JSON.stringify({ session: entry }),
  });
}

describe('logout at a share pod', () => {
  it('revokes the session’s tokens once, through the auth endpoint, and clears the cookie', async () => {
    const { cookie } = await loginAtSharePod(shape, issuer);
    expect(sessionPair(cookie)).toMatch(/^svc-auth-session=alpha~/);
    const out = await logout(cookie);
    expect(out.status).toBe(302);
    expect(out.headers['set-cookie']).toContainEqual(expect.stringMatching(/^svc-auth-session=; .*Max-Age=0/));
    expect(issuer.revocations).toEqual([
      { hint: 'refresh_token', token: 'refresh-token-secret' },
      { hint: 'access_token', token: 'access-token-secret' },
    ]);
    // Idempotent: again at the pod (no error), and the same entry sent again to the auth endpoint.
    expect((await logout(cookie)).status).toBe(302);
    const again = await internalCall('/internal/v1/revoke', 'alpha', credentialOf('alpha'), entryOf(cookie));
    expect([again.status, JSON.parse(again.body)]).toEqual([200, { result: 'revoked' }]);
    expect(issuer.revocations).toHaveLength(2);
    // Logged out at the auth endpoint: the pod's copy of the session is not renewed there.
    const renew = await internalCall('/internal/v1/renew', 'alpha', credentialOf('alpha'), entryOf(cookie));
    expect(JSON.parse(renew.body)).toEqual({ result: 'ended', code: 'invalid_token' });
    expect(pod.stderr()).toContain('logout: token revoked');
    expect(auth.stderr()).toContain('share pod logout: token revoked');
    for (const secret of ['refresh-token-secret', 'access-token-secret'])
      expect(pod.stderr() + auth.stderr()).not.toContain(secret);
  });

  it('clears the cookie when the provider refuses the revocation, and logs why', async () => {
    const { cookie } = await loginAtSharePod(shape, issuer);
    issuer.behaviour.revocation = () => 503;
    const out = await logout(cookie);
    expect(out.status).toBe(302);
    expect(out.headers['set-cookie']).toContainEqual(expect.stringMatching(/^svc-auth-session=; .*Max-Age=0/));
    expect(issuer.revocations).toHaveLength(2);
    expect(pod.stderr()).toMatch(/revocation through the auth endpoint failed[^\n]*provider_unreachable/);
    expect(auth.stderr()).toMatch(/"code":"provider_unreachable"[^\n]*share pod logout: revocation failed/);
    // The session is over at the pod whatever the provider said.
    expect((await get(pod.port, shape.shareHost, '/page', { headers: { cookie: sessionPair(cookie) } })).status).toBe(
      302,
    );
    figures.fault({
      fault:
        'Identity provider failing token revocation at a share pod’s logout (oidc, HTTP 503, through the auth endpoint)',
      injections: 2,
      outcome:
        'the cookie cleared and the session refused at the pod; the failure logged at the pod and the auth endpoint by code, no token',
      lost: 0,
    });
  });

  it('asks the provider again when a revocation retry follows its failure (503, then OK)', async () => {
    const { cookie } = await loginAtSharePod(shape, issuer);
    issuer.behaviour.revocation = () => 503;
    expect((await logout(cookie)).status).toBe(302);
    expect(issuer.revocations).toHaveLength(2);
    issuer.behaviour.revocation = () => 200;
    const retry = await internalCall('/internal/v1/revoke', 'alpha', credentialOf('alpha'), entryOf(cookie));
    expect([retry.status, JSON.parse(retry.body)]).toEqual([200, { result: 'revoked' }]);
    expect(issuer.revocations.slice(2)).toEqual([
      { hint: 'refresh_token', token: 'refresh-token-secret' },
      { hint: 'access_token', token: 'access-token-secret' },
    ]);
    // Revoked now: a further retry does not ask again, and the session stays logged out.
    await internalCall('/internal/v1/revoke', 'alpha', credentialOf('alpha'), entryOf(cookie));
    expect(issuer.revocations).toHaveLength(4);
    const renew = await internalCall('/internal/v1/renew', 'alpha', credentialOf('alpha'), entryOf(cookie));
    expect(JSON.parse(renew.body)).toEqual({ result: 'ended', code: 'invalid_token' });
    figures.fault({
      fault: 'Identity provider failing token revocation (HTTP 503), then the share pod’s retry with the same entry',
      injections: 2,
      outcome: `the retry asked the provider again: ${issuer.revocations.length - 2} revocations accepted, answered revoked`,
      lost: 0,
    });
  });

  it('clears the cookie when the auth endpoint cannot be reached, and logs why', async () => {
    const { cookie } = await loginAtSharePod({ ...shape, podPort: cutOff.port }, issuer);
    expect(sessionPair(cookie)).toMatch(/^svc-auth-session=alpha~/);
    const out = await get(cutOff.port, shape.shareHost, '/corp/logout', { headers: { cookie: sessionPair(cookie) } });
    expect(out.status).toBe(302);
    expect(out.headers['set-cookie']).toContainEqual(expect.stringMatching(/^svc-auth-session=; .*Max-Age=0/));
    expect(issuer.revocations).toEqual([]);
    expect(cutOff.stderr()).toMatch(/"code":"provider_unreachable"[^\n]*the auth endpoint cannot be reached/);
    figures.fault({
      fault: 'Auth endpoint unreachable from a share pod at logout (connection refused)',
      injections: 1,
      outcome: 'the cookie cleared; the failure logged at the pod as provider_unreachable, no token',
      lost: 0,
    });
  });
});

describe('revoke calls another share, a tenant or a visitor can make', () => {
  /** The call is refused with `status` and the issuer is asked nothing; the session still works at the pod. */
  async function refused(call: (entry: string) => Promise<Reply>, status: number): Promise<void> {
    const { cookie } = await loginAtSharePod(shape, issuer);
    const reply = await call(entryOf(cookie));
    expect(reply.status).toBe(status);
    expect(issuer.revocations).toEqual([]);
    expect((await get(pod.port, shape.shareHost, '/page', { headers: { cookie: sessionPair(cookie) } })).status).toBe(
      200,
    );
  }
  const betaSealer = () => createSealer(sections.beta.signing_key as string, sections.beta.encryption_key as string);
  const alphaSession = (): Session =>
    testSession({ share: ALPHA.token, instance: ALPHA.instance, provider: 'corp', email: 'mallory@example.com' });

  it('a visitor holding the session cookie but no credential', () =>
    forgery.run(() => refused((entry) => internalCall('/internal/v1/revoke', 'alpha', undefined, entry), 401)));

  it('beta’s credential naming alpha, and a wrong credential', () =>
    forgery.run(async () => {
      await refused((entry) => internalCall('/internal/v1/revoke', 'alpha', credentialOf('beta'), entry), 401);
      await refused((entry) => internalCall('/internal/v1/revoke', 'alpha', `${credentialOf('alpha')}x`, entry), 401);
    }));

  it('beta’s credential naming beta with alpha’s entry (it does not open as beta’s)', () =>
    forgery.run(() =>
      refused((entry) => internalCall('/internal/v1/revoke', 'beta', credentialOf('beta'), entry), 400),
    ));

  it('a session of alpha sealed with beta’s keys, even with alpha’s credential', () =>
    forgery.run(async () => {
      const forged = betaSealer().seal('session', alphaSession(), Date.now() + 3600_000);
      await refused(() => internalCall('/internal/v1/revoke', 'alpha', credentialOf('alpha'), forged), 400);
      await refused(() => internalCall('/internal/v1/revoke', 'beta', credentialOf('beta'), forged), 400);
    }));

  it('the public listener does not serve the revoke call', () =>
    forgery.run(() =>
      refused(
        (entry) =>
          get(auth.port, `auth.${DOMAIN}:8080`, '/internal/v1/revoke', {
            method: 'POST',
            headers: { 'svc-share': 'alpha', authorization: `Bearer ${credentialOf('alpha')}` },
            body: JSON.stringify({ session: entry }),
          }),
        404,
      ),
    ));
});
