import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { startFrontendAndStranger, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, followStart, startLogin } from '../support/oauth-flow.ts';
import { mintSessionCookie } from '../support/session.ts';

/**
 * Session cookie tampering against a running frontend, starting from a cookie a real login set:
 * every altered, foreign, expired or logged-out cookie must send the visitor to the provider (login
 * restarts) without a single request reaching the backend.
 */
const figures = suiteFigures('cookies');
let idp1: Idp1Server;
let backend: EchoBackend;
let fe: TestFrontend;
let otherKeys: TestFrontend;
/** `svc-auth-session=<value>` of a real login on share `one`. */
let genuine: string;

async function login(f: TestFrontend, token: string): Promise<string> {
  const { authorizeUrl, loginCookie } = await startLogin(f, token);
  const done = await callback(f, await idp1.authorize(authorizeUrl), loginCookie);
  expect(done.status).toBe(302);
  return cookiesFrom(done);
}

beforeAll(async () => {
  [idp1, backend] = await Promise.all([startIdp1Server(), startEchoBackend()]);
  const shares = [
    { token: 'one', target: backend.url.href, oauth_provider: 'idp1' },
    { token: 'two', target: backend.url.href, oauth_provider: 'idp1' },
    { token: 'other', target: backend.url.href, oauth_provider: 'idp1b' },
  ];
  const providers = [idp1.providerConfig('idp1'), idp1.providerConfig('idp1b')];
  [fe, otherKeys] = await startFrontendAndStranger({ providers, shares });
  idp1.redirectUris = [fe, otherKeys].flatMap((f) =>
    ['idp1', 'idp1b'].map((p) => `http://${f.authHost}/${p}/auth/callback`),
  );
  genuine = await login(fe, 'one');
  expect(genuine).toMatch(/^svc-auth-session=one~[A-Za-z0-9_-]+$/);
});

afterAll(async () => {
  figures.write();
  await Promise.all([fe?.close(), otherKeys?.close()]);
  await Promise.all([idp1?.close(), backend?.close()]);
});

const valueOf = (cookie: string): string => cookie.slice(cookie.indexOf('=') + 1);
/** The sealed entry of a cookie holding one share's entry (`<token>~<sealed>`). */
const sealedOf = (cookie: string): string => valueOf(cookie).slice(valueOf(cookie).indexOf('~') + 1);
/** A session cookie of one entry for `token`. */
const entry = (sealed: string, token = 'one'): string => `svc-auth-session=${token}~${sealed}`;
const tampering = figures.attackClass(
  'Cookie tampering (bits, truncation, chunks, foreign, expired, after logout)',
  'a value with a stray trailing character opened as the same session; only the canonical encoding opens now',
);

/** The visitor with this Cookie header is sent to the provider, and the backend sees nothing. */
async function expectLoginRestarts(cookieHeader: string, token = 'one'): Promise<void> {
  const count = backend.seen.length;
  const reply = await get(fe.port, fe.host(token), '/private', { headers: { cookie: cookieHeader } });
  const started = await followStart(fe, reply);
  expect(started.headers.location).toMatch(new RegExp(`^${idp1.url.origin}/o/oauth2/v2/auth\\?`));
  expect(backend.seen.length).toBe(count);
}

describe('the genuine cookie', () => {
  it('is accepted as it was set (the control case)', async () => {
    expect((await get(fe.port, fe.host('one'), '/', { headers: { cookie: genuine } })).status).toBe(200);
  });
});

