import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileGlob, EMAIL_GLOB_MAX_LENGTH, EMAIL_GLOBS_MAX, globMatchSteps } from '../../lib/glob.ts';
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

/**
 * Globs as any account may write them: characters that are special in regular expressions must
 * mean themselves, and a glob built to make a backtracking matcher explode must cost a bounded
 * number of steps, without holding up another share's visitors.
 */
describe('email glob abuse', () => {
  const tally = figures.attackClass(
    'Email globs (regular-expression metacharacters, backtracking patterns of the longest allowed length)',
    '`*@my-company.com` was refused (an escaped - under the u flag); `*a*a*a*a*a*a*a*a@example.com` took 2.6 s against a 40-character address and blocked the event loop; globs are now matched without regular expressions, 64 globs of 320 characters at most',
  );
  /** A backtracking glob (eight `*a` runs), and the longest allowed one of its kind. */
  const backtrackGlob = `${'*a'.repeat(8)}@example.com`;
  const longestGlob = `${'*a'.repeat((EMAIL_GLOB_MAX_LENGTH - 12) / 2)}@example.com`;
  let other: TestFrontend;

  beforeAll(async () => {
    const share = (token: string, patterns: string[]) => ({
      token,
      target: backend.url.href,
      oauth_provider: 'idp1',
      oauth_email_address_patterns: patterns,
    });
    other = await startTestFrontend({
      providers: [idp1.providerConfig('idp1')],
      shares: [
        share('dash', ['*@my-company.com']),
        share('meta', ['a.b+(c)|$^{1}/@example.com']),
        share('backtrack', [backtrackGlob]),
        share('longest', [longestGlob]),
        { token: 'open', target: backend.url.href },
      ],
    });
    idp1.redirectUris = [...idp1.redirectUris, `http://${other.authHost}/idp1/auth/callback`];
  });
  afterAll(() => other?.close());

  /** Signs in at a share of the second frontend; the callback's status. */
  async function signInOther(share: string, email: string): Promise<number> {
    idp1.nextUser = verified(email);
    const { authorizeUrl, loginCookie } = await startLogin(other, share);
    return (await callback(other, await idp1.authorize(authorizeUrl), loginCookie)).status;
  }

  const admitted: [string, string, boolean][] = [
    ['dash', 'alice@my-company.com', true],
    ['dash', 'alice@MY-COMPANY.com', true],
    ['dash', 'eve@my_company.com', false],
    ['dash', 'eve@mycompany.com', false],
    ['meta', 'a.b+(c)|$^{1}/@example.com', true],
    ['meta', 'aab+(c)|$^{1}/@example.com', false], // `.` is not "any character"
    ['meta', 'a.bb(c)|$^{1}/@example.com', false], // `+` is not "one or more"
    ['meta', 'a.b+c|$^{1}/@example.com', false], // `(` is not a group
  ];
  it.each(admitted)('%s: %j admitted=%s', (share, email, expected) =>
    tally.run(async () => expect(await signInOther(share, email)).toBe(expected ? 302 : 403)),
  );

  const backtracking: [string, string, string][] = [
    ['backtrack', backtrackGlob, `${'a'.repeat(28)}@example.org`],
    ['longest', longestGlob, `${'a'.repeat(242)}@example.org`],
  ];
  it.each(backtracking)(
    '%s: a backtracking glob against a long address costs bounded steps; another share is served meanwhile',
    (share, glob, email) =>
      tally.run(async () => {
        const { matched, steps } = globMatchSteps(glob, email);
        expect(matched).toBe(false);
        // The matcher's bound: (address + 1) x (pattern + 1), here a few hundred steps.
        expect(steps).toBeLessThanOrEqual(([...email].length + 1) * ([...glob].length + 1));
        // The callback is where the glob is matched; another share's request is sent alongside it.
        idp1.nextUser = verified(email);
        const { authorizeUrl, loginCookie } = await startLogin(other, share);
        const callbackUrl = await idp1.authorize(authorizeUrl);
        const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
          const begin = performance.now();
          return [await run(), performance.now() - begin];
        };
        const [[done, callbackMs], [open, openMs]] = await Promise.all([
          timed(() => callback(other, callbackUrl, loginCookie)),
          timed(() => get(other.port, other.host('open'), '/')),
        ]);
        const [status, openStatus] = [done.status, open.status];
        expect(status).toBe(403);
        expect(openStatus).toBe(200);
        figures.measure(`${share} glob (${[...glob].length} chars) vs ${email.length}-char address: steps`, steps);
        figures.measure(
          `${share} glob login refused in (ms), another share answered in (ms)`,
          `${Math.round(callbackMs)}, ${Math.round(openMs)}`,
        );
      }),
  );

  it('measures the worst case: the longest allowed globs against the longest allowed address', () => {
    // A 254-character address (the longest isSingleMailbox accepts) and the costliest shapes of
    // 320-character glob found: a literal run after `*` re-scanned from every start, classes, `*a`.
    const address = `${'a'.repeat(250)}@a.a`;
    const shapes = [
      `*${'a'.repeat(EMAIL_GLOB_MAX_LENGTH - 2)}b`,
      `*${'[!b]'.repeat((EMAIL_GLOB_MAX_LENGTH - 2) / 4)}b`,
      `${'*a'.repeat((EMAIL_GLOB_MAX_LENGTH - 1) / 2)}b`,
      `*${'?'.repeat(EMAIL_GLOB_MAX_LENGTH - 2)}b`,
    ];
    let worst = { glob: '', steps: 0, us: 0 };
    for (const glob of shapes) {
      expect([...glob].length).toBeLessThanOrEqual(EMAIL_GLOB_MAX_LENGTH);
      const { steps } = globMatchSteps(glob, address);
      const us = microsPerMatch([compileGlob(glob)], address);
      if (us > worst.us) worst = { glob, steps, us };
    }
    expect(worst.steps).toBeLessThanOrEqual((address.length + 1) * (EMAIL_GLOB_MAX_LENGTH + 1));
    const share = Array.from({ length: EMAIL_GLOBS_MAX }, () => compileGlob(worst.glob));
    figures.measure('worst-case glob match, 320-char glob vs 254-char address: steps', worst.steps);
    figures.measure('worst-case glob match, 320-char glob vs 254-char address (µs of CPU)', Math.round(worst.us));
    figures.measure(
      `worst-case admission check, ${EMAIL_GLOBS_MAX} such globs on one share (µs of CPU)`,
      Math.round(microsPerMatch(share, address)),
    );
  });
});

/**
 * Mean CPU time of one admission check (every glob tried) over a few hundred runs, after a warm-up:
 * CPU time rather than wall time, so that other processes on the machine count less.
 */
function microsPerMatch(globs: readonly { matches(email: string): boolean }[], address: string): number {
  const check = (): boolean => globs.some((g) => g.matches(address));
  for (let i = 0; i < 20; i++) check();
  const runs = Math.max(20, Math.ceil(2000 / globs.length));
  const started = process.cpuUsage();
  for (let i = 0; i < runs; i++) check();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / runs;
}
