import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../lib/clock.ts';
import { cookieValue, serializeCookie, type CookieOptions } from './cookies.ts';
import type { Sealer } from './seal.ts';
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
}

/** Secrets that stay in the browser's login cookie and never travel in a URL. */
interface LoginSecrets {
  readonly id: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** Epoch ms: end of intermediate_lifetime for this login. */
  readonly expiresAt: number;
}

/** The login cookie: the logins this browser has under way (one per tab that was sent to a provider). */
interface PendingLogins {
  readonly logins: readonly LoginSecrets[];
}

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
 */
export class LoginStates {
  readonly cookieName: string;
  private readonly replay: Pick<SharedState, 'claimLogin'>;
  private readonly sealer: Sealer;
  private readonly lifetimeMs: number;
  private readonly cookieOptions: Omit<CookieOptions, 'maxAgeSeconds'>;
  private readonly clock: Clock;

  constructor(
    sealer: Sealer,
    cookieName: string,
    lifetimeMs: number,
    cookieOptions: Omit<CookieOptions, 'maxAgeSeconds'>,
    clock: Clock = systemClock,
    replay: Pick<SharedState, 'claimLogin'> = localSharedState(clock),
  ) {
    this.replay = replay;
    this.sealer = sealer;
    this.cookieName = `${cookieName}-login`;
    this.lifetimeMs = lifetimeMs;
    this.cookieOptions = cookieOptions;
    this.clock = clock;
  }

  start(
    provider: string,
    share: { readonly token: string; readonly instance: string },
    path: string,
    cookieHeader?: string,
  ): StartedLogin {
    const id = randomBytes(16).toString('base64url');
    const expires = this.clock.now() + this.lifetimeMs;
    const secrets: LoginSecrets = {
      id,
      nonce: randomBytes(16).toString('base64url'),
      codeVerifier: randomBytes(32).toString('base64url'),
      expiresAt: expires,
    };
    const state = this.sealer.seal(
      'state',
      { id, provider, share: share.token, instance: share.instance, path } satisfies LoginState,
      expires,
    );
    const others = this.pending(cookieHeader).slice(-(MAX_PENDING_LOGINS - 1));
    return {
      state,
      nonce: secrets.nonce,
      codeVerifier: secrets.codeVerifier,
      setCookie: this.cookie([...others, secrets]),
    };
  }

  /**
   * Checks a callback's `state` against the provider in the path and the browser's login cookie.
   * Returns a reason string when refused, so the error page and metrics can say why.
   */
  async complete(
    provider: string,
    stateParam: string | undefined,
    cookieHeader: string | undefined,
  ): Promise<CompletedLogin | string> {
    if (!stateParam) return 'the login response has no state';
    const state = this.sealer.open<LoginState>('state', stateParam);
    if (!state) return 'the login state is invalid or expired';
    if (state.provider !== provider) return 'the login state belongs to another provider';
    const pending = this.pending(cookieHeader);
    const secrets = pending.find((s) => s.id === state.id);
    if (!secrets) return 'the login was started in another browser or has expired';
    if (!(await this.replay.claimLogin(state.id, this.clock.now() + this.lifetimeMs)))
      return 'the login state was already used';
    return {
      state,
      nonce: secrets.nonce,
      codeVerifier: secrets.codeVerifier,
      setCookie: this.cookie(pending.filter((s) => s.id !== state.id)),
    };
  }

  /** The unexpired logins in the request's login cookie (none when it is absent or does not open). */
  private pending(cookieHeader: string | undefined): LoginSecrets[] {
    const jar = this.sealer.open<PendingLogins>('login', cookieValue(cookieHeader, this.cookieName));
    const logins: readonly LoginSecrets[] = Array.isArray(jar?.logins) ? jar.logins : [];
    const now = this.clock.now();
    return logins.filter((s) => typeof s.expiresAt === 'number' && s.expiresAt > now);
  }

  private cookie(logins: readonly LoginSecrets[]): string {
    if (logins.length === 0) return this.clearCookie();
    const expires = Math.max(...logins.map((s) => s.expiresAt));
    return serializeCookie(this.cookieName, this.sealer.seal('login', { logins } satisfies PendingLogins, expires), {
      ...this.cookieOptions,
      // Rounded up: the newest login was started a few milliseconds ago, and a cookie that lapses
      // before its sealed expiry would cut intermediate_lifetime short by a second.
      maxAgeSeconds: Math.ceil((expires - this.clock.now()) / 1000),
    });
  }

  clearCookie(): string {
    return serializeCookie(this.cookieName, '', { ...this.cookieOptions, maxAgeSeconds: 0 });
  }
}
