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
  return {
    name,
    read: (header) => sealer.open<Session>('session', parseCookies(header).get(name)),
    write,
    clear: () => serializeCookie(name, '', { ...options, maxAgeSeconds: 0 }),
  };
}
