import { systemClock, type Clock } from '../../lib/clock.ts';
import { ExpiringIds } from '../../lib/expiring-ids.ts';
import { consoleCookie, type ConsoleCookie } from './cookies.ts';
import { randomToken, type ConsoleSealer } from './session.ts';

/**
 * The installation's identity providers as the console uses them: the frontend's provider
 * implementations (sidecar/providers), handed in by the process that builds the console
 * (serve/console-sign-in.ts), so there is one OAuth client, not a second one.
 */
export interface ConsoleProviders {
  readonly names: readonly string[];
  authorizationUrl(
    provider: string,
    request: { redirectUri: string; state: string; nonce: string; codeVerifier: string },
  ): Promise<URL>;
  /** The verified identity of a callback, or a rejection whose message is safe to show. */
  completeLogin(
    provider: string,
    input: { redirectUri: string; nonce: string; codeVerifier: string; callbackUrl: URL },
  ): Promise<{ email: string; verified: boolean }>;
}

interface LoginSecrets {
  readonly id: string;
  readonly provider: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

const LOGIN_LIFETIME_MS = 5 * 60_000;

/**
 * The console's OAuth sign-in: the sealed `state` names the provider and a login id; the login
 * cookie (sealed, HttpOnly, SameSite=Lax so the provider's redirect back carries it) holds the PKCE
 * verifier and nonce and binds the flow to the browser that started it; each state completes once.
 */
export class OAuthSignIn {
  readonly providers: ConsoleProviders;
  private readonly sealer: ConsoleSealer;
  private readonly cookie: ConsoleCookie;
  private readonly clock: Clock;
  private readonly used: ExpiringIds;
  private readonly origin: () => URL;

  constructor(
    providers: ConsoleProviders,
    sealer: ConsoleSealer,
    origin: () => URL,
    secure: boolean,
    clock: Clock = systemClock,
  ) {
    this.providers = providers;
    this.sealer = sealer;
    this.cookie = consoleCookie('svc-console-login', secure);
    this.clock = clock;
    this.used = new ExpiringIds(clock);
    this.origin = origin;
  }

  /** The console's callback for `provider`: what the provider must have registered as a redirect URI. */
  redirectUri(provider: string): string {
    return new URL(`/console/oauth/${encodeURIComponent(provider)}/callback`, this.origin()).href;
  }

  /** Where to send the browser, and the login cookie to set. */
  async start(provider: string): Promise<{ url: URL; setCookie: string }> {
    const expires = this.clock.now() + LOGIN_LIFETIME_MS;
    const secrets: LoginSecrets = { id: randomToken(), provider, nonce: randomToken(), codeVerifier: randomToken() };
    const state = this.sealer.seal('state', { id: secrets.id, provider }, expires);
    const url = await this.providers.authorizationUrl(provider, {
      redirectUri: this.redirectUri(provider),
      state,
      nonce: secrets.nonce,
      codeVerifier: secrets.codeVerifier,
    });
    const sealed = this.sealer.seal('login', secrets, expires);
    // Lax, not Strict: the provider's redirect back is a cross-site navigation that must carry it.
    return {
      url,
      setCookie: this.cookie.set(sealed, LOGIN_LIFETIME_MS / 1000).replace('SameSite=Strict', 'SameSite=Lax'),
    };
  }

  /** The identity of a callback, or the reason it is refused (safe to show). */
  async complete(
    provider: string,
    callbackUrl: URL,
    cookieOf: (cookie: ConsoleCookie) => string | undefined,
  ): Promise<{ email: string; clearCookie: string } | { refused: string }> {
    const state = this.sealer.open<{ id: string; provider: string }>(
      'state',
      callbackUrl.searchParams.get('state') ?? undefined,
    );
    if (!state) return { refused: 'the sign-in state is missing, invalid or expired: start again' };
    if (state.provider !== provider) return { refused: 'the sign-in state belongs to another provider' };
    const secrets = this.sealer.open<LoginSecrets>('login', cookieOf(this.cookie));
    if (secrets?.id !== state.id) return { refused: 'the sign-in was started in another browser or has expired' };
    if (!this.claim(state.id)) return { refused: 'this sign-in was already completed: start again' };
    const identity = await this.providers.completeLogin(provider, {
      redirectUri: this.redirectUri(provider),
      nonce: secrets.nonce,
      codeVerifier: secrets.codeVerifier,
      callbackUrl,
    });
    if (!identity.verified) return { refused: `${provider} does not vouch for the address ${identity.email}` };
    return { email: identity.email, clearCookie: this.cookie.clear() };
  }

  private claim(id: string): boolean {
    return this.used.add(id, this.clock.now() + LOGIN_LIFETIME_MS);
  }
}
