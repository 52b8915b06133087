import { randomBytes } from 'node:crypto';
import { systemClock, type Clock } from '../lib/clock.ts';
import { parseCookies, serializeCookie, type CookieOptions } from './cookies.ts';
import type { Sealer } from './seal.ts';

/** What the signed `state` parameter carries through the provider round trip. */
export interface LoginState {
  readonly id: string;
  readonly provider: string;
  readonly share: string;
  /** Path and query on the share host to return to after login (never a host: that comes from `share`). */
  readonly path: string;
}

/** Secrets that stay in the browser's login cookie and never travel in a URL. */
interface LoginSecrets {
  readonly id: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

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
}

/**
 * The intermediate OAuth state, living `intermediate_lifetime`. The sealed `state` parameter names
 * the share and return path; the login cookie binds the flow to the browser that started it (no login
 * fixation through a forwarded callback URL) and holds the PKCE verifier and nonce. Each state is
 * accepted once: a replayed callback is refused even if the cookie was copied.
 */
export class LoginStates {
  readonly cookieName: string;
  private readonly used = new Map<string, number>();
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
  ) {
    this.sealer = sealer;
    this.cookieName = `${cookieName}-login`;
    this.lifetimeMs = lifetimeMs;
    this.cookieOptions = cookieOptions;
    this.clock = clock;
  }

  start(provider: string, share: string, path: string): StartedLogin {
    const id = randomBytes(16).toString('base64url');
    const expires = this.clock.now() + this.lifetimeMs;
    const secrets: LoginSecrets = {
      id,
      nonce: randomBytes(16).toString('base64url'),
      codeVerifier: randomBytes(32).toString('base64url'),
    };
    const state = this.sealer.seal('state', { id, provider, share, path } satisfies LoginState, expires);
    const setCookie = serializeCookie(this.cookieName, this.sealer.seal('login', secrets, expires), {
      ...this.cookieOptions,
      maxAgeSeconds: this.lifetimeMs / 1000,
    });
    return { state, nonce: secrets.nonce, codeVerifier: secrets.codeVerifier, setCookie };
  }

  /**
   * Checks a callback's `state` against the provider in the path and the browser's login cookie.
   * Returns a reason string when refused, so the error page and metrics can say why.
   */
  complete(
    provider: string,
    stateParam: string | undefined,
    cookieHeader: string | undefined,
  ): CompletedLogin | string {
    if (!stateParam) return 'the login response has no state';
    const state = this.sealer.open<LoginState>('state', stateParam);
    if (!state) return 'the login state is invalid or expired';
    if (state.provider !== provider) return 'the login state belongs to another provider';
    const secrets = this.sealer.open<LoginSecrets>('login', parseCookies(cookieHeader).get(this.cookieName));
    if (!secrets || secrets.id !== state.id) return 'the login was started in another browser or has expired';
    this.prune();
    if (this.used.has(state.id)) return 'the login state was already used';
    this.used.set(state.id, this.clock.now() + this.lifetimeMs);
    return { state, nonce: secrets.nonce, codeVerifier: secrets.codeVerifier };
  }

  clearCookie(): string {
    return serializeCookie(this.cookieName, '', { ...this.cookieOptions, maxAgeSeconds: 0 });
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [id, until] of this.used) if (until <= now) this.used.delete(id);
  }
}