describe('altered cookies', () => {
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

  it('one flipped bit anywhere in the value (every 5th character, each of its 6 bits)', async () => {
    const value = sealedOf(genuine);
    for (let i = 0; i < value.length; i += 5) {
      for (let bit = 0; bit < 6; bit++) {
        const c = ALPHABET.indexOf(value[i] as string);
        const flipped = value.slice(0, i) + (ALPHABET[c ^ (1 << bit)] as string) + value.slice(i + 1);
        // The last character carries padding bits the decoder ignores; a flip there is no change.
        if (Buffer.from(flipped, 'base64url').equals(Buffer.from(value, 'base64url'))) continue;
        await tampering.run(() => expectLoginRestarts(entry(flipped)));
      }
    }
  });

  it('truncated at every 7th length, and extended', async () => {
    const value = sealedOf(genuine);
    for (let n = 0; n < value.length; n += 7) {
      await tampering.run(() => expectLoginRestarts(entry(value.slice(0, n))));
    }
    await tampering.run(() => expectLoginRestarts(entry(`${value}A`)));
    await tampering.run(() => expectLoginRestarts(entry(`${value}${value}`)));
    await tampering.run(() => expectLoginRestarts(`svc-auth-session=${value}`));
  });

  it('its parts (IV, ciphertext, tag, MAC) reordered, dropped or taken from another cookie', async () => {
    const raw = Buffer.from(sealedOf(genuine), 'base64url');
    const other = Buffer.from(sealedOf(await login(fe, 'two')), 'base64url');
    const parts = (b: Buffer) => ({
      iv: b.subarray(0, 12),
      ct: b.subarray(12, b.length - 48),
      tag: b.subarray(b.length - 48, b.length - 32),
      mac: b.subarray(b.length - 32),
    });
    const a = parts(raw);
    const b = parts(other);
    const variants = [
      [a.ct, a.iv, a.tag, a.mac],
      [a.iv, a.tag, a.ct, a.mac],
      [a.mac, a.iv, a.ct, a.tag],
      [a.iv, a.ct, a.tag],
      [a.iv, a.ct, a.mac],
      [a.ct, a.tag, a.mac],
      [b.iv, a.ct, a.tag, a.mac],
      [a.iv, a.ct, a.tag, b.mac],
      [a.iv, b.ct, b.tag, a.mac],
      [a.iv, a.ct.subarray(0, 16), a.tag, a.mac],
    ];
    for (const pieces of variants) {
      await tampering.run(() => expectLoginRestarts(entry(Buffer.concat(pieces).toString('base64url'))));
    }
  });

  it('split over two cookies or two Cookie headers, quoted, renamed, or preceded by a forged copy', async () => {
    const value = valueOf(genuine);
    const half = Math.floor(value.length / 2);
    const headers = [
      `svc-auth-session=${value.slice(0, half)}; svc-auth-session.1=${value.slice(half)}`,
      `svc-auth-session.0=${value.slice(0, half)}; svc-auth-session.1=${value.slice(half)}`,
      `svc-auth-session="${value}"`,
      `SVC-AUTH-SESSION=${value}`,
      `svc-auth-session-login=${value}`,
      `svc-auth-session=forged; svc-auth-session=${value}`,
    ];
    for (const header of headers) await tampering.run(() => expectLoginRestarts(header));
    await tampering.run(async () => {
      const count = backend.seen.length;
      const reply = await get(fe.port, fe.host('one'), '/', {
        rawHeaders: [
          ['Cookie', `svc-auth-session=${value.slice(0, half)}`],
          ['Cookie', `x=${value.slice(half)}`],
        ],
      });
      expect(reply.status).toBe(302);
      expect(backend.seen.length).toBe(count);
    });
  });
});

describe('cookies that are genuine, but not for this request', () => {
  it('a session of another share, another provider, and the login cookie used as a session', async () => {
    await tampering.run(async () => expectLoginRestarts(await login(fe, 'two'), 'one'));
    // Share two's genuine entry relabelled as share one's: sealed under two's keys, it does not open as one's.
    await tampering.run(async () => expectLoginRestarts(entry(sealedOf(await login(fe, 'two')), 'one')));
    await tampering.run(async () => expectLoginRestarts(await login(fe, 'other'), 'one'));
    await tampering.run(async () => expectLoginRestarts(genuine, 'other'));
    await tampering.run(async () => {
      const { loginCookie } = await startLogin(fe, 'one');
      await expectLoginRestarts(`svc-auth-session=${valueOf(loginCookie)}`);
    });
  });

  it('a cookie sealed with another signing and encryption key', async () => {
    await tampering.run(async () => expectLoginRestarts(await login(otherKeys, 'one')));
    await tampering.run(async () =>
      expectLoginRestarts(
        mintSessionCookie(
          { share: 'one', provider: 'idp1' },
          { signing: 'x'.repeat(32), encryption: 'test-encryption-key-0123456789' },
        ),
      ),
    );
    await tampering.run(async () =>
      expectLoginRestarts(
        mintSessionCookie(
          { share: 'one', provider: 'idp1' },
          { signing: 'test-signing-key-0123456789abcdefghijkl', encryption: 'y'.repeat(24) },
        ),
      ),
    );
  });

  it('an expired one (session_lifetime passed)', () =>
    tampering.run(async () => {
      const cookie = await login(fe, 'one');
      // Later cases log in afresh at the advanced time, so the clock stays where it is.
      fe.clock.advance(6 * 3600_000 + 1_000);
      await expectLoginRestarts(cookie);
    }));

  it('one replayed after its logout', () =>
    tampering.run(async () => {
      const cookie = await login(fe, 'one');
      expect((await get(fe.port, fe.host('one'), '/', { headers: { cookie } })).status).toBe(200);
      const out = await get(fe.port, fe.authHost, '/idp1/logout', { headers: { cookie } });
      expect(out.status).toBe(302);
      expect(out.headers['set-cookie']?.[0]).toMatch(/^svc-auth-session=; .*Max-Age=0/);
      await expectLoginRestarts(cookie);
    }));
});
