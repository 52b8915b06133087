import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../lib/clock.ts';
import { cookieValue, serializeCookie, type CookieOptions } from './cookies.ts';
import type { KeyRing, ShareIdentity } from './share-keys.ts';
import { joinParts, parsePart, parseParts, partText, type SharePart } from './share-parts.ts';
import { localSharedState, type SharedState } from './shared-state.ts';

/** What the signed `state` parameter carries through the provider round trip. */
export interface LoginState {
  readonly id: string;
  readonly provider: string;
  readonly share: string;
  /** The share's identity (ShareRoute.instance): a callback for a share replaced meanwhile is refused. */
  readonly instance: string;
  /** Path and query on the share host to return to after login (never a host: that comes from `share`). */
  readonly path: string;
  /** Digest of the share host's binding cookie in the browser that started the login (sidecar/handover.ts). */
  readonly bind: string;
}

/** Secrets that stay in the browser's login cookie and never travel in a URL. */
interface LoginSecrets {
  readonly id: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** Epoch ms: end of intermediate_lifetime for this login. */
  readonly expiresAt: number;
}

/** What a login start ticket carries from the share host to the endpoint host's start path. */
interface StartTicket {
  readonly provider: string;
  readonly share: string;
  readonly instance: string;
  readonly path: string;
  readonly bind: string;
}

/** A ticket is followed at once (a redirect); it is good for a minute at most. */
const TICKET_LIFETIME_MS = 60_000;
/**
 * The longest return path a login carries; a longer one returns to the share's root. The path
 * travels in the start ticket, the state and the hand-over ticket, which must stay within what a
 * sealed value may be (8192 characters) next to a session at the cookie's size limit.
 */
export const MAX_RETURN_PATH = 2048;

/** Logins kept under way per browser; a further one drops the oldest (its tab must start again). */
const MAX_PENDING_LOGINS = 5;

export interface StartedLogin {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  readonly setCookie: string;
}

export interface CompletedLogin {
  readonly state: LoginState;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** Set-Cookie for the login cookie after this login: the other logins still under way, or cleared. */
  readonly setCookie: string;
}

/**
 * The intermediate OAuth state, living `intermediate_lifetime`. The sealed `state` parameter names
 * the share and return path; the login cookie binds the flow to the browser that started it (no login
 * fixation through a forwarded callback URL) and holds the PKCE verifier and nonce. Each state is
 * accepted once: a replayed callback is refused even if the cookie was copied. The cookie holds
 * every login under way in this browser, so two tabs that were both sent to the provider can both
 * come back (with one secret per cookie the second tab's login overwrote the first's).
 *
 * The login cookie is set by the endpoint host, host-only (`loginCookieName`): every share lives
 * under the cookie domain and its pages are its owner's code, so a cookie the share host could set
 * could also be written by a share's script (`document.cookie`, Domain=<cookie_domain>), planting
 * the attacker's own login in a visitor's browser before sending it to the callback with the
 * attacker's code and state (login CSRF). So a login goes share host → `ticket` → endpoint host's
 * `/<provider>/auth/start` → `start` (cookie set there) → provider → callback → the share host's
 * hand-over (sidecar/handover.ts), which sets the session only in the browser that started the login.
 *
 * Ticket, state and login entries are sealed under the share's own keys (sidecar/share-keys.ts)
 * with the share's token in clear (`<token>~<sealed>`, sidecar/share-parts.ts): the share pod that
 * makes the ticket holds only its share's keys, and the auth endpoint derives that share's keys
 * from the token and the share's current instance, so nothing made with one share's keys (or for
 * an earlier instance of the token) starts or completes a login for another.
 */
export class LoginStates {
  readonly cookieName: string;
  private readonly replay: Pick<SharedState, 'claimLogin'>;
  private readonly keys: KeyRing;
  private readonly lifetimeMs: number;
  private readonly cookieOptions: Omit<CookieOptions, 'maxAgeSeconds' | 'domain'>;
  private readonly clock: Clock;

  constructor(
    keys: KeyRing,
    cookieName: string,
    lifetimeMs: number,
    cookieOptions: Omit<CookieOptions, 'maxAgeSeconds' | 'domain'>,
    clock: Clock = systemClock,
    replay: Pick<SharedState, 'claimLogin'> = localSharedState(clock),
  ) {
    this.replay = replay;
    this.keys = keys;
    this.cookieName = loginCookieName(cookieName, cookieOptions.secure);
    this.lifetimeMs = lifetimeMs;
    this.cookieOptions = cookieOptions;
    this.clock = clock;
  }

  /**
   * The share host's half of a login: a ticket naming the share, provider and return path, sealed
   * under the share's keys (a share pod holds them), which the browser carries to the endpoint
   * host's start path (`start` below). It holds no secret; `bind` is the digest of the share host's
   * binding cookie, carried through the login to the hand-over (sidecar/handover.ts); a login
   * without one ('') completes, but its session is handed over to no browser.
   */
  ticket(provider: string, share: ShareIdentity, path: string, bind = ''): string {
    const sealer = this.keys.sealerFor(share);
    if (!sealer) throw new Error(`this frontend holds no keys for share ${share.token}`);
    const kept = path.length <= MAX_RETURN_PATH ? path : '/';
    const ticket: StartTicket = { provider, share: share.token, instance: share.instance, path: kept, bind };
    const expires = this.clock.now() + Math.min(this.lifetimeMs, TICKET_LIFETIME_MS);
    return partText({ token: share.token, sealed: sealer.seal('start', ticket, expires) });
  }

