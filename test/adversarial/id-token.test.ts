import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { suiteFigures } from '../support/figures.ts';
import { SignJWT, type JWTPayload } from 'jose';
import { testFrontendConfig } from '../support/frontend.ts';
import type { OidcConfig } from '../../lib/config/providers.ts';
import { oidcProvider } from '../../sidecar/providers/oidc.ts';
import { KEY_SET_POLICY } from '../../sidecar/providers/key-set.ts';
import type { Provider, ProviderError } from '../../sidecar/providers/types.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { TestClock } from '../support/clock.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { frontendMetric, issuerProvider, loginThroughIssuer } from '../support/issuer-login.ts';
import { callback as oauthCallback, providerRedirect, startLogin } from '../support/oauth-flow.ts';
import {
  normalBehaviour,
  startTestIssuer,
  TEST_CLIENT_ID as CLIENT_ID,
  TEST_CLIENT_SECRET as CLIENT_SECRET,
  type TestIssuer,
} from '../support/test-issuer.ts';

/**
 * The OpenID client's own checks (sidecar/providers/oidc.ts, id-token.ts, oidc-discovery.ts) against
 * an issuer that misbehaves on purpose (test/support/test-issuer.ts). Each case sends one thing
 * wrong and expects the login refused, with a message naming it and no token in it.
 */
const REDIRECT_URI = 'http://auth.svc.localhost/auth/callback';

const figures = suiteFigures('id-token');
const forgeries = figures.attackClass(
  'OpenID responses forged or mixed up (ID token nonce/iss/aud/azp/exp/iat, alg none, HS256 keyed with the client secret, unknown or forged key, RFC 9207 iss, token type, user-info subject, discovery issuer/keys/algorithms)',
  'the checks an OpenID client library makes, made by svc’s own OpenID client (sidecar/providers/), each tried here',
);
const rotation = figures.attackClass(
  'OpenID key rotation (a key the provider removed, a key it added, concurrent and flooded unknown kids)',
  'the key set was kept until restart: a removed key stayed trusted, a new key was refused for a minute after any fetch, and concurrent verifications each fetched; now a maximum age, one shared fetch, and unknown kids refetched at most once per 30 s',
);
const subjects = figures.attackClass(
  'OpenID subject changed on refresh (another `sub` for the same session)',
  'a refreshed ID token for another subject renewed the session; it now ends it',
);

let server: TestIssuer;
let issuer: string;
beforeAll(async () => {
  server = await startTestIssuer();
  issuer = server.issuer;
});
afterAll(async () => {
  figures.write();
  await server?.close();
});
beforeEach(() => server.reset());

function provider(clock?: TestClock): Provider {
  const config = testFrontendConfig({
    providers: [
      {
        name: 'hostile',
        type: 'oidc',
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        issuer,
        scopes: ['openid', 'email'],
        supports_pkce: true,
      },
    ],
    shares: [],
  });
  return oidcProvider(config.oauth.providers[0] as OidcConfig, clock);
}

const login = { redirectUri: REDIRECT_URI, nonce: 'nonce-1', codeVerifier: 'v'.repeat(43) };

function callback(params: Record<string, string> = {}): URL {
  const url = new URL(REDIRECT_URI);
  for (const [k, v] of Object.entries({ code: 'code-1', state: 'state-1', iss: issuer, ...params }))
    url.searchParams.set(k, v);
  return url;
}

/** One forgery case: the login must be refused, with no token or secret in the message. */
function refusedWith(p: Provider, callbackUrl: URL = callback()): Promise<string> {
  return forgeries.run(async () => {
    const error = await p.completeLogin({ ...login, callbackUrl }).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(error, 'the login should have been refused').toBeInstanceOf(Error);
    const message = error!.message;
    for (const secret of ['access-token-secret', 'refresh-token-secret', CLIENT_SECRET, 'eyJ'])
      expect(message).not.toContain(secret);
    return message;
  });
}

