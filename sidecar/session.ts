import { MAX_COOKIE_BYTES, parseCookies, serializeCookie, type CookieOptions } from './cookies.ts';
import type { Sealer } from './seal.ts';
import type { ProviderTokens } from './providers/types.ts';

/**
 * A visitor's authenticated session, stored only in the browser (sealed cookie). It is bound to one
 * share and one provider: a cookie minted for share A is worthless on share B.
 */
export interface Session {
  /** Random id, so a logout can refuse copies of this cookie in this process. */
  readonly id: string;
  readonly share: string;
  readonly provider: string;
  readonly email: string;
  /** Epoch ms: end of session_lifetime (renewed by a successful refresh). */
  readonly expiresAt: number;
  /** Epoch ms: last time the provider confirmed the identity (login or refresh). */
  readonly checkedAt: number;
  readonly tokens: ProviderTokens;
}

export interface SessionCookies {
  read(cookieHeader: string | undefined): Session | undefined;
  /** Set-Cookie value for a session; throws when even the minimal form exceeds the cookie bound. */
  write(session: Session): string;
  clear(): string;
  readonly name: string;
}

const OPENED_CACHE_SIZE = 10_000;

export function sessionCookies(
  sealer: Sealer,
  name: string,
  options: Omit<CookieOptions, 'maxAgeSeconds'>,
): SessionCookies {
  const write = (session: Session): string => {
    const maxAgeSeconds = (session.expiresAt - Date.now()) / 1000;
    const cookie = serializeCookie(name, sealer.seal('session', session, session.expiresAt), {
      ...options,
      maxAgeSeconds,
    });
    if (cookie.length <= MAX_COOKIE_BYTES) return cookie;
    // Large provider tokens: keep what refresh and revocation need, in that order of importance.
    const { accessToken: _dropped, ...rest } = session.tokens;
    const smaller = serializeCookie(name, sealer.seal('session', { ...session, tokens: rest }, session.expiresAt), {
      ...options,
      maxAgeSeconds,
    });
    if (smaller.length <= MAX_COOKIE_BYTES) return smaller;
    throw new Error(`session cookie would be ${smaller.length} bytes, above the ${MAX_COOKIE_BYTES}-byte bound`);
  };
  // Opened sessions by exact cookie value. A sealed value cannot change without failing to open,
  // so a hit needs only the expiry check; this skips HMAC + AES-GCM + JSON on every request of a
  // visitor (measured in docs/benchmarks.md). Bounded; oldest entries go first.
  const opened = new Map<string, Session>();
  const read = (header: string | undefined): Session | undefined => {
    const value = parseCookies(header).get(name);
    if (!value) return undefined;
    const hit = opened.get(value);
    if (hit) {
      if (hit.expiresAt > Date.now()) return hit;
      opened.delete(value);
      return undefined;
    }
    const session = sealer.open<Session>('session', value);
    if (session) {
      if (opened.size >= OPENED_CACHE_SIZE) opened.delete(opened.keys().next().value as string);
      opened.set(value, session);
    }
    return session;
  };
  return {
    name,
    read,
    write,
    clear: () => serializeCookie(name, '', { ...options, maxAgeSeconds: 0 }),
  };
}
