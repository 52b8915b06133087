import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { suiteFigures } from '../support/figures.ts';
import { SignJWT, type JWTPayload } from 'jose';
import { testFrontendConfig } from '../support/frontend.ts';
import type { OidcConfig } from '../../lib/config/providers.ts';
import { oidcProvider } from '../../sidecar/providers/oidc.ts';
import type { Provider } from '../../sidecar/providers/types.ts';
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
  'OpenID responses forged or mixed up (ID token nonce/iss/aud/azp/exp/iat, alg none, HS256 keyed with the client secret, unknown or forged key, RFC 9207 iss, state, token type, user-info subject, discovery issuer/keys/algorithms)',
  'openid-client made these checks until this issue; svc’s own OpenID client (#12, round 5) makes them, each tried here',
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

function provider(): Provider {
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
  return oidcProvider(config.oauth.providers[0] as OidcConfig);
}

const login = { redirectUri: REDIRECT_URI, state: 'state-1', nonce: 'nonce-1', codeVerifier: 'v'.repeat(43) };

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
    const url = new URL(await p.authorizationUrl(login));
    expect(url.origin + url.pathname).toBe(`${issuer}/auth`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: CLIENT_ID,
      nonce: 'nonce-1',
      state: 'state-1',
      code_challenge_method: 'S256',
    });
    const result = await p.completeLogin({ ...login, callbackUrl: callback() });
    expect(result.identity).toEqual({ email: 'ada@example.com', verified: true });
    expect(result.tokens).toEqual({ accessToken: 'access-token-secret', refreshToken: 'refresh-token-secret' });
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

  it('refuses an ID token signed by a key that is not in the issuer key set, fetching it again at most once a minute', async () => {
    server.behaviour.idToken = (claims) => server.sign(claims, 'other', 'k2');
    const p = provider();
    expect(await refusedWith(p)).toMatch(/ID token is not valid/);
    expect(await refusedWith(p)).toMatch(/ID token is not valid/);
    expect(server.requests.jwks).toBe(1);
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

  it('refuses a callback whose state belongs to another login, before exchanging the code', async () => {
    expect(await refusedWith(provider(), callback({ state: 'state-2' }))).toMatch(/"state" does not match/);
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