describe('OpenID client checks against a misbehaving issuer', () => {
  it('logs in when everything is right: identity from the ID token, tokens kept for refresh', async () => {
    const p = provider();
    const url = new URL(await p.authorizationUrl({ ...login, state: 'state-1' }));
    expect(url.origin + url.pathname).toBe(`${issuer}/auth`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: CLIENT_ID,
      nonce: 'nonce-1',
      state: 'state-1',
      code_challenge_method: 'S256',
    });
    const result = await p.completeLogin({ ...login, callbackUrl: callback() });
    expect(result.identity).toEqual({ email: 'ada@example.com', verified: true });
    expect(result.tokens).toEqual({
      accessToken: 'access-token-secret',
      refreshToken: 'refresh-token-secret',
      sub: 'user-1',
    });
    expect(server.requests).toEqual({ jwks: 1, token: 1 });
  });

  it.each([
    ['a nonce from another login', (c: JWTPayload) => ({ ...c, nonce: 'nonce-2' }), /"nonce" does not match/],
    ['no nonce', ({ nonce: _n, ...c }: JWTPayload) => c, /"nonce" does not match/],
    ['another issuer', (c: JWTPayload) => ({ ...c, iss: 'http://evil.example' }), /"iss"/],
    ['another audience', (c: JWTPayload) => ({ ...c, aud: 'other-client' }), /"aud"/],
    ['expired an hour ago', (c: JWTPayload) => ({ ...c, exp: Math.floor(Date.now() / 1000) - 3600 }), /"exp"/],
    ['no iat', ({ iat: _i, ...c }: JWTPayload) => c, /"iat"/],
    ['azp naming another client', (c: JWTPayload) => ({ ...c, azp: 'other-client' }), /"azp"/],
    ['two audiences and no azp', (c: JWTPayload) => ({ ...c, aud: [CLIENT_ID, 'other-client'] }), /several audiences/],
  ])('refuses an ID token with %s', async (_what, claims, expected) => {
    server.behaviour.claims = claims;
    expect(await refusedWith(provider())).toMatch(expected);
  });

  it('refuses an unsigned ID token (alg none)', async () => {
    server.behaviour.idToken = (claims) => {
      const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
      return Promise.resolve(`${part({ alg: 'none' })}.${part(claims)}.`);
    };
    expect(await refusedWith(provider())).toMatch(/ID token is not valid/);
  });

  it('refuses an ID token signed with the client secret (HS256) even where the issuer lists it', async () => {
    server.behaviour.discovery = (base) => ({ ...base, id_token_signing_alg_values_supported: ['RS256', 'HS256'] });
    server.behaviour.idToken = (claims) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(CLIENT_SECRET));
    expect(await refusedWith(provider())).toMatch(/ID token is not valid/);
  });

  it('refuses an ID token signed by a key that is not in the issuer key set', async () => {
    server.behaviour.idToken = (claims) => server.sign(claims, 'other', 'k2');
    expect(await refusedWith(provider())).toMatch(/ID token is not valid: no applicable key found/);
  });

  it('refuses a forged signature under the right key id', async () => {
    server.behaviour.idToken = (claims) => server.sign(claims, 'other', 'k1');
    expect(await refusedWith(provider())).toMatch(/signature verification failed/);
  });

  it('refuses a response from another issuer (RFC 9207) before exchanging the code', async () => {
    const p = provider();
    expect(await refusedWith(p, callback({ iss: 'http://evil.example' }))).toMatch(/another issuer/);
    const missing = callback();
    missing.searchParams.delete('iss');
    expect(await refusedWith(p, missing)).toMatch(/no "iss"/);
    expect(server.requests.token).toBe(0);
  });

  it('refuses a token response without an ID token, or of a token type other than Bearer', async () => {
    server.behaviour.idToken = () => Promise.resolve(undefined);
    expect(await refusedWith(provider())).toMatch(/no ID token/);
    server.behaviour = { ...normalBehaviour(), tokenType: 'mac' };
    expect(await refusedWith(provider())).toMatch(/unsupported token_type/);
  });

  it('takes the email from user info only for the subject of the ID token', async () => {
    server.behaviour.claims = ({ email: _e, email_verified: _v, ...c }) => c;
    const p = provider();
    expect((await p.completeLogin({ ...login, callbackUrl: callback() })).identity.email).toBe('ada@example.com');
    server.behaviour.userInfo = (base) => ({ ...base, sub: 'user-2', email: 'mallory@example.com' });
    expect(await refusedWith(p)).toMatch(/"sub" is not the subject of the ID token/);
  });

  it('refuses a discovery document that names another issuer or lacks the key set', async () => {
    server.behaviour.discovery = (base) => ({ ...base, issuer: 'http://evil.example' });
    await forgeries.run(() => expect(provider().ready()).rejects.toThrow(/names issuer "http:\/\/evil.example"/));
    server.behaviour.discovery = ({ jwks_uri: _j, ...base }) => base;
    await forgeries.run(() => expect(provider().ready()).rejects.toThrow(/jwks_uri is missing/));
    server.behaviour.discovery = (base) => ({ ...base, id_token_signing_alg_values_supported: ['HS256', 'none'] });
    await forgeries.run(() => expect(provider().ready()).rejects.toThrow(/no supported ID token signature algorithm/));
  });

  it('refreshes with the refresh token and checks the new ID token too', async () => {
    const p = provider();
    const first = await p.completeLogin({ ...login, callbackUrl: callback() });
    const again = await p.refresh(first.tokens);
    expect(again.identity.email).toBe('ada@example.com');
    server.behaviour.claims = (c) => ({ ...c, aud: 'other-client' });
    await forgeries.run(() => expect(p.refresh(first.tokens)).rejects.toThrow(/"aud"/));
  });
});

