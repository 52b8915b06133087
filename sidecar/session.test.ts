import { describe, expect, it } from 'vitest';
import { MAX_COOKIE_BYTES } from './cookies.ts';
import { createSealer } from './seal.ts';
import { sessionCookies, type Session } from './session.ts';

const cookies = sessionCookies(createSealer('s'.repeat(32), 'e'.repeat(24)), 'svc-auth-session', {
  domain: 'example.com',
  secure: true,
});
const session = (tokens: Session['tokens']): Session => ({
  id: 'sid',
  share: 'abc',
  provider: 'corp',
  email: 'a@example.com',
  expiresAt: Date.now() + 3600_000,
  checkedAt: Date.now(),
  tokens,
});

describe('session cookie', () => {
  it('is HttpOnly, SameSite=Lax, Secure, domain-scoped, and expires with the session', () => {
    const set = cookies.write(session({ accessToken: 'a', refreshToken: 'r' }));
    expect(set).toMatch(
      /^svc-auth-session=[A-Za-z0-9_-]+; Path=\/; Domain=example\.com; Max-Age=(3599|3600); HttpOnly; SameSite=Lax; Secure$/,
    );
    expect(cookies.read(set.split(';')[0])?.tokens).toEqual({ accessToken: 'a', refreshToken: 'r' });
  });

  it('stays under the browser limit with a huge access token by keeping only the refresh token', () => {
    const set = cookies.write(session({ accessToken: 'x'.repeat(6000), refreshToken: 'r' }));
    expect(set.length).toBeLessThanOrEqual(MAX_COOKIE_BYTES);
    expect(cookies.read(set.split(';')[0])?.tokens).toEqual({ refreshToken: 'r' });
  });

  it('refuses to write a cookie that cannot be kept small', () => {
    expect(() => cookies.write(session({ refreshToken: 'r'.repeat(6000) }))).toThrow(/above the 4000-byte bound/);
  });

  it('stops accepting a session at its expiry, also when it was read before', async () => {
    const set = cookies.write({ ...session({ accessToken: 'a' }), expiresAt: Date.now() + 80 });
    const header = set.split(';')[0];
    expect(cookies.read(header)?.email).toBe('a@example.com');
    expect(cookies.read(header)?.email).toBe('a@example.com');
    await new Promise((r) => setTimeout(r, 120));
    expect(cookies.read(header)).toBeUndefined();
  });

  it('clears by expiring immediately', () => {
    expect(cookies.clear()).toMatch(
      /^svc-auth-session=; Path=\/; Domain=example\.com; Max-Age=0; Expires=Thu, 01 Jan 1970/,
    );
  });
});
