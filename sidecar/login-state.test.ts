import { describe, expect, it } from 'vitest';
import { TestClock } from '../test/support/clock.ts';
import { LoginStates } from './login-state.ts';
import { installationKeyRing } from './share-keys.ts';

const KEYS = { signingKey: 's'.repeat(32), encryptionKey: 'e'.repeat(24) };
const sealer = installationKeyRing(KEYS);
const cookieOf = (setCookie: string) => setCookie.split(';')[0];
const ABC = { token: 'abc', instance: 'abc-instance-1' };
const shareOf = (token: string) => (token === ABC.token ? ABC : undefined);

describe('login state', () => {
  it('completes once and refuses the replay', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { domain: 'example.com', secure: true });
    const login = states.start('corp', ABC, '/x?y=1');
    const done = await states.complete('corp', login.state, cookieOf(login.setCookie), shareOf);
    expect(done).toMatchObject({
      state: { provider: 'corp', share: 'abc', instance: 'abc-instance-1', path: '/x?y=1' },
      nonce: login.nonce,
      codeVerifier: login.codeVerifier,
    });
    expect(await states.complete('corp', login.state, cookieOf(login.setCookie), shareOf)).toBe(
      'the login state was already used',
    );
  });

  it('refuses an expired state (intermediate_lifetime) and a cookie from another login', async () => {
    const clock = new TestClock();
    const timedSealer = installationKeyRing(KEYS, clock);
    const options = { domain: 'example.com', secure: true };
    const states = new LoginStates(timedSealer, 'svc-auth-session', 5_000, options, clock);
    const first = states.start('corp', ABC, '/');
    const second = states.start('corp', ABC, '/');
    expect(await states.complete('corp', first.state, cookieOf(second.setCookie), shareOf)).toBe(
      'the login was started in another browser or has expired',
    );
    clock.advance(5_100);
    expect(await states.complete('corp', second.state, cookieOf(second.setCookie), shareOf)).toBe(
      "the login's share was replaced by another share, or the login state is invalid or expired",
    );
  });

  it('completes logins of two tabs in either order, each once, and forgets the oldest beyond five', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { domain: 'example.com', secure: true });
    const first = states.start('corp', ABC, '/one');
    const second = states.start('corp', ABC, '/two', cookieOf(first.setCookie));
    const doneSecond = await states.complete('corp', second.state, cookieOf(second.setCookie), shareOf);
    expect(doneSecond).toMatchObject({ state: { path: '/two' }, codeVerifier: second.codeVerifier });
    const remaining = cookieOf((doneSecond as { setCookie: string }).setCookie);
    const doneFirst = await states.complete('corp', first.state, remaining, shareOf);
    expect(doneFirst).toMatchObject({ state: { path: '/one' }, codeVerifier: first.codeVerifier });
    expect((doneFirst as { setCookie: string }).setCookie).toMatch(/^svc-auth-session-login=; .*Max-Age=0/);
    let cookie = cookieOf(first.setCookie);
    const many = [first];
    for (let i = 0; i < 5; i++) {
      const next = states.start('corp', ABC, `/${i}`, cookie);
      many.push(next);
      cookie = cookieOf(next.setCookie);
    }
    expect(await states.complete('corp', many[0]!.state, cookie, shareOf)).toBe(
      'the login was started in another browser or has expired',
    );
    expect(await states.complete('corp', many[5]!.state, cookie, shareOf)).toMatchObject({ state: { path: '/4' } });
  });

  it('keeps the PKCE verifier and nonce out of the state parameter', () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { domain: 'example.com', secure: false });
    const login = states.start('corp', ABC, '/');
    const [token, sealed] = login.state.split('~');
    expect(token).toBe('abc');
    const opened = sealer.sealerFor(ABC)?.open<Record<string, unknown>>('state', sealed);
    expect(Object.keys(opened ?? {}).sort()).toEqual(['id', 'instance', 'path', 'provider', 'share']);
  });
});