  /**
   * The endpoint host's half: opens a ticket made for `provider` (with the keys of the share its
   * token names now) and starts the login, whose secrets go into the endpoint host's own login
   * cookie. Returns a reason string when the ticket is refused.
   */
  start(
    provider: string,
    ticketParam: string | undefined,
    cookieHeader: string | undefined,
    shareOf: (token: string) => ShareIdentity | undefined,
  ): StartedLogin | string {
    const part = parsePart(ticketParam);
    if (!part) return 'the login link is invalid';
    const share = shareOf(part.token);
    if (!share) return 'the share this login is for no longer exists';
    const sealer = this.keys.sealerFor(share);
    const ticket = sealer?.open<StartTicket>('start', part.sealed);
    if (!sealer || !ticket || ticket.share !== share.token || ticket.instance !== share.instance)
      return 'the login link is invalid or expired, or its share was replaced';
    if (ticket.provider !== provider) return 'the login link belongs to another provider';
    if (typeof ticket.bind !== 'string') return 'the login link is invalid or expired, or its share was replaced';
    const id = randomBytes(16).toString('base64url');
    const expires = this.clock.now() + this.lifetimeMs;
    const secrets: LoginSecrets = {
      id,
      nonce: randomBytes(16).toString('base64url'),
      codeVerifier: randomBytes(32).toString('base64url'),
      expiresAt: expires,
    };
    const state = partText({
      token: share.token,
      sealed: sealer.seal(
        'state',
        {
          id,
          provider,
          share: share.token,
          instance: share.instance,
          path: ticket.path,
          bind: ticket.bind,
        } satisfies LoginState,
        expires,
      ),
    });
    const others = parseParts(cookieValue(cookieHeader, this.cookieName)).slice(-(MAX_PENDING_LOGINS - 1));
    const mine: SharePart = { token: share.token, sealed: sealer.seal('login', secrets, expires) };
    return {
      state,
      nonce: secrets.nonce,
      codeVerifier: secrets.codeVerifier,
      setCookie: this.cookie([...others, mine]),
    };
  }

  /**
   * Checks a callback's `state` against the provider in the path and the browser's login cookie.
   * `shareOf` gives the share a token names now (undefined when there is none). Returns a reason
   * string when refused, so the error page and metrics can say why.
   */
  async complete(
    provider: string,
    stateParam: string | undefined,
    cookieHeader: string | undefined,
    shareOf: (token: string) => ShareIdentity | undefined,
  ): Promise<CompletedLogin | string> {
    if (!stateParam) return 'the login response has no state';
    const part = parsePart(stateParam);
    if (!part) return 'the login state is invalid or expired';
    const share = shareOf(part.token);
    if (!share) return 'the share this login was for no longer exists';
    const sealer = this.keys.sealerFor(share);
    const state = sealer?.open<LoginState>('state', part.sealed);
    // Sealed under the keys of the share's instance: a state made for an earlier one does not open.
    if (!sealer || !state || state.share !== share.token || state.instance !== share.instance)
      return "the login's share was replaced by another share, or the login state is invalid or expired";
    if (state.provider !== provider) return 'the login state belongs to another provider';
    const parts = parseParts(cookieValue(cookieHeader, this.cookieName));
    const now = this.clock.now();
    let mine: { part: SharePart; secrets: LoginSecrets } | undefined;
    for (const p of parts) {
      const secrets = p.token === share.token ? sealer.open<LoginSecrets>('login', p.sealed) : undefined;
      if (secrets?.id === state.id && secrets.expiresAt > now) mine = { part: p, secrets };
    }
    if (!mine) return 'the login was started in another browser or has expired';
    if (!(await this.replay.claimLogin(state.id, this.clock.now() + this.lifetimeMs)))
      return 'the login state was already used';
    return {
      state,
      nonce: mine.secrets.nonce,
      codeVerifier: mine.secrets.codeVerifier,
      setCookie: this.cookie(parts.filter((p) => p !== mine?.part)),
    };
  }

  /**
   * The login cookie holding these entries. Its lifetime is intermediate_lifetime from now: every
   * entry was made at most that long ago and expires inside its seal at its own time.
   */
  private cookie(logins: readonly SharePart[]): string {
    if (logins.length === 0) return this.clearCookie();
    return serializeCookie(this.cookieName, joinParts(logins), {
      ...this.cookieOptions,
      maxAgeSeconds: Math.ceil(this.lifetimeMs / 1000),
    });
  }

  clearCookie(): string {
    return serializeCookie(this.cookieName, '', { ...this.cookieOptions, maxAgeSeconds: 0 });
  }
}

/**
 * The login cookie's name: `__Host-<cookie_name>-login` when the endpoint is https, so that browsers
 * take it only host-only, Secure and for `Path=/` (no share on a sibling host can plant or replace
 * it); `<cookie_name>-login`, host-only too, on a plain-HTTP endpoint, where the prefix cannot be
 * used (docs/security.md: a weaker guarantee, for development only).
 */
export function loginCookieName(cookieName: string, secure: boolean): string {
  return secure ? `__Host-${cookieName}-login` : `${cookieName}-login`;
}
