import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { errorText } from '../lib/errors.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import type { ShareRoute } from '../lib/share/spec.ts';
import { refusalReason, sessionRefusal } from './email.ts';
import { LoginStates } from './login-state.ts';
import type { FrontendMetrics } from './metrics.ts';
import { redirect, sendPage } from './pages.ts';
import { createProviders } from './providers/index.ts';
import { failureOf, ProviderError, type Provider } from './providers/types.ts';
import { allowedRedirect, shareUrl } from './redirects.ts';
import { createSealer } from './seal.ts';
import { localSharedState, type SharedState } from './shared-state.ts';
import { sessionCookies, type Session, type SessionCookies } from './session.ts';
import type { ShareSource } from '../lib/share/source.ts';

/** Result of checking a request to an OAuth share: proceed with this session, or the response was sent. */
export type AccessDecision = { readonly session: Session; readonly setCookie?: string } | 'handled';

/** A re-check is also due this close to the session's end, so an active visitor is renewed in time. */
const RENEWAL_WINDOW_MS = 60_000;

/** A session made for this very share (token and instance) and this provider. */
function madeFor(session: Session, share: ShareRoute, provider: string): boolean {
  return session.share === share.token && session.instance === share.instance && session.provider === provider;
}

/** A session the provider must confirm again: its check interval is over, or its end is near. */
function isDue(session: Session, oauth: NonNullable<ShareRoute['oauth']>, now: number): boolean {
  return now >= session.checkedAt + oauth.checkIntervalMs || now >= session.expiresAt - RENEWAL_WINDOW_MS;
}

/**
 * The OAuth side of the frontend (seed "OAuth identity flow"): decides access to OAuth shares,
 * starts logins, completes callbacks and handles logout. Stateless apart from the replay guard:
 * sessions live in sealed cookies, so any replica with the same keys can serve any request.
 */
export class Authenticator {
  readonly providers: Map<string, Provider>;
  readonly sessions: SessionCookies;
  private readonly logins: LoginStates;
  private readonly config: OAuthConfig;
  private readonly shares: () => ShareSource;
  private readonly metrics: FrontendMetrics;
  private readonly log: Logger;
  private readonly clock: Clock;
  /** The replay guard and the sessions logged out, shared by every worker process (sidecar/shared-state.ts). */
  private readonly shared: SharedState;

  constructor(
    config: OAuthConfig,
    shares: () => ShareSource,
    metrics: FrontendMetrics,
    log: Logger,
    clock: Clock = systemClock,
    shared: SharedState = localSharedState(clock),
  ) {
    this.shared = shared;
    this.config = config;
    this.shares = shares;
    this.metrics = metrics;
    this.log = log;
    this.clock = clock;
    this.providers = createProviders(config.providers, clock);
    const sealer = createSealer(config.signingKey, config.encryptionKey, clock);
    const cookieOptions = { domain: config.cookieDomain, secure: config.endpointUrl.protocol === 'https:' };
    this.sessions = sessionCookies(sealer, config.cookieName, cookieOptions, clock);
    this.logins = new LoginStates(
      sealer,
      config.cookieName,
      config.intermediateLifetimeMs,
      cookieOptions,
      clock,
      shared,
    );
  }

  /** Every provider usable (oidc discovery done). */
  async ready(): Promise<void> {
    await Promise.all([...this.providers.values()].map((p) => p.ready()));
  }

  /**
   * The common case of authorize, without I/O or a promise: the request's session for this share
   * when it is valid, not due for a re-check and still admitted. Undefined sends the request on to
   * authorize (refresh, login or refusal).
   */
  currentSession(
    req: Pick<IncomingMessage, 'headers'>,
    share: ShareRoute,
    oauth: NonNullable<ShareRoute['oauth']>,
  ): Session | undefined {
    const session = this.sessionFor(req, share, oauth);
    if (!session || isDue(session, oauth, this.clock.now())) return undefined;
    return sessionRefusal(session.email, oauth) ? undefined : session;
  }

  /** Seed steps 2–3 and the re-check rule: a valid session for this share, refreshed when due, or a login. */
  async authorize(
    req: IncomingMessage,
    res: ServerResponse,
    share: ShareRoute & { oauth: NonNullable<ShareRoute['oauth']> },
  ): Promise<AccessDecision> {
    const provider = this.providers.get(share.oauth.provider);
    if (!provider) {
      this.metrics.request('refused');
      sendPage(res, 500, 'Share misconfigured', 'This share names an identity provider the frontend does not have.');
      return 'handled';
    }
    const jar = this.sessionsOf(req);
    const session = jar.find((s) => madeFor(s, share, provider.name));
    if (session) {
      if (!isDue(session, share.oauth, this.clock.now())) {
        const refused = sessionRefusal(session.email, share.oauth);
        if (!refused) return { session };
      } else if (provider.canRefresh(session.tokens)) {
        const renewed = await this.refresh(provider, session, share, jar);
        if (renewed) return renewed;
      } else {
        this.metrics.refreshes.inc({ provider: provider.name, result: 'login_required' });
      }
    }
    await this.startLogin(req, res, provider, share);
    return 'handled';
  }

