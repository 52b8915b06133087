import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { startFrontendAndStranger, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get, type Reply } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { startIdp2Server, type Idp2Server } from '../support/idp2-server.ts';
import { callback, shareUrl, startLogin } from '../support/oauth-flow.ts';

/**
 * Abuse of `/<provider>/auth/callback` against a running frontend and two real provider servers
 * (idp1 and idp2 contracts): every refused callback must leave the browser without a session, the
 * provider's token endpoint untouched where the state already fails, and a clear page.
 */
const figures = suiteFigures('callback');
let idp1: Idp1Server;
let idp2: Idp2Server;
let backend: EchoBackend;
let fe: TestFrontend;
let otherKeys: TestFrontend;

beforeAll(async () => {
  [idp1, idp2, backend] = await Promise.all([startIdp1Server(), startIdp2Server(), startEchoBackend()]);
  const shares = [
    { token: 'one', target: backend.url.href, oauth_provider: 'idp1' },
    { token: 'uno', target: backend.url.href, oauth_provider: 'idp1' },
    { token: 'two', target: backend.url.href, oauth_provider: 'idp2' },
  ];
  const providers = [idp1.providerConfig('idp1'), idp2.providerConfig('idp2')];
  [fe, otherKeys] = await startFrontendAndStranger({ providers, shares });
  idp1.redirectUris = [fe, otherKeys].map((f) => `http://${f.authHost}/idp1/auth/callback`);
  idp2.redirectUris = [fe, otherKeys].map((f) => `http://${f.authHost}/idp2/auth/callback`);
});

afterAll(async () => {
  figures.write();
  await Promise.all([fe?.close(), otherKeys?.close()]);
  await Promise.all([idp1?.close(), idp2?.close(), backend?.close()]);
});

const callbacks = figures.attackClass(
  'Callback abuse (state missing/wrong/expired/foreign, replayed code, provider mix-up, access_denied, two tabs)',
  'a second tab’s login overwrote the first’s login cookie, so the first tab’s login failed; the cookie now holds every login under way',
);

/** A refused callback: a 4xx/5xx page, no session cookie set, nothing proxied afterwards. */
function expectRefused(reply: Reply, status: number, text: string): void {
  expect(reply.status).toBe(status);
  expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(reply.body).toContain(text);
  expect((reply.headers['set-cookie'] ?? []).filter((c) => /^svc-auth-session=[^;]/.test(c))).toEqual([]);
}

const callbackAt = (provider: string, query: string, cookie?: string): Promise<Reply> =>
  get(fe.port, fe.authHost, `/${provider}/auth/callback${query}`, cookie ? { headers: { cookie } } : {});

describe('state', () => {
  it.each([
    ['no state and no code', ''],
    ['a code but no state', '?code=4/abc'],
    ['an empty state', '?code=4/abc&state='],
    ['garbage state', '?code=4/abc&state=not-a-state'],
    ['a state of the wrong alphabet', '?code=4/abc&state=%00%0d%0a'],
    ['a huge state', `?code=4/abc&state=${'A'.repeat(9000)}`],
  ])('refuses %s before any exchange', (_what, query) =>
    callbacks.run(async () => {
      const exchanges = idp1.tokenRequests.length;
      expectRefused(await callbackAt('idp1', query), 400, 'Login failed');
      expect(idp1.tokenRequests.length).toBe(exchanges);
    }),
  );

  it('refuses a state whose bits were flipped', () =>
    callbacks.run(async () => {
      const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
      const back = await idp1.authorize(authorizeUrl);
      const state = back.searchParams.get('state') ?? '';
      const flipped = state.slice(0, 20) + (state[20] === 'A' ? 'B' : 'A') + state.slice(21);
      back.searchParams.set('state', flipped);
      expectRefused(await callback(fe, back, loginCookie), 400, 'invalid or expired');
    }));

  it('refuses a state minted by a frontend with other keys', () =>
    callbacks.run(async () => {
      const foreign = await startLogin(otherKeys, 'one');
      const back = await idp1.authorize(foreign.authorizeUrl);
      const reply = await callbackAt('idp1', back.search, foreign.loginCookie);
      expectRefused(reply, 400, 'invalid or expired');
    }));

  it('refuses an expired state (intermediate_lifetime passed)', () =>
    callbacks.run(async () => {
      const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
      const back = await idp1.authorize(authorizeUrl);
      fe.clock.advance(5 * 60_000 + 1_000);
      expectRefused(await callback(fe, back, loginCookie), 400, 'invalid or expired');
    }));

  it('refuses a valid state without the login cookie of the browser that started it (login fixation)', () =>
    callbacks.run(async () => {
      const { authorizeUrl } = await startLogin(fe, 'one');
      const victim = await startLogin(fe, 'one');
      const back = await idp1.authorize(authorizeUrl);
      expectRefused(await callback(fe, back, ''), 400, 'started in another browser');
      expectRefused(await callback(fe, back, victim.loginCookie), 400, 'started in another browser');
    }));

  it('refuses the session cookie or the state sealed for one purpose when used for another', () =>
    callbacks.run(async () => {
      const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
      const back = await idp1.authorize(authorizeUrl);
      const loginValue = loginCookie.split('=')[1] ?? '';
      const asState = new URL(back.href);
      asState.searchParams.set('state', loginValue);
      expectRefused(await callback(fe, asState, loginCookie), 400, 'invalid or expired');
      const stateAsCookie = `svc-auth-session-login=${back.searchParams.get('state') ?? ''}`;
      expectRefused(await callback(fe, back, stateAsCookie), 400, 'started in another browser');
    }));
});

