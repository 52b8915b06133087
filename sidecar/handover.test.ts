import { describe, expect, it } from 'vitest';
import { TestClock } from '../test/support/clock.ts';
import { bindDigest, HandOvers, shareAuthPath } from './handover.ts';
import { MAX_COOKIE_BYTES } from './cookies.ts';
import { sessionCookies, type Session } from './session.ts';
import { installationKeyRing } from './share-keys.ts';
import { MAX_RETURN_PATH } from './login-state.ts';

const KEYS = { signingKey: 's'.repeat(32), encryptionKey: 'e'.repeat(24) };
const ABC = { token: 'abc', instance: 'abc-1' };
const session: Session = {
  id: 'sid',
  share: 'abc',
  instance: 'abc-1',
  provider: 'corp',
  email: 'alice@example.com',
  expiresAt: Date.now() + 3_600_000,
  checkedAt: Date.now(),
  tokens: { accessToken: 'at' },
};
const pair = (setCookie: string): string => setCookie.split(';')[0] as string;

describe('session hand-over', () => {
  it('is accepted once, with the binding cookie of the browser that started the login', async () => {
    const handOvers = new HandOvers(installationKeyRing(KEYS), 'svc-auth-session', true, 60_000);
    const binding = handOvers.bind(undefined);
    expect(binding.setCookie).toMatch(/^__Host-svc-auth-session-bind=[\w-]{43}; Path=\/; Max-Age=60; /);
    expect(binding.setCookie).not.toMatch(/Domain=/i);
    const ticket = handOvers.ticket(session, binding.digest, '/x?y=1');
    const cookie = pair(binding.setCookie);
    expect(await handOvers.accept(ticket, cookie, ABC)).toEqual({ session, path: '/x?y=1' });
    expect(await handOvers.accept(ticket, cookie, ABC)).toMatchObject({ refused: 'the sign-in link was already used' });
  });

  it('refuses another browser, another share or instance, and an expired or forged ticket', async () => {
    const clock = new TestClock();
    const handOvers = new HandOvers(installationKeyRing(KEYS, clock), 'svc-auth-session', true, 60_000, clock);
    const mine = handOvers.bind(undefined);
    const ticket = handOvers.ticket(session, mine.digest, '/');
    const other = pair(handOvers.bind(undefined).setCookie);
    const refused = (reason: string): unknown =>
      expect.objectContaining({ refused: expect.stringContaining(reason) as unknown }) as unknown;
    expect(await handOvers.accept(ticket, other, ABC)).toEqual(refused('another browser'));
    expect(await handOvers.accept(ticket, undefined, ABC)).toEqual(refused('another browser'));
    // The cookie name sent twice (one copy written by a share's script): trusted in neither.
    expect(await handOvers.accept(ticket, `${pair(mine.setCookie)}; ${other}`, ABC)).toEqual(
      refused('another browser'),
    );
    expect(await handOvers.accept(ticket, pair(mine.setCookie), { token: 'abc', instance: 'abc-2' })).toEqual(
      refused('invalid or expired'),
    );
    expect(await handOvers.accept(ticket, pair(mine.setCookie), { token: 'abd', instance: 'abc-1' })).toEqual(
      refused('invalid or expired'),
    );
    expect(await handOvers.accept(`${ticket}x`, pair(mine.setCookie), ABC)).toEqual(refused('invalid or expired'));
    clock.advance(60_001);
    expect(await handOvers.accept(ticket, pair(mine.setCookie), ABC)).toEqual(refused('invalid or expired'));
  });

  it('carries every session the cookie can store, whatever the sizes of its tokens', async () => {
    const keys = installationKeyRing(KEYS);
    const handOvers = new HandOvers(keys, 'svc-auth-session', true, 60_000);
    const cookies = sessionCookies(keys, '__Host-svc-auth-session', { secure: true });
    const path = `/${'p'.repeat(MAX_RETURN_PATH - 1)}`;
    let stored = 0;
    for (const access of [0, 1000, 3000, 4500, 12_000]) {
      for (let refresh = 0; refresh <= 3200; refresh += 100) {
        const tokens = {
          ...(access ? { accessToken: 'a'.repeat(access) } : {}),
          ...(refresh ? { refreshToken: 'r'.repeat(refresh) } : {}),
        };
        let fitted: Session;
        try {
          fitted = cookies.fit({ ...session, id: `sid-${access}-${refresh}`, tokens });
        } catch {
          continue;
        }
        stored += 1;
        const binding = handOvers.bind(undefined);
        const ticket = handOvers.ticket(fitted, binding.digest, path);
        expect(await handOvers.accept(ticket, pair(binding.setCookie), ABC)).toEqual({ session: fitted, path });
        expect(cookies.write(fitted, undefined).length).toBeLessThanOrEqual(MAX_COOKIE_BYTES);
      }
    }
    expect(stored).toBeGreaterThan(100);
  });

  it('keeps a binding the browser holds (another tab under way), and is host-only without the prefix on HTTP', () => {
    const handOvers = new HandOvers(installationKeyRing(KEYS), 'svc-auth-session', false, 60_000);
    const first = handOvers.bind(undefined);
    expect(first.setCookie).toMatch(/^svc-auth-session-bind=/);
    expect(handOvers.bind(pair(first.setCookie)).digest).toBe(first.digest);
    expect(bindDigest('x'.repeat(43))).not.toBe(first.digest);
    expect(handOvers.bind('svc-auth-session-bind=short').digest).not.toBe(bindDigest('short'));
  });

  it('reserves only the share provider’s hand-over and logout paths', () => {
    expect(shareAuthPath('/corp/auth/handover?ticket=t', 'corp')).toBe('handover');
    expect(shareAuthPath('/corp/logout', 'corp')).toBe('logout');
    for (const url of ['/', '/corp/auth/callback', '/other/logout', '/corp/logout/x', '/corp/auth/handover/']) {
      expect(shareAuthPath(url, 'corp'), url).toBeUndefined();
    }
  });
});
