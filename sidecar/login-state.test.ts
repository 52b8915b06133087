import { describe, expect, it } from 'vitest';
import { TestClock } from '../test/support/clock.ts';
import { LoginStates } from './login-state.ts';
import { createSealer } from './seal.ts';

const sealer = createSealer('s'.repeat(32), 'e'.repeat(24));
const cookieOf = (setCookie: string) => setCookie.split(';')[0];
const ABC = { token: 'abc', instance: 'abc-instance-1' };

describe('login state', () => {
  it('completes once and refuses the replay', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { domain: 'example.com', secure: true });
    const login = states.start('corp', ABC, '/x?y=1');
    const done = await states.complete('corp', login.state, cookieOf(login.setCookie));
    expect(done).toMatchObject({
      state: { provider: 'corp', share: 'abc', instance: 'abc-instance-1', path: '/x?y=1' },
      nonce: login.nonce,
      codeVerifier: login.codeVerifier,
    });
    expect(await states.complete('corp', login.state, cookieOf(login.setCookie))).toBe(
      'the login state was already used',
    );
  });

  it('refuses an expired state (intermediate_lifetime) and a cookie from another login', async () => {
    const clock = new TestClock();
    const timedSealer = createSealer('s'.repeat(32), 'e'.repeat(24), clock);
    const options = { domain: 'example.com', secure: true };
    const states = new LoginStates(timedSealer, 'svc-auth-session', 30, options, clock);
    const first = states.start('corp', ABC, '/');
    const second = states.start('corp', ABC, '/');
    expect(await states.complete('corp', first.state, cookieOf(second.setCookie))).toBe(
      'the login was started in another browser or has expired',
    );
    clock.advance(50);
    expect(await states.complete('corp', second.state, cookieOf(second.setCookie))).toBe(
      'the login state is invalid or expired',
    );
  });

  it('completes logins of two tabs in either order, each once, and forgets the oldest beyond five', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { domain: 'example.com', secure: true });
    const first = states.start('corp', ABC, '/one');
    const second = states.start('corp', ABC, '/two', cookieOf(first.setCookie));
    const doneSecond = await states.complete('corp', second.state, cookieOf(second.setCookie));
    expect(doneSecond).toMatchObject({ state: { path: '/two' }, codeVerifier: second.codeVerifier });
    const remaining = cookieOf((doneSecond as { setCookie: string }).setCookie);
    const doneFirst = await states.complete('corp', first.state, remaining);
    expect(doneFirst).toMatchObject({ state: { path: '/one' }, codeVerifier: first.codeVerifier });
    expect((doneFirst as { setCookie: string }).setCookie).toMatch(/^svc-auth-session-login=; .*Max-Age=0/);
    let cookie = cookieOf(first.setCookie);
    const many = [first];
    for (let i = 0; i < 5; i++) {
      const next = states.start('corp', ABC, `/${i}`, cookie);
      many.push(next);
      cookie = cookieOf(next.setCookie);
    }
    expect(await states.complete('corp', many[0]!.state, cookie)).toBe(
      'the login was started in another browser or has expired',
    );
    expect(await states.complete('corp', many[5]!.state, cookie)).toMatchObject({ state: { path: '/4' } });
  });

  it('keeps the PKCE verifier and nonce out of the state parameter', () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { domain: 'example.com', secure: false });
    const login = states.start('corp', ABC, '/');
    const opened = sealer.open<Record<string, unknown>>('state', login.state);
    expect(Object.keys(opened ?? {}).sort()).toEqual(['id', 'instance', 'path', 'provider', 'share']);
  });
});