describe('codes', () => {
  it('refuses a replayed callback (same URL, same cookie) after a successful login', () =>
    callbacks.run(async () => {
      const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
      const back = await idp1.authorize(authorizeUrl);
      expect((await callback(fe, back, loginCookie)).status).toBe(302);
      const exchanges = idp1.tokenRequests.length;
      expectRefused(await callback(fe, back, loginCookie), 400, 'already used');
      expect(idp1.tokenRequests.length).toBe(exchanges);
    }));

  it('refuses a used code replayed inside a fresh login of the attacker', () =>
    callbacks.run(async () => {
      const victim = await startLogin(fe, 'one');
      const victimBack = await idp1.authorize(victim.authorizeUrl);
      expect((await callback(fe, victimBack, victim.loginCookie)).status).toBe(302);
      const attacker = await startLogin(fe, 'one');
      const attackerBack = await idp1.authorize(attacker.authorizeUrl);
      attackerBack.searchParams.set('code', victimBack.searchParams.get('code') ?? '');
      expectRefused(await callback(fe, attackerBack, attacker.loginCookie), 502, 'invalid_grant');
      expect(idp1.tokenRequests.at(-1)?.error).toBe('invalid_grant');
    }));

  it('refuses a code stolen before use, redeemed by another browser (PKCE verifier differs)', () =>
    callbacks.run(async () => {
      const victim = await startLogin(fe, 'one');
      const stolen = (await idp1.authorize(victim.authorizeUrl)).searchParams.get('code') ?? '';
      const attacker = await startLogin(fe, 'one');
      const attackerBack = await idp1.authorize(attacker.authorizeUrl);
      attackerBack.searchParams.set('code', stolen);
      expectRefused(await callback(fe, attackerBack, attacker.loginCookie), 502, 'Invalid code verifier');
    }));

  it('refuses a state of provider A at /B/auth/callback (mix-up), before any exchange', () =>
    callbacks.run(async () => {
      const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
      const back = await idp1.authorize(authorizeUrl);
      const before = [idp1.tokenRequests.length, idp2.tokenRequests.length];
      expectRefused(await callbackAt('idp2', back.search, loginCookie), 400, 'belongs to another provider');
      expect([idp1.tokenRequests.length, idp2.tokenRequests.length]).toEqual(before);
    }));

  it('refuses a code issued by provider A inside a login of provider B', () =>
    callbacks.run(async () => {
      const a = await startLogin(fe, 'one');
      const codeOfA = (await idp1.authorize(a.authorizeUrl)).searchParams.get('code') ?? '';
      const b = await startLogin(fe, 'two');
      const backB = await idp2.authorize(b.authorizeUrl);
      backB.searchParams.set('code', codeOfA);
      expectRefused(await callback(fe, backB, b.loginCookie), 502, 'bad_verification_code');
      expect(idp2.tokenRequests.at(-1)?.error).toBe('bad_verification_code');
    }));

  it('shows a clear page for error=access_denied and never exchanges a code', () =>
    callbacks.run(async () => {
      idp1.denyWith = { error: 'access_denied', error_description: 'The user denied access' };
      try {
        const { authorizeUrl, loginCookie } = await startLogin(fe, 'one');
        const back = await idp1.authorize(authorizeUrl);
        back.searchParams.set('code', '4/smuggled-alongside-the-error');
        const exchanges = idp1.tokenRequests.length;
        expectRefused(await callback(fe, back, loginCookie), 502, 'access_denied: The user denied access');
        expect(idp1.tokenRequests.length).toBe(exchanges);
      } finally {
        idp1.denyWith = undefined;
      }
    }));
});

describe('two tabs', () => {
  it('completes concurrent logins started in two tabs of one browser, in either order', () =>
    callbacks.run(async () => {
      // Tab 1 and tab 2 share the browser's cookies: tab 2 starts while tab 1 is at the provider.
      // (The login cookie is the endpoint host's: tab 2's start there carries tab 1's.)
      const tab1 = await startLogin(fe, 'one', '/first');
      const tab2 = await startLogin(fe, 'uno', '/second', tab1.loginCookie);
      const back1 = await idp1.authorize(tab1.authorizeUrl);
      const back2 = await idp1.authorize(tab2.authorizeUrl);

      // Tab 2 comes back first; the browser then holds its session and what is left of the login cookie.
      const done2 = await callback(fe, back2, tab2.loginCookie);
      expect(done2.status).toBe(302);
      expect(done2.headers.location).toBe(shareUrl(fe, 'uno', '/second'));
      const afterTab2 = cookiesFrom(done2);
      expect(afterTab2).toMatch(/svc-auth-session-login=/);
      // Each share host holds its own binding cookie: tab 1's is still on `one`.
      const bindOfTab1 = /svc-auth-session-bind=[^;]*/.exec(tab1.loginCookie)?.[0] ?? '';
      const done1 = await callback(fe, back1, `${afterTab2}; ${bindOfTab1}`);
      expect(done1.status).toBe(302);
      expect(done1.headers.location).toBe(shareUrl(fe, 'one', '/first'));
      const session = cookiesFrom(done1);
      expect(session).not.toMatch(/svc-auth-session-login=/);
      for (const token of ['one', 'uno']) {
        expect((await get(fe.port, fe.host(token), '/', { headers: { cookie: session } })).status).toBe(200);
      }
    }));

  it('a stale tab’s failed callback leaves the other tab’s login intact', () =>
    callbacks.run(async () => {
      const { authorizeUrl, loginCookie: cookie } = await startLogin(fe, 'one', '/a');
      const back = await idp1.authorize(authorizeUrl);
      const stale = await callbackAt('idp1', '?code=4/x&state=garbage', cookie);
      expect(stale.status).toBe(400);
      expect(stale.headers['set-cookie']).toBeUndefined();
      expect((await callback(fe, back, cookie)).status).toBe(302);
    }));
});