  /** Whether a websocket upgrade carries a current session for this share (no redirects possible there). */
  sessionForUpgrade(req: IncomingMessage, share: ShareRoute): Session | undefined {
    const oauth = share.oauth;
    if (!oauth) return undefined;
    const session = this.sessionFor(req, share, oauth);
    if (!session) return undefined;
    if (this.clock.now() >= session.checkedAt + oauth.checkIntervalMs) return undefined;
    return sessionRefusal(session.email, oauth) ? undefined : session;
  }

  private async refresh(
    provider: Provider,
    session: Session,
    share: ShareRoute & { oauth: NonNullable<ShareRoute['oauth']> },
    jar: readonly Session[],
  ): Promise<AccessDecision | undefined> {
    try {
      const result = await provider.refresh(session.tokens);
      if (refusalReason(result.identity, share.oauth)) {
        this.metrics.refreshes.inc({ provider: provider.name, result: 'refused' });
        return undefined;
      }
      const now = this.clock.now();
      // The share and provider are carried over from the old session, never taken from the request.
      const renewed: Session = {
        id: session.id,
        share: session.share,
        instance: session.instance,
        provider: session.provider,
        email: result.identity.email,
        expiresAt: now + this.config.sessionLifetimeMs,
        checkedAt: now,
        tokens: result.tokens,
      };
      this.metrics.refreshes.inc({ provider: provider.name, result: 'refreshed' });
      this.log.info({ provider: provider.name, share: share.token }, 'session refreshed');
      return { session: renewed, setCookie: this.sessions.write(renewed, jar) };
    } catch (err) {
      const code = failureOf(err);
      this.metrics.providerFailure(provider.name, 'refresh', code);
      // A refresh answered with an invalid ID token (forged, or for another subject) ends the
      // session: it is never refreshed again, and the visitor logs in afresh.
      const ended = code === 'invalid_token';
      if (ended) this.shared.logOut(session.id, session.expiresAt);
      this.metrics.refreshes.inc({ provider: provider.name, result: ended ? 'ended' : 'failed' });
      this.log.warn(
        { provider: provider.name, share: share.token, code, err: errorText(err) },
        ended ? 'session refresh refused the tokens; session ended' : 'session refresh failed; restarting login',
      );
      return undefined;
    }
  }

