import { describe, expect, it } from 'vitest';
import { TestClock } from '../test/support/clock.ts';
import { MAX_COOKIE_BYTES } from './cookies.ts';
import { sessionCookies, type Session } from './session.ts';
import { installationKeyRing } from './share-keys.ts';

const KEYS = { signingKey: 's'.repeat(32), encryptionKey: 'e'.repeat(24) };
const cookies = sessionCookies(installationKeyRing(KEYS), 'svc-auth-session', {
  domain: 'example.com',
  secure: true,
});
const session = (tokens: Session['tokens'], share = 'abc', checkedAt = Date.now()): Session => ({
  id: `sid-${share}`,
  share,
  instance: share,
  provider: 'corp',
  email: 'a@example.com',
  expiresAt: Date.now() + 3600_000,
  checkedAt,
  tokens,
});
const cookieOf = (set: string): string => set.split(';')[0] ?? '';
const only = (set: string) => cookies.readAll(cookieOf(set), (token) => token);

describe('session cookie', () => {
  it('is HttpOnly, SameSite=Lax, Secure, domain-scoped, and expires with the session', () => {
    const set = cookies.write(session({ accessToken: 'a', refreshToken: 'r' }), undefined);
    expect(set).toMatch(
      /^svc-auth-session=abc~[A-Za-z0-9_-]+; Path=\/; Domain=example\.com; Max-Age=(3599|3600); HttpOnly; SameSite=Lax; Secure$/,
    );
    expect(only(set).map((s) => s.tokens)).toEqual([{ accessToken: 'a', refreshToken: 'r' }]);
  });

  it('stays under the browser limit with a huge access token by keeping only the refresh token', () => {
    const set = cookies.write(session({ accessToken: 'x'.repeat(6000), refreshToken: 'r' }), undefined);
    expect(set.length).toBeLessThanOrEqual(MAX_COOKIE_BYTES);
    expect(only(set).map((s) => s.tokens)).toEqual([{ refreshToken: 'r' }]);
  });

  it('refuses to write a cookie that cannot be kept small', () => {
    expect(() => cookies.write(session({ refreshToken: 'r'.repeat(6000) }), undefined)).toThrow(
      /above the 4000-byte bound/,
    );
  });

  it('stops accepting a session at its expiry, also when it was read before', () => {
    const clock = new TestClock();
    const timed = sessionCookies(
      installationKeyRing(KEYS, clock),
      'svc-auth-session',
      { domain: 'example.com', secure: true },
      clock,
    );
    const set = timed.write({ ...session({ accessToken: 'a' }), expiresAt: clock.now() + 80 }, undefined);
    const read = () => timed.read(cookieOf(set), { token: 'abc', instance: 'abc' });
    expect(read()?.email).toBe('a@example.com');
    expect(read()?.email).toBe('a@example.com');
    clock.advance(120);
    expect(read()).toBeUndefined();
  });

  it('does not give a session to a later instance of the same token, even from the opened-entry cache', () => {
    const set = cookies.write(session({ accessToken: 'a' }), undefined);
    expect(cookies.read(cookieOf(set), { token: 'abc', instance: 'abc' })?.share).toBe('abc');
    expect(cookies.read(cookieOf(set), { token: 'abc', instance: 'abc-2' })).toBeUndefined();
  });

  it('holds one entry per share, replacing a share’s old one and dropping the least recently written to fit', () => {
    const first = cookies.write(session({ accessToken: 'a1' }, 'one', 1000), undefined);
    const second = cookies.write(session({ accessToken: 'b' }, 'two', 2000), cookieOf(first));
    expect(only(second).map((s) => s.share)).toEqual(['two', 'one']);
    const replaced = cookies.write(session({ accessToken: 'a2' }, 'one', 3000), cookieOf(second));
    expect(only(replaced).map((s) => [s.share, s.tokens.accessToken])).toEqual([
      ['one', 'a2'],
      ['two', 'b'],
    ]);
    // Sessions with large tokens: only the newest ones fit in the bounded cookie.
    let jar = cookieOf(replaced);
    for (let i = 0; i < 12; i++)
      jar = cookieOf(cookies.write(session({ accessToken: 'x'.repeat(600) }, `s${i}`, 10_000 + i), jar));
    const shares = only(jar).map((s) => s.share);
    expect(shares[0]).toBe('s11');
    expect(shares).not.toContain('one');
    expect(shares.length).toBeGreaterThan(1);
    expect(shares.length).toBeLessThan(12);
  });

  it('clears by expiring immediately', () => {
    expect(cookies.clear()).toMatch(
      /^svc-auth-session=; Path=\/; Domain=example\.com; Max-Age=0; Expires=Thu, 01 Jan 1970/,
    );
  });
});
