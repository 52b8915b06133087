import { describe, expect, it } from 'vitest';
import { TestClock } from '../test/support/clock.ts';
import { LoginStates, MAX_RETURN_PATH, type StartedLogin } from './login-state.ts';
import { installationKeyRing } from './share-keys.ts';

const KEYS = { signingKey: 's'.repeat(32), encryptionKey: 'e'.repeat(24) };
const sealer = installationKeyRing(KEYS);
const cookieOf = (setCookie: string) => setCookie.split(';')[0];
const ABC = { token: 'abc', instance: 'abc-instance-1' };
const shareOf = (token: string) => (token === ABC.token ? ABC : undefined);

/** A login as a browser makes one: the share host's ticket, then the endpoint host's start. */
function begin(states: LoginStates, path: string, cookie?: string): StartedLogin {
  const started = states.start('corp', states.ticket('corp', ABC, path), cookie, shareOf);
  if (typeof started === 'string') throw new Error(started);
  return started;
}

describe('login state', () => {
  it('returns to the share root from a path too long to carry through the login', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: true });
    const longest = `/${'a'.repeat(MAX_RETURN_PATH - 1)}`;
    const cases: [string, string][] = [
      [longest, longest],
      [`${longest}b`, '/'],
      [`/${'x'.repeat(20_000)}`, '/'],
    ];
    for (const [path, back] of cases) {
      const login = begin(states, path);
      const done = await states.complete('corp', login.state, cookieOf(login.setCookie), shareOf);
      expect(typeof done === 'string' ? done : done.state.path).toBe(back);
    }
  });

  it('completes once and refuses the replay', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: true });
    const login = begin(states, '/x?y=1');
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
    const options = { secure: true };
    const states = new LoginStates(timedSealer, 'svc-auth-session', 5_000, options, clock);
    const first = begin(states, '/');
    const second = begin(states, '/');
    expect(await states.complete('corp', first.state, cookieOf(second.setCookie), shareOf)).toBe(
      'the login was started in another browser or has expired',
    );
    clock.advance(5_100);
    expect(await states.complete('corp', second.state, cookieOf(second.setCookie), shareOf)).toBe(
      "the login's share was replaced by another share, or the login state is invalid or expired",
    );
  });

  it('completes logins of two tabs in either order, each once, and forgets the oldest beyond five', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: true });
    const first = begin(states, '/one');
    const second = begin(states, '/two', cookieOf(first.setCookie));
    const doneSecond = await states.complete('corp', second.state, cookieOf(second.setCookie), shareOf);
    expect(doneSecond).toMatchObject({ state: { path: '/two' }, codeVerifier: second.codeVerifier });
    const remaining = cookieOf((doneSecond as { setCookie: string }).setCookie);
    const doneFirst = await states.complete('corp', first.state, remaining, shareOf);
    expect(doneFirst).toMatchObject({ state: { path: '/one' }, codeVerifier: first.codeVerifier });
    expect((doneFirst as { setCookie: string }).setCookie).toMatch(
      /^__Host-svc-auth-session-login=; Path=\/; Max-Age=0/,
    );
    let cookie = cookieOf(first.setCookie);
    const many = [first];
    for (let i = 0; i < 5; i++) {
      const next = begin(states, `/${i}`, cookie);
      many.push(next);
      cookie = cookieOf(next.setCookie);
    }
    expect(await states.complete('corp', many[0]!.state, cookie, shareOf)).toBe(
      'the login was started in another browser or has expired',
    );
    expect(await states.complete('corp', many[5]!.state, cookie, shareOf)).toMatchObject({ state: { path: '/4' } });
  });

  it('keeps the PKCE verifier and nonce out of the state parameter', () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: false });
    const login = begin(states, '/');
    const [token, sealed] = login.state.split('~');
    expect(token).toBe('abc');
    const opened = sealer.sealerFor(ABC)?.open<Record<string, unknown>>('state', sealed);
    expect(Object.keys(opened ?? {}).sort()).toEqual(['bind', 'id', 'instance', 'path', 'provider', 'share']);
  });

  it('sets a host-only login cookie: `__Host-` under https, plain name under http', () => {
    const secure = begin(new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: true }), '/');
    expect(secure.setCookie).toMatch(
      /^__Host-svc-auth-session-login=abc~[\w-]+; Path=\/; Max-Age=60; HttpOnly; SameSite=Lax; Secure$/,
    );
    const plain = begin(new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: false }), '/');
    expect(plain.setCookie).toMatch(/^svc-auth-session-login=abc~[\w-]+; Path=\/; Max-Age=60; HttpOnly; SameSite=Lax$/);
  });

  it('refuses a login cookie for the cookie domain under the unprefixed name when the endpoint is https', async () => {
    const states = new LoginStates(sealer, 'svc-auth-session', 60_000, { secure: true });
    const login = begin(states, '/');
    // What a share's script could write: the same entry, under the name without the prefix.
    const planted = cookieOf(login.setCookie)?.replace(/^__Host-/, '');
    expect(await states.complete('corp', login.state, planted, shareOf)).toBe(
      'the login was started in another browser or has expired',
    );
  });

  it('starts only from a ticket of this provider, for the share the token names now, unexpired', () => {
    const clock = new TestClock();
    const states = new LoginStates(
      installationKeyRing(KEYS, clock),
      'svc-auth-session',
      600_000,
      { secure: true },
      clock,
    );
    const ticket = states.ticket('corp', ABC, '/p');
    expect(states.start('other', ticket, undefined, shareOf)).toBe('the login link belongs to another provider');
    const replaced = (token: string) => (token === 'abc' ? { token, instance: 'abc-instance-2' } : undefined);
    expect(states.start('corp', ticket, undefined, replaced)).toBe(
      'the login link is invalid or expired, or its share was replaced',
    );
    expect(states.start('corp', ticket, undefined, () => undefined)).toBe(
      'the share this login is for no longer exists',
    );
    expect(states.start('corp', undefined, undefined, shareOf)).toBe('the login link is invalid');
    // A state or login entry is no ticket (the purpose is sealed in).
    const login = begin(states, '/');
    expect(states.start('corp', login.state, undefined, shareOf)).toBe(
      'the login link is invalid or expired, or its share was replaced',
    );
    clock.advance(60_001);
    expect(states.start('corp', ticket, undefined, shareOf)).toBe(
      'the login link is invalid or expired, or its share was replaced',
    );
  });
});