/** The error a login ends with (it must end with one). */
async function failure(p: Provider): Promise<ProviderError> {
  const error = await p.completeLogin({ ...login, callbackUrl: callback() }).then(
    () => undefined,
    (err: unknown) => err as ProviderError,
  );
  expect(error, 'the login should have been refused').toBeInstanceOf(Error);
  return error!;
}

describe('the key set follows the provider’s key rotation', () => {
  const { maxAgeMs, unknownKidRefetchMs } = KEY_SET_POLICY;

  it('stops trusting a key the provider removed once the key set reaches its maximum age', () =>
    rotation.run(async () => {
      const clock = new TestClock();
      const p = provider(clock);
      await p.completeLogin({ ...login, callbackUrl: callback() });
      // The provider rotates k1 out; whoever still holds its private key signs with it.
      await server.addKey('k2');
      server.removeKey('k1');
      server.behaviour.idToken = (claims) => server.signAs(claims, 'k1');
      clock.advance(maxAgeMs - 1_000);
      expect((await p.completeLogin({ ...login, callbackUrl: callback() })).identity.email).toBe('ada@example.com');
      clock.advance(1_000);
      const refused = await failure(p);
      expect(refused.message).toMatch(/ID token is not valid: no applicable key found/);
      expect(refused.code).toBe('invalid_token');
      expect(server.requests.jwks).toBe(2);
    }));

  it('accepts a key the provider added, with one fetch of the key set', () =>
    rotation.run(async () => {
      const p = provider(new TestClock());
      await p.completeLogin({ ...login, callbackUrl: callback() });
      expect(server.requests.jwks).toBe(1);
      await server.addKey('k2');
      server.behaviour.idToken = (claims) => server.signAs(claims, 'k2');
      for (let i = 0; i < 3; i++)
        expect((await p.completeLogin({ ...login, callbackUrl: callback() })).identity.email).toBe('ada@example.com');
      expect(server.requests.jwks).toBe(2);
    }));

  it('shares one fetch among concurrent verifications, at start and on a new key', () =>
    rotation.run(async () => {
      const concurrent = 20;
      const p = provider(new TestClock());
      const all = () =>
        Promise.all(Array.from({ length: concurrent }, () => p.completeLogin({ ...login, callbackUrl: callback() })));
      expect((await all()).every((r) => r.identity.email === 'ada@example.com')).toBe(true);
      expect(server.requests.jwks).toBe(1);
      await server.addKey('k3');
      server.behaviour.idToken = (claims) => server.signAs(claims, 'k3');
      expect((await all()).every((r) => r.identity.email === 'ada@example.com')).toBe(true);
      expect(server.requests.jwks).toBe(2);
      figures.measure(`key set fetches for ${concurrent} concurrent logins, at start and on a new kid`, 2);
    }));

  it('fetches the key set at most once per interval for a flood of tokens with unknown kids', () =>
    rotation.run(async () => {
      const clock = new TestClock();
      const p = provider(clock);
      await p.completeLogin({ ...login, callbackUrl: callback() });
      let n = 0;
      server.behaviour.idToken = (claims) => server.sign(claims, 'other', `forged-${(n += 1)}`);
      const flood = async (count: number) => {
        const errors = await Promise.all(Array.from({ length: count }, () => failure(p)));
        expect(errors.every((e) => e.code === 'invalid_token')).toBe(true);
      };
      await flood(50);
      for (let i = 0; i < 50; i++) await flood(1);
      expect(server.requests.jwks).toBe(2);
      clock.advance(unknownKidRefetchMs);
      await flood(50);
      expect(server.requests.jwks).toBe(3);
      figures.measure(
        `key set fetches caused by 150 forged unknown-kid tokens over two ${unknownKidRefetchMs / 1000} s intervals`,
        server.requests.jwks - 1,
      );
    }));
});