  private async startLogin(
    req: IncomingMessage,
    res: ServerResponse,
    provider: Provider,
    share: ShareRoute,
  ): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      this.metrics.request('unauthenticated');
      sendPage(res, 401, 'Login required', 'Your session has ended. Reload the page to sign in again.');
      return;
    }
    const login = this.logins.start(provider.name, share, req.url ?? '/', req.headers.cookie);
    try {
      const url = await provider.authorizationUrl({ ...login, redirectUri: this.callbackUri(provider) });
      this.metrics.request('login_redirect');
      redirect(res, url, { 'set-cookie': login.setCookie });
    } catch (err) {
      this.metrics.request('upstream_error');
      this.metrics.providerFailure(provider.name, 'login', failureOf(err));
      this.log.error({ provider: provider.name, code: failureOf(err), err: errorText(err) }, 'cannot start login');
      sendPage(
        res,
        502,
        'Login unavailable',
        `The identity provider ${provider.name} cannot be reached right now. Try again shortly.`,
      );
    }
  }

  /** `GET /<provider>/auth/callback` (seed steps 5–9). */
  async callback(req: IncomingMessage, res: ServerResponse, providerName: string): Promise<void> {
    const provider = this.providers.get(providerName);
    if (!provider) {
      sendPage(res, 404, 'Unknown provider', `No identity provider named ${providerName} is configured.`);
      return;
    }
    // The login cookie after this callback: once the state is accepted, the other logins still
    // under way in this browser (other tabs); a refused state leaves the cookie as it was.
    const after: { loginCookie?: string } = {};
    const url = new URL(req.url ?? '/', this.config.endpointUrl);
    const fail = (status: number, title: string, message: string, result: string): void => {
      this.metrics.logins.inc({ provider: provider.name, result });
      this.log.warn({ provider: provider.name, result, reason: message }, 'login failed');
      sendPage(res, status, title, message, after.loginCookie ? { 'set-cookie': after.loginCookie } : {});
    };
    const completed = await this.logins.complete(
      provider.name,
      url.searchParams.get('state') ?? undefined,
      req.headers.cookie,
    );
    if (typeof completed === 'string') {
      fail(400, 'Login failed', `${completed}. Open the share again to start a new login.`, 'invalid_state');
      return;
    }
    after.loginCookie = completed.setCookie;
    const share = this.shares().lookup(completed.state.share);
    if (!share?.oauth || share.oauth.provider !== provider.name) {
      fail(400, 'Login failed', 'The share this login was for no longer uses this identity provider.', 'unknown_share');
      return;
    }
    if (share.instance !== completed.state.instance) {
      fail(400, 'Login failed', 'The share this login was for has been replaced by another share.', 'unknown_share');
      return;
    }
    let result;
    try {
      result = await provider.completeLogin({
        callbackUrl: url,
        redirectUri: this.callbackUri(provider),
        nonce: completed.nonce,
        codeVerifier: completed.codeVerifier,
      });
    } catch (err) {
      // A forged or invalid answer is refused (401); a provider that failed is a gateway error (502).
      const message = err instanceof ProviderError ? err.message : 'unexpected error while talking to the provider';
      const code = failureOf(err);
      this.metrics.providerFailure(provider.name, 'login', code);
      fail(code === 'invalid_token' ? 401 : 502, 'Login failed', message, code);
      return;
    }
    const refused = refusalReason(result.identity, share.oauth);
    if (refused) {
      fail(403, 'Access refused', refused, 'refused');
      return;
    }
    const now = this.clock.now();
    const session: Session = {
      id: randomBytes(12).toString('base64url'),
      share: share.token,
      instance: share.instance,
      provider: provider.name,
      email: result.identity.email,
      expiresAt: now + this.config.sessionLifetimeMs,
      checkedAt: now,
      tokens: result.tokens,
    };
    let cookie: string;
    try {
      cookie = this.sessions.write(session, this.sessionsOf(req));
    } catch (err) {
      fail(500, 'Login failed', `the session cannot be stored: ${errorText(err)}`, 'session_too_large');
      return;
    }
    this.metrics.logins.inc({ provider: provider.name, result: 'success' });
    this.log.info({ provider: provider.name, share: share.token }, 'login succeeded');
    redirect(res, shareUrl(share.token, this.config.cookieDomain, this.config.endpointUrl, completed.state.path), {
      'set-cookie': [cookie, completed.setCookie],
    });
  }

  /** `GET /<provider>/logout[?redirect_url=…]` (seed "Logout rules"): idempotent, revocation best-effort. */
  async logout(req: IncomingMessage, res: ServerResponse, providerName: string): Promise<void> {
    const provider = this.providers.get(providerName);
    if (!provider) {
      sendPage(res, 404, 'Unknown provider', `No identity provider named ${providerName} is configured.`);
      return;
    }
    const url = new URL(req.url ?? '/', this.config.endpointUrl);
    const jar = this.sessionsOf(req);
    const mine = jar.filter((s) => s.provider === provider.name);
    const headers: Record<string, string> = {};
    // Logout proceeds only for a visitor with a session of this provider (or none at all); it then
    // signs the browser out of every share: the whole cookie expires.
    if (jar.length === 0 || mine.length > 0) headers['set-cookie'] = this.sessions.clear();
    for (const session of jar) if (mine.length > 0) this.shared.logOut(session.id, session.expiresAt);
    for (const session of mine) {
      try {
        await provider.revoke(session.tokens);
        this.log.info({ provider: provider.name, share: session.share }, 'logout: token revoked');
      } catch (err) {
        for (const failure of err instanceof AggregateError ? (err.errors as unknown[]) : [err]) {
          this.metrics.providerFailure(provider.name, 'logout', failureOf(failure));
          this.log.warn(
            { provider: provider.name, code: failureOf(failure), err: errorText(failure) },
            'logout: revocation failed; local session cleared anyway',
          );
        }
      }
    }
    const requested = url.searchParams.get('redirect_url');
    if (requested === null) {
      redirect(res, provider.loginPageUrl(), headers);
      return;
    }
    const target = allowedRedirect(requested, this.config.endpointUrl, this.config.cookieDomain, this.shares());
    if (!target) {
      sendPage(
        res,
        400,
        'Signed out',
        'You are signed out. The redirect_url given is not a page of this service, so you were not sent there.',
        headers,
      );
      return;
    }
    redirect(res, target, headers);
  }

  /**
   * The request's sessions, less those logged out in this process. Sessions live in the browser, so
   * a copy of a cookie made before logout would otherwise stay usable until the next re-check; other
   * replicas learn of the logout at that re-check, when the revoked tokens fail.
   */
  private sessionsOf(req: Pick<IncomingMessage, 'headers'>): readonly Session[] {
    const jar = this.sessions.read(req.headers.cookie);
    if (!this.shared.anyLoggedOut) return jar;
    return jar.filter((s) => this.shared.loggedOutUntil(s.id) === undefined);
  }

  /** The request's session for this share (token and instance) and its provider (a configured one), if any. */
  private sessionFor(
    req: Pick<IncomingMessage, 'headers'>,
    share: ShareRoute,
    oauth: NonNullable<ShareRoute['oauth']>,
  ): Session | undefined {
    if (!this.providers.has(oauth.provider)) return undefined;
    for (const session of this.sessionsOf(req)) if (madeFor(session, share, oauth.provider)) return session;
    return undefined;
  }

  private callbackUri(provider: Provider): string {
    return new URL(`/${provider.name}/auth/callback`, this.config.endpointUrl).href;
  }
}
