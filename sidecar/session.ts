import { systemClock, type Clock } from '../lib/clock.ts';
import { MAX_COOKIE_BYTES, cookieValue, serializeCookie, type CookieOptions } from './cookies.ts';
import type { Sealer } from './seal.ts';
import type { ProviderTokens } from './providers/types.ts';

/**
 * A visitor's authenticated session on one share, stored only in the browser (sealed cookie). It is
 * bound to that share and one provider: it is never used for another share or provider, nor for a
 * later share that was given the same token (`instance`).
 */
export interface Session {
  /** Random id, so a logout can refuse copies of this cookie in this process. */
  readonly id: string;
  /** The share's token (its host). */
  readonly share: string;
  /** The share's identity (ShareRoute.instance) when the session was made. */
  readonly instance: string;
  readonly provider: string;
  readonly email: string;
  /** Epoch ms: end of session_lifetime (renewed by a successful refresh). */
  readonly expiresAt: number;
  /** Epoch ms: last time the provider confirmed the identity (login or refresh). */
  readonly checkedAt: number;
  readonly tokens: ProviderTokens;
}

/**
 * The session cookie (`cookie_name`, on `cookie_domain`) holds the browser's sessions, one per share
 * it logged in to, so a visitor can use several shares side by side; each stays bound to its share
 * and provider. The cookie is bounded: when sessions do not fit, the least recently confirmed go.
 */
export interface SessionCookies {
  readonly name: string;
  /** The unexpired sessions in the request's cookie (empty when none or when it does not open). */
  read(cookieHeader: string | undefined): readonly Session[];
  /**
   * Set-Cookie holding `session` (replacing any for the same share) plus as many of `others` as fit;
   * throws when even `session` alone, without its access token, exceeds the bound.
   */
  write(session: Session, others: readonly Session[]): string;
  clear(): string;
}

interface Jar {
  readonly sessions: readonly Session[];
}

const OPENED_CACHE_SIZE = 10_000;

export function sessionCookies(
  sealer: Sealer,
  name: string,
  options: Omit<CookieOptions, 'maxAgeSeconds'>,
  clock: Clock = systemClock,
): SessionCookies {
  const serialize = (sessions: readonly Session[]): string => {
    const expiresAt = Math.max(...sessions.map((s) => s.expiresAt));
    return serializeCookie(name, sealer.seal('session', { sessions } satisfies Jar, expiresAt), {
      ...options,
      maxAgeSeconds: (expiresAt - clock.now()) / 1000,
    });
  };

  const write = (session: Session, others: readonly Session[]): string => {
    const now = clock.now();
    const kept = others
      .filter((s) => s.share !== session.share && s.expiresAt > now)
      .sort((a, b) => b.checkedAt - a.checkedAt);
    for (let count = kept.length; count >= 0; count--) {
      const cookie = serialize([session, ...kept.slice(0, count)]);
      if (cookie.length <= MAX_COOKIE_BYTES) return cookie;
    }
    // Large provider tokens: keep what refresh and revocation need, in that order of importance.
    const { accessToken: _dropped, ...rest } = session.tokens;
    const smaller = serialize([{ ...session, tokens: rest }]);
    if (smaller.length <= MAX_COOKIE_BYTES) return smaller;
    throw new Error(`session cookie would be ${smaller.length} bytes, above the ${MAX_COOKIE_BYTES}-byte bound`);
  };

  // Opened jars by exact cookie value. A sealed value cannot change without failing to open, so a
  // hit needs only the expiry filter; this skips HMAC + AES-GCM + JSON on every request of a
  // visitor (measured in docs/benchmarks.md). Bounded; oldest entries go first.
  const opened = new Map<string, readonly Session[]>();
  const read = (header: string | undefined): readonly Session[] => {
    const value = cookieValue(header, name);
    if (!value) return [];
    let sessions = opened.get(value);
    if (!sessions) {
      const jar = sealer.open<Jar>('session', value);
      if (!jar || !Array.isArray(jar.sessions)) return [];
      sessions = jar.sessions;
      if (opened.size >= OPENED_CACHE_SIZE) opened.delete(opened.keys().next().value as string);
      opened.set(value, sessions);
    }
    const now = clock.now();
    // The cached jar itself while none of its sessions has ended (read-only): no copy per request.
    return sessions.every((s) => s.expiresAt > now) ? sessions : sessions.filter((s) => s.expiresAt > now);
  };

  return {
    name,
    read,
    write,
    clear: () => serializeCookie(name, '', { ...options, maxAgeSeconds: 0 }),
  };
}
