import { systemClock, type Clock } from '../lib/clock.ts';
import { MAX_COOKIE_BYTES, cookieValue, serializeCookie, type CookieOptions } from './cookies.ts';
import type { ProviderTokens } from './providers/types.ts';
import type { KeyRing, ShareIdentity } from './share-keys.ts';
import { joinParts, parsePart, parseParts, partText, partTextFor, type SharePart } from './share-parts.ts';

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
 * it logged in to, so a visitor can use several shares side by side. Each session is its own entry
 * (`<token>~<sealed>`, sidecar/share-parts.ts) sealed under its share's keys (sidecar/share-keys.ts):
 * a share pod holding only its own keys opens and makes only its own share's entry and passes the
 * others through untouched. The cookie is bounded: when entries do not fit, the least recently
 * written go.
 */
export interface SessionCookies {
  readonly name: string;
  /** The request's unexpired session for this share (token and instance), when its entry opens here. */
  read(cookieHeader: string | undefined, share: ShareIdentity): Session | undefined;
  /** Every unexpired session of the request whose share this frontend knows (`instanceOf`) and holds keys for. */
  readAll(cookieHeader: string | undefined, instanceOf: (token: string) => string | undefined): Session[];
  /**
   * Set-Cookie holding `session` (replacing the entry of its share) first, then as many of the
   * request's other entries as fit; throws when even `session` alone, without its access token,
   * exceeds the bound.
   */
  write(session: Session, cookieHeader: string | undefined): string;
  /**
   * `session` as the cookie stores it: whole when its entry alone fits the bound, else without its
   * access token (what `write` keeps); throws when even that exceeds the bound. A hand-over or a
   * renew answer carries this, so whatever fits a cookie also fits them.
   */
  fit(session: Session): Session;
  /** One session sealed as its share's entry (undefined when this frontend lacks the share's keys). */
  seal(session: Session): string | undefined;
  /** A sealed entry of this share opened (undefined when forged, expired or for another share). */
  open(share: ShareIdentity, sealed: string): Session | undefined;
  clear(): string;
}

const OPENED_CACHE_SIZE = 10_000;

/**
 * Opened entries by exact text (`<token>~<sealed>`). A sealed value cannot change without failing to
 * open, so a hit needs only the share and expiry checks; this skips HMAC + AES-GCM + JSON on every
 * request of a visitor (measured in docs/benchmarks-history.md). Bounded; oldest entries go first.
 */
class OpenedSessions {
  private readonly byText = new Map<string, Session>();
  private readonly openOne: (share: ShareIdentity, sealed: string) => Session | undefined;
  private readonly clock: Clock;

  constructor(openOne: (share: ShareIdentity, sealed: string) => Session | undefined, clock: Clock) {
    this.openOne = openOne;
    this.clock = clock;
  }

  open(text: string, share: ShareIdentity): Session | undefined {
    let session = this.byText.get(text);
    if (!session) {
      const part = parsePart(text);
      session = part && part.token === share.token ? this.openOne(share, part.sealed) : undefined;
      if (!session) return undefined;
      if (this.byText.size >= OPENED_CACHE_SIZE) this.byText.delete(this.byText.keys().next().value as string);
      this.byText.set(text, session);
    }
    // A cached entry was opened under the share's keys of that time: a later instance of the token is another share.
    return session.instance === share.instance && session.expiresAt > this.clock.now() ? session : undefined;
  }
}

export function sessionCookies(
  keys: KeyRing,
  name: string,
  options: Omit<CookieOptions, 'maxAgeSeconds'>,
  clock: Clock = systemClock,
): SessionCookies {
  const sealOne = (session: Session): string | undefined =>
    keys.sealerFor({ token: session.share, instance: session.instance })?.seal('session', session, session.expiresAt);

  const openOne = (share: ShareIdentity, sealed: string): Session | undefined => {
    const session = keys.sealerFor(share)?.open<Session>('session', sealed);
    return session && session.share === share.token && session.instance === share.instance ? session : undefined;
  };

  const serialize = (session: Session, sealed: string, others: readonly SharePart[]): string =>
    serializeCookie(name, joinParts([{ token: session.share, sealed }, ...others]), {
      ...options,
      // Every session is made or renewed for session_lifetime, so the newest entry lives longest.
      maxAgeSeconds: (session.expiresAt - clock.now()) / 1000,
    });

  /** The session the cookie stores (see `fit`) and its sealed entry. */
  const fitted = (session: Session): { readonly session: Session; readonly sealed: string } => {
    const sealed = sealOne(session);
    if (!sealed) throw new Error(`this frontend holds no keys for share ${session.share}`);
    if (serialize(session, sealed, []).length <= MAX_COOKIE_BYTES) return { session, sealed };
    // Large provider tokens: keep what refresh and revocation need, in that order of importance.
    const { accessToken: _dropped, ...rest } = session.tokens;
    const smaller: Session = { ...session, tokens: rest };
    const smallerSealed = sealOne(smaller) ?? '';
    const length = serialize(smaller, smallerSealed, []).length;
    if (length <= MAX_COOKIE_BYTES) return { session: smaller, sealed: smallerSealed };
    throw new Error(`session cookie would be ${length} bytes, above the ${MAX_COOKIE_BYTES}-byte bound`);
  };

  const write = (session: Session, cookieHeader: string | undefined): string => {
    const stored = fitted(session);
    const others = parseParts(cookieValue(cookieHeader, name)).filter((p) => p.token !== session.share);
    for (let count = others.length; count > 0; count--) {
      const cookie = serialize(stored.session, stored.sealed, others.slice(0, count));
      if (cookie.length <= MAX_COOKIE_BYTES) return cookie;
    }
    return serialize(stored.session, stored.sealed, []);
  };

  const opened = new OpenedSessions(openOne, clock);
  const openPart = (text: string, share: ShareIdentity) => opened.open(text, share);

  return {
    name,
    read(cookieHeader, share) {
      const text = partTextFor(cookieValue(cookieHeader, name), share.token);
      return text ? openPart(text, share) : undefined;
    },
    readAll(cookieHeader, instanceOf) {
      const sessions: Session[] = [];
      for (const part of parseParts(cookieValue(cookieHeader, name))) {
        const instance = instanceOf(part.token);
        const session = instance === undefined ? undefined : openPart(partText(part), { token: part.token, instance });
        if (session) sessions.push(session);
      }
      return sessions;
    },
    write,
    fit: (session) => fitted(session).session,
    seal: sealOne,
    open: (share, sealed) => {
      const session = openOne(share, sealed);
      return session && session.expiresAt > clock.now() ? session : undefined;
    },
    clear: () => serializeCookie(name, '', { ...options, maxAgeSeconds: 0 }),
  };
}