describe('the subject of a session', () => {
  it('refuses a refresh whose ID token names another subject', () =>
    subjects.run(async () => {
      const p = provider();
      const first = await p.completeLogin({ ...login, callbackUrl: callback() });
      expect((await p.refresh(first.tokens)).tokens.sub).toBe('user-1');
      server.behaviour.claims = (c) => ({ ...c, sub: 'user-2' });
      const refused = await p.refresh(first.tokens).then(
        () => undefined,
        (err: unknown) => err as ProviderError,
      );
      expect(refused?.message).toMatch(/"sub" changed/);
      expect(refused?.code).toBe('invalid_token');
    }));

  it('refuses user info about another subject on a refresh without an ID token', () =>
    subjects.run(async () => {
      const p = provider();
      const first = await p.completeLogin({ ...login, callbackUrl: callback() });
      server.behaviour.idToken = () => Promise.resolve(undefined);
      server.behaviour.userInfo = (base) => ({ ...base, sub: 'user-2' });
      await expect(p.refresh(first.tokens)).rejects.toThrow(/"sub" is not the subject/);
    }));
});

describe('at a running frontend', () => {
  let fe: TestFrontend;
  let backend: EchoBackend;
  beforeAll(async () => {
    backend = await startEchoBackend();
    fe = await startTestFrontend({
      providers: [issuerProvider(server, 'hostile')],
      shares: [{ token: 'one', target: backend.url.href, oauth_provider: 'hostile', oauth_check_interval: '1m' }],
    });
  });
  afterAll(async () => {
    await fe?.close();
    await backend?.close();
  });

  it('ends the session when a refresh vouches for another subject', () =>
    subjects.run(async () => {
      const { reply, cookie } = await loginThroughIssuer(fe, server, 'one', 'hostile');
      expect(reply.status).toBe(302);
      const seen = await get(fe.port, fe.host('one'), '/', { headers: { cookie } });
      const echoed = JSON.parse(seen.body) as { headers: Record<string, string | undefined> };
      expect(echoed.headers['svc-auth-email']).toBe('ada@example.com');
      // The same address, now vouched for as another account of the provider.
      server.behaviour.claims = (c) => ({ ...c, sub: 'user-2' });
      fe.clock.advance(61_000);
      const tokenRequests = server.requests.token;
      const recheck = await get(fe.port, fe.host('one'), '/', { headers: { cookie } });
      expect(recheck.status).toBe(302);
      expect((await providerRedirect(fe, recheck)).headers.location).toMatch(new RegExp(`^${server.issuer}/auth`));
      expect(server.requests.token).toBe(tokenRequests + 1);
      // Ended: the cookie is not refreshed again, whatever the provider says now.
      server.behaviour.claims = (c) => c;
      const again = await get(fe.port, fe.host('one'), '/', { headers: { cookie } });
      expect(again.status).toBe(302);
      expect(server.requests.token).toBe(tokenRequests + 1);
      expect(await frontendMetric(fe, 'svc_frontend_session_checks_total{provider="hostile",result="ended"}')).toBe(1);
      expect(fe.logs.text).toMatch(/"code":"invalid_token".*session ended/);
    }));

  it('leaves the state of a callback to the login-state store, which refuses another browser’s login before any exchange', () =>
    forgeries.run(async () => {
      const { authorizeUrl } = await startLogin(fe, 'one');
      const back = new URL(`http://${fe.authHost}/hostile/auth/callback`);
      back.searchParams.set('code', 'code-1');
      back.searchParams.set('state', authorizeUrl.searchParams.get('state') ?? '');
      back.searchParams.set('iss', server.issuer);
      const other = await startLogin(fe, 'one');
      const reply = await oauthCallback(fe, back, other.loginCookie);
      expect(reply.status).toBe(400);
      expect(reply.body).toContain('started in another browser');
      expect(server.requests.token).toBe(0);
      expect(await frontendMetric(fe, 'svc_frontend_logins_total{provider="hostile",result="invalid_state"}')).toBe(1);
    }));
});
