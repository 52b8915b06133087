import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { startIdp1Server, type Idp1Server, type Idp1User } from '../support/idp1-server.ts';
import { callback, startLogin } from '../support/oauth-flow.ts';

/**
 * Email admission with hostile addresses, end to end: the idp1 server vouches for whatever address
 * the case names, the frontend must admit exactly the ones the share's patterns mean. An admitted
 * visitor's backend receives the address exactly as the provider gave it.
 */
const figures = suiteFigures('email');
let idp1: Idp1Server;
let backend: EchoBackend;
let fe: TestFrontend;

beforeAll(async () => {
  [idp1, backend] = await Promise.all([startIdp1Server(), startEchoBackend()]);
  const share = (token: string, patterns: string[]) => ({
    token,
    target: backend.url.href,
    oauth_provider: 'idp1',
    oauth_email_address_patterns: patterns,
  });
  fe = await startTestFrontend({
    providers: [
      idp1.providerConfig('idp1'),
      // Google's older OAuth2 v2 user info, which answers `verified_email` instead of `email_verified`.
      { ...idp1.providerConfig('v2'), user_info_url: new URL('/oauth2/v2/userinfo', idp1.url).href },
    ],
    shares: [
      share('corp', ['*@example.com']),
      share('exact', ['alice@example.com']),
      share('subs', ['*@*.example.com']),
      share('kernel', ['*@kernel.org']),
      { token: 'old', target: backend.url.href, oauth_provider: 'v2' },
    ],
  });
  idp1.redirectUris = ['idp1', 'v2'].map((p) => `http://${fe.authHost}/${p}/auth/callback`);
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  await Promise.all([idp1?.close(), backend?.close()]);
});

/** Signs in at `share` as `user`; the callback's status and, when admitted, what the backend saw. */
async function signIn(share: string, user: Idp1User): Promise<{ status: number; body: string; email?: string }> {
  idp1.nextUser = user;
  const { authorizeUrl, loginCookie } = await startLogin(fe, share);
  const done = await callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
  if (done.status !== 302) return { status: done.status, body: done.body };
  const page = await get(fe.port, fe.host(share), '/', { headers: { cookie: cookiesFrom(done) } });
  expect(page.status).toBe(200);
  const seen = JSON.parse(page.body) as { headers: Record<string, string | undefined> };
  return {
    status: 302,
    body: '',
    ...(seen.headers['svc-auth-email'] ? { email: seen.headers['svc-auth-email'] } : {}),
  };
}

const verified = (email: string): Idp1User => ({ email, email_verified: true });

describe('email checks', () => {
  const tally = figures.attackClass(
    'Email checks (several @, look-alike domains, case, trailing dots, quoting, homoglyphs, unverified, CR/LF)',
    'idp1 v2 user info `verified_email` was never accepted; Unicode case folding let the Kelvin sign match k; domains with #, /, ? or an empty label matched *@*.domain globs',
  );

  // [share, address, admitted?]
  const cases: [string, string, boolean][] = [
    ['corp', 'alice@example.com', true],
    ['corp', 'ALICE@EXAMPLE.COM', true],
    ['corp', 'alice@Example.Com', true],
    ['corp', 'eve@example.com.evil.io', false],
    ['corp', 'eve@evil-example.com', false],
    ['corp', 'eve@evilexample.com', false],
    ['corp', 'eve@sub.example.com', false],
    ['corp', 'eve@example.com.', false],
    ['corp', 'eve@example.co', false],
    ['corp', 'eve@example.com@evil.io', false],
    ['corp', 'eve@evil.io@example.com', false],
    ['corp', '"eve@evil.io"@example.com', false],
    ['corp', 'eve@evil.io\u0000@example.com', false],
    ['corp', 'eve@evil.io%40example.com', false],
    ['corp', 'eve\uff20example.com', false],
    ['corp', 'eve@exаmple.com', false], // Cyrillic а
    ['corp', 'eve@example\u3002com', false], // ideographic full stop
    ['corp', 'alice@example.com\r\nsvc-auth-email: root@example.com', false],
    ['corp', 'alice@example.com\n', false],
    ['corp', ' alice@example.com', false],
    ['corp', 'alice @example.com', false],
    ['corp', '@example.com', false],
    ['corp', '', false],
    ['corp', '"alice"@example.com', true], // a quoted local part, but the domain is the one allowed
    ['exact', 'alice@example.com', true],
    ['exact', 'ALICE@example.com', true],
    ['exact', 'аlice@example.com', false], // Cyrillic а
    ['exact', 'alice+x@example.com', false],
    ['exact', 'alice@example.com.', false],
    ['subs', 'bob@eng.example.com', true],
    ['subs', 'eve@evil.io#.example.com', false],
    ['subs', 'eve@evil.io/.example.com', false],
    ['subs', 'eve@evil.io?.example.com', false],
    ['subs', 'eve@.example.com', false],
    ['kernel', 'linus@kernel.org', true],
    ['kernel', 'eve@\u212Aernel.org', false], // Kelvin sign, which /k/iu would match
    ['kernel', 'eve@kernel.or\u0262', false],
  ];

  it.each(cases)('%s: %j admitted=%s', (share, email, admitted) =>
    tally.run(async () => {
      const result = await signIn(share, verified(email));
      if (admitted) {
        expect(result.status).toBe(302);
        expect(result.email).toBe(email);
      } else {
        expect(result.status).toBe(403);
        expect(result.body).toContain('Access refused');
      }
    }),
  );

  const unverified: [string, Idp1User][] = [
    ['email_verified false', { email: 'alice@example.com', email_verified: false }],
    ['no verification flag', { email: 'alice@example.com' }],
    [
      'email_verified as the string "true"',
      { email: 'alice@example.com', email_verified: 'true' as unknown as boolean },
    ],
  ];

  it.each(unverified)('refuses an address the provider does not vouch for: %s', (_what, user) =>
    tally.run(async () => {
      const result = await signIn('corp', user);
      expect(result.status).toBe(403);
      expect(result.body).toContain('is not verified by the provider');
    }),
  );

  it('accepts verified_email from the older v2 user info endpoint, and only a literal true', () =>
    tally.run(async () => {
      expect((await signIn('old', verified('alice@example.com'))).email).toBe('alice@example.com');
      expect((await signIn('old', { email: 'alice@example.com', email_verified: false })).status).toBe(403);
      expect((await signIn('old', { email: 'alice@example.com' })).status).toBe(403);
    }));
});
