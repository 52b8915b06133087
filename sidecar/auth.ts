import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../lib/clock.ts';
import { ExpiringIds } from '../lib/expiring-ids.ts';
import type { Logger } from '../lib/logger.ts';
import { errorText } from '../lib/errors.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import type { ShareRoute } from '../lib/share/spec.ts';
import { refusalReason, sessionRefusal } from './email.ts';
import { LoginStates, type CompletedLogin, type LoginState } from './login-state.ts';
import type { FrontendMetrics } from './metrics.ts';
import { redirect, sendPage } from './pages.ts';
import { createProviders } from './providers/index.ts';
import { failureOf, ProviderError, type LoginResult, type Provider, type ProviderFailure } from './providers/types.ts';
import { allowedRedirect, shareUrl } from './redirects.ts';
import {
  remoteRenewer,
  remoteRevoker,
  type RenewOutcome,
  type RenewService,
  type RevokeOutcome,
} from './auth-service.ts';
import { credentialMatches, deriveShareCredential } from '../lib/share-keys.ts';
import { installationKeyRing, shareKeyRing, type KeyRing } from './share-keys.ts';
import { localSharedState, type SharedState } from './shared-state.ts';
import { sessionCookies, type Session, type SessionCookies } from './session.ts';
import { sessionCookieName } from './cookies.ts';
import { HandOvers } from './handover.ts';
import type { ShareSource } from '../lib/share/source.ts';

/** Result of checking a request to an OAuth share: proceed with this session, or the response was sent. */
export type AccessDecision = { readonly session: Session; readonly setCookie?: string } | 'handled';

/** Why a login callback ends on an error page: its status, title, message and the logins metric's result. */
class LoginFailure {
  readonly status: number;
  readonly message: string;
  readonly result: string;
  readonly title: string;

  constructor(status: number, message: string, result: string, title = 'Login failed') {
    this.status = status;
    this.message = message;
    this.result = result;
    this.title = title;
  }
}

/** A share that logs its visitors in. */
type OAuthShare = ShareRoute & { readonly oauth: NonNullable<ShareRoute['oauth']> };

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
 *
 * With the installation's keys (the auth endpoint, `svc serve`) it derives every share's keys and
 * does everything itself; it also answers share pods' renew and revoke calls (RenewService). In a
 * share pod (`oauth.auth_service`) it holds its share's keys only and no client secret: it starts
 * logins and checks sessions, and asks the auth endpoint to renew a session at its re-check and to
 * revoke its tokens at logout.
 */
export class Authenticator implements RenewService {
  readonly providers: Map<string, Provider>;
  readonly sessions: SessionCookies;
  private readonly logins: LoginStates;
  private readonly handOvers: HandOvers;
  private readonly config: OAuthConfig;
  private readonly shares: () => ShareSource;
  private readonly metrics: FrontendMetrics;
  private readonly log: Logger;
  private readonly clock: Clock;
  /** The replay guard and the sessions logged out, shared by every worker process (sidecar/shared-state.ts). */
  private readonly shared: SharedState;
  /** Sessions whose tokens the provider revoked (revokeFor): a retry after a failure asks again. */
  private readonly revokedAtProvider: ExpiringIds;
  private readonly keys: KeyRing;
  /** How a due session is renewed: here with the provider, or by the auth endpoint (share pod). */
  private readonly renewer: (session: Session, share: ShareRoute) => Promise<RenewOutcome>;
  /** How a session's tokens are revoked at logout: here with the provider, or by the auth endpoint (share pod). */
  private readonly revoker: (provider: Provider, session: Session) => Promise<void>;

  constructor(
    config: OAuthConfig,
    shares: () => ShareSource,
    metrics: FrontendMetrics,
    log: Logger,
    clock: Clock = systemClock,
    shared: SharedState = localSharedState(clock),
  ) {
    this.shared = shared;
    this.revokedAtProvider = new ExpiringIds(clock);
    this.config = config;
    this.shares = shares;
    this.metrics = metrics;
    this.log = log;
    this.clock = clock;
    this.providers = createProviders(config.providers, clock);
    const keys = { signingKey: config.signingKey, encryptionKey: config.encryptionKey };
    if (config.authService) {
      // A share pod's keys are its share's: usable only for the share it serves (its one share).
      this.keys = shareKeyRing(keys, (share) => shares().lookup(share.token)?.instance === share.instance, clock);
    } else {
      this.keys = installationKeyRing(keys, clock);
    }
    // The session cookie is each share host's own (host-only): no other share can plant it.
    const cookieOptions = { secure: config.endpointUrl.protocol === 'https:' };
    const name = sessionCookieName(config.cookieName, cookieOptions.secure);
    this.sessions = sessionCookies(this.keys, name, cookieOptions, clock);
    this.renewer = config.authService
      ? remoteRenewer(config.authService, this.sessions)
      : (session, share) => this.renewHere(session, share);
    const remoteRevoke = config.authService ? remoteRevoker(config.authService, this.sessions) : undefined;
    this.revoker = (provider, session) => (remoteRevoke ? remoteRevoke(session) : provider.revoke(session.tokens));
    // The login cookie is the endpoint host's own: host-only, never for the cookie domain.
    this.logins = new LoginStates(
      this.keys,
      config.cookieName,
      config.intermediateLifetimeMs,
      { secure: cookieOptions.secure },
      clock,
      shared,
    );
    const bindLifetimeMs = config.intermediateLifetimeMs;
    this.handOvers = new HandOvers(this.keys, config.cookieName, cookieOptions.secure, bindLifetimeMs, clock, shared);
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
    const session = this.sessionFor(req, share, share.oauth);
    if (session) {
      if (!isDue(session, share.oauth, this.clock.now())) {
        const refused = sessionRefusal(session.email, share.oauth);
        if (!refused) return { session };
      } else if (provider.canRefresh(session.tokens)) {
        const renewed = await this.refresh(provider, session, share, req.headers.cookie);
        if (renewed) return renewed;
      } else {
        this.metrics.refreshes.inc({ provider: provider.name, result: 'login_required' });
      }
    }
    this.startLogin(req, res, provider, share);
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
    cookieHeader: string | undefined,
  ): Promise<AccessDecision | undefined> {
    const outcome = await this.renewer(session, share);
    if (outcome.result === 'refreshed') {
      this.metrics.refreshes.inc({ provider: provider.name, result: 'refreshed' });
      this.log.info({ provider: provider.name, share: share.token }, 'session refreshed');
      return { session: outcome.session, setCookie: this.sessions.write(outcome.session, cookieHeader) };
    }
    if (outcome.result === 'refused') {
      this.metrics.refreshes.inc({ provider: provider.name, result: 'refused' });
      return undefined;
    }
    this.metrics.providerFailure(provider.name, 'refresh', outcome.code);
    // A refresh answered with an invalid ID token (forged, or for another subject) ends the
    // session: it is never refreshed again, and the visitor logs in afresh.
    const ended = outcome.result === 'ended';
    if (ended) this.shared.logOut(session.id, session.expiresAt);
    this.metrics.refreshes.inc({ provider: provider.name, result: ended ? 'ended' : 'failed' });
    this.log.warn(
      { provider: provider.name, share: share.token, code: outcome.code },
      ended ? 'session refresh refused the tokens; session ended' : 'session refresh failed; restarting login',
    );
    return undefined;
  }

  /** Renews a session with its provider here (this frontend holds the client secret). */
  private async renewHere(session: Session, share: ShareRoute): Promise<RenewOutcome> {
    const provider = this.providers.get(session.provider);
    if (!share.oauth || !provider) return { result: 'failed', code: 'provider_error' };
    // Logged out at this endpoint (its tokens were revoked): a share pod's copy is not renewed.
    if (this.shared.loggedOutUntil(session.id) !== undefined) return { result: 'ended', code: 'invalid_token' };
    try {
      const result = await provider.refresh(session.tokens);
      if (refusalReason(result.identity, share.oauth)) return { result: 'refused' };
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
      return { result: 'refreshed', session: renewed };
    } catch (err) {
      const code = failureOf(err);
      if (code !== 'invalid_token') this.log.debug({ provider: provider.name, err: errorText(err) }, 'refresh failed');
      return code === 'invalid_token' ? { result: 'ended', code } : { result: 'failed', code };
    }
  }

  /**
   * A share pod's renew call (sidecar/auth-service.ts), for the share's credential and a session of
   * that share (sharePodCall).
   */
  async renewFor(
    token: string,
    credential: string,
    sealed: string,
  ): Promise<{ readonly result: 'unauthorized' | 'invalid' } | RenewOutcome> {
    const call = this.sharePodCall(token, credential, sealed);
    if ('result' in call) return call;
    const { share, session } = call;
    const outcome = await this.renewHere(session, share);
    if (outcome.result === 'ended') this.shared.logOut(session.id, session.expiresAt);
    const provider = session.provider;
    if (outcome.result !== 'refreshed' && outcome.result !== 'refused')
      this.metrics.providerFailure(provider, 'refresh', outcome.code);
    this.metrics.refreshes.inc({ provider, result: outcome.result });
    this.log.info({ provider, share: token, result: outcome.result }, 'share pod session renewal');
    return outcome;
  }

  /**
   * A share pod's revoke call at logout (sidecar/auth-service.ts), authenticated as renewFor is.
   * The session is logged out here first (its renewals refused from then on), whatever the provider
   * answers; a session whose tokens the provider revoked before is answered `revoked` without asking
   * again, and one whose revocation failed is asked again.
   */
  async revokeFor(
    token: string,
    credential: string,
    sealed: string,
  ): Promise<{ readonly result: 'unauthorized' | 'invalid' } | RevokeOutcome> {
    const call = this.sharePodCall(token, credential, sealed);
    if ('result' in call) return call;
    const { session } = call;
    const provider = this.providers.get(session.provider);
    if (!provider) return { result: 'failed', code: 'provider_error' };
    if (this.revokedAtProvider.get(session.id) !== undefined) return { result: 'revoked' };
    this.shared.logOut(session.id, session.expiresAt);
    try {
      await provider.revoke(session.tokens);
      this.revokedAtProvider.add(session.id, session.expiresAt);
      this.log.info({ provider: provider.name, share: token }, 'share pod logout: token revoked');
      return { result: 'revoked' };
    } catch (err) {
      return { result: 'failed', code: this.revocationFailed(provider, err, 'share pod logout: revocation failed') };
    }
  }

  /**
   * The share and session of a share pod's internal call: the credential must be the one derived for
   * the share the token names now, and the entry must open as a session of that share and its
   * provider. Only a frontend with the installation's keys answers.
   */
  private sharePodCall(
    token: string,
    credential: string,
    sealed: string,
  ): { readonly share: ShareRoute; readonly session: Session } | { readonly result: 'unauthorized' | 'invalid' } {
    const installation = this.keys.installation;
    const share = this.shares().lookup(token);
    if (!installation || !share?.oauth) return { result: 'unauthorized' };
    if (!credentialMatches(credential, deriveShareCredential(installation, share))) return { result: 'unauthorized' };
    const session = this.sessions.open(share, sealed);
    if (!session || !madeFor(session, share, share.oauth.provider)) return { result: 'invalid' };
    return { share, session };
  }

  /** A session sealed as its share's entry as the cookie will store it (for the answer of a renew call). */
  seal(session: Session): string | undefined {
    try {
      return this.sessions.seal(this.sessions.fit(session));
    } catch {
      return undefined;
    }
  }

  /** Sends the visitor to the endpoint host's start path with a ticket for this share. */
  private startLogin(req: IncomingMessage, res: ServerResponse, provider: Provider, share: ShareRoute): void {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      this.metrics.request('unauthenticated');
      sendPage(res, 401, 'Login required', 'Your session has ended. Reload the page to sign in again.');
      return;
    }
    const binding = this.handOvers.bind(req.headers.cookie);
    const ticket = this.logins.ticket(provider.name, share, req.url ?? '/', binding.digest);
    const start = new URL(`/${provider.name}/auth/start`, this.config.endpointUrl);
    start.searchParams.set('ticket', ticket);
    this.metrics.request('login_redirect');
    redirect(res, start, { 'set-cookie': binding.setCookie });
  }

  /**
   * `GET /<provider>/auth/handover?ticket=…` on a share host of that provider: the session a login
   * made, set here as the share host's own cookie when this browser holds the binding cookie the
   * login started with (sidecar/handover.ts); refused with 400 and nothing set otherwise.
   */
  async handOver(req: IncomingMessage, res: ServerResponse, share: ShareRoute): Promise<void> {
    const url = new URL(req.url ?? '/', this.config.endpointUrl);
    const result = await this.handOvers.accept(url.searchParams.get('ticket') ?? undefined, req.headers.cookie, share);
    const back = (path: string): URL => shareUrl(share.token, this.config.cookieDomain, this.config.endpointUrl, path);
    if ('refused' in result) {
      // Another tab of this browser finished its login first: the session is there, nothing to set.
      if (result.path !== undefined && share.oauth && this.sessionFor(req, share, share.oauth)) {
        redirect(res, back(result.path));
        return;
      }
      this.metrics.logins.inc({ provider: share.oauth?.provider ?? 'none', result: 'invalid_handover' });
      this.log.warn({ share: share.token, reason: result.refused }, 'session hand-over refused');
      sendPage(res, 400, 'Login failed', `${result.refused}. Open the share again to sign in.`);
      return;
    }
    let cookie: string;
    try {
      cookie = this.sessions.write(result.session, req.headers.cookie);
    } catch (err) {
      sendPage(res, 500, 'Login failed', `the session cannot be stored: ${errorText(err)}`);
      return;
    }
    redirect(res, back(result.path), { 'set-cookie': [cookie, this.handOvers.clearBind()] });
  }

  /**
   * `GET /<provider>/auth/start?ticket=…` on the endpoint host: the login begins here, so that its
   * browser binding (the login cookie) is the endpoint host's own cookie, which no share can write.
   */
  async start(req: IncomingMessage, res: ServerResponse, providerName: string): Promise<void> {
    const provider = this.providers.get(providerName);
    if (!provider) {
      sendPage(res, 404, 'Unknown provider', `No identity provider named ${providerName} is configured.`);
      return;
    }
    const url = new URL(req.url ?? '/', this.config.endpointUrl);
    const login = this.logins.start(
      provider.name,
      url.searchParams.get('ticket') ?? undefined,
      req.headers.cookie,
      (token) => this.shares().lookup(token),
    );
    if (typeof login === 'string') {
      this.metrics.logins.inc({ provider: provider.name, result: 'invalid_state' });
      sendPage(res, 400, 'Login failed', `${login}. Open the share again to start a new login.`);
      return;
    }
    try {
      const authorize = await provider.authorizationUrl({ ...login, redirectUri: this.callbackUri(provider) });
      redirect(res, authorize, { 'set-cookie': login.setCookie });
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
    const url = new URL(req.url ?? '/', this.config.endpointUrl);
    const completed = await this.logins.complete(
      provider.name,
      url.searchParams.get('state') ?? undefined,
      req.headers.cookie,
      (token) => this.shares().lookup(token),
    );
    if (typeof completed === 'string') {
      const message = `${completed}. Open the share again to start a new login.`;
      // A refused state leaves the login cookie as it was.
      this.loginFailed(res, provider, undefined, new LoginFailure(400, message, 'invalid_state'));
      return;
    }
    const ticket = await this.sessionTicket(provider, url, completed);
    if (ticket instanceof LoginFailure) {
      // The login cookie now keeps only the other logins still under way in this browser (other tabs).
      this.loginFailed(res, provider, completed.setCookie, ticket);
      return;
    }
    this.metrics.logins.inc({ provider: provider.name, result: 'success' });
    this.log.info({ provider: provider.name, share: completed.state.share }, 'login succeeded');
    const path = `/${provider.name}/auth/handover?ticket=${encodeURIComponent(ticket)}`;
    redirect(res, shareUrl(completed.state.share, this.config.cookieDomain, this.config.endpointUrl, path), {
      'set-cookie': completed.setCookie,
    });
  }

  /** The hand-over ticket of the session a completed login makes, or why there is none. */
  private async sessionTicket(provider: Provider, url: URL, completed: CompletedLogin): Promise<string | LoginFailure> {
    const share = this.callbackShare(provider, completed.state);
    if (share instanceof LoginFailure) return share;
    const login = await this.providerLogin(provider, url, completed);
    if (login instanceof LoginFailure) return login;
    return this.handOverTicket(provider, share, login, completed);
  }

  /** The share a completed login was for, when it still exists as that share and uses this provider. */
  private callbackShare(provider: Provider, state: LoginState): OAuthShare | LoginFailure {
    const share = this.shares().lookup(state.share);
    if (!share?.oauth || share.oauth.provider !== provider.name) {
      return new LoginFailure(
        400,
        'The share this login was for no longer uses this identity provider.',
        'unknown_share',
      );
    }
    if (share.instance !== state.instance) {
      return new LoginFailure(400, 'The share this login was for has been replaced by another share.', 'unknown_share');
    }
    return share as OAuthShare;
  }

  /** The provider's side of the callback: the code exchanged, the identity it vouches for. */
  private async providerLogin(
    provider: Provider,
    callbackUrl: URL,
    completed: CompletedLogin,
  ): Promise<LoginResult | LoginFailure> {
    try {
      return await provider.completeLogin({
        callbackUrl,
        redirectUri: this.callbackUri(provider),
        nonce: completed.nonce,
        codeVerifier: completed.codeVerifier,
      });
    } catch (err) {
      // A forged or invalid answer is refused (401); a provider that failed is a gateway error (502).
      const message = err instanceof ProviderError ? err.message : 'unexpected error while talking to the provider';
      const code = failureOf(err);
      this.metrics.providerFailure(provider.name, 'login', code);
      return new LoginFailure(code === 'invalid_token' ? 401 : 502, message, code);
    }
  }

  /**
   * The hand-over ticket of the session this login makes, when the share admits the identity and
   * the session can be stored.
   */
  private handOverTicket(
    provider: Provider,
    share: OAuthShare,
    login: LoginResult,
    completed: CompletedLogin,
  ): string | LoginFailure {
    const refused = refusalReason(login.identity, share.oauth);
    if (refused) return new LoginFailure(403, refused, 'refused', 'Access refused');
    const now = this.clock.now();
    const session: Session = {
      id: randomBytes(12).toString('base64url'),
      share: share.token,
      instance: share.instance,
      provider: provider.name,
      email: login.identity.email,
      expiresAt: now + this.config.sessionLifetimeMs,
      checkedAt: now,
      tokens: login.tokens,
    };
    try {
      // The session as the cookie will store it (large tokens dropped the same way), so that a
      // session that fits a cookie fits the hand-over, and one that does not fails here.
      const stored = this.sessions.fit(session);
      return this.handOvers.ticket(stored, completed.state.bind, completed.state.path);
    } catch (err) {
      return new LoginFailure(500, `the session cannot be stored: ${errorText(err)}`, 'session_too_large');
    }
  }

  /** A login that ends on an error page: counted, logged (the reason, never a token) and shown. */
  private loginFailed(
    res: ServerResponse,
    provider: Provider,
    loginCookie: string | undefined,
    failure: LoginFailure,
  ): void {
    const { status, title, message, result } = failure;
    this.metrics.logins.inc({ provider: provider.name, result });
    this.log.warn({ provider: provider.name, result, reason: message }, 'login failed');
    sendPage(res, status, title, message, loginCookie ? { 'set-cookie': loginCookie } : {});
  }

  /** `GET /<provider>/logout[?redirect_url=…]` (seed "Logout rules"): idempotent, revocation best-effort. */
  async logout(req: IncomingMessage, res: ServerResponse, providerName: string): Promise<void> {
    const provider = this.providers.get(providerName);
    if (!provider) {
      sendPage(res, 404, 'Unknown provider', `No identity provider named ${providerName} is configured.`);
      return;
    }
    const url = new URL(req.url ?? '/', this.config.endpointUrl);
    const jar = this.allSessions(req);
    const mine = jar.filter((s) => s.provider === provider.name);
    const headers: Record<string, string> = {};
    // Logout proceeds only for a visitor with a session of this provider (or none at all); it then
    // signs the browser out of every share: the whole cookie expires.
    if (jar.length === 0 || mine.length > 0) headers['set-cookie'] = this.sessions.clear();
    for (const session of jar) if (mine.length > 0) this.shared.logOut(session.id, session.expiresAt);
    for (const session of mine) {
      try {
        await this.revoker(provider, session);
        this.log.info({ provider: provider.name, share: session.share }, 'logout: token revoked');
      } catch (err) {
        this.revocationFailed(provider, err, 'logout: revocation failed; local session cleared anyway');
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
   * Counts and logs each failure of a revocation (one per token when both failed), by code and
   * message, never a token; the first failure's code.
   */
  private revocationFailed(provider: Provider, err: unknown, message: string): ProviderFailure {
    const failures = err instanceof AggregateError ? (err.errors as unknown[]) : [err];
    for (const failure of failures) {
      this.metrics.providerFailure(provider.name, 'logout', failureOf(failure));
      this.log.warn({ provider: provider.name, code: failureOf(failure), err: errorText(failure) }, message);
    }
    return failureOf(failures[0]);
  }

  /**
   * Every session of the request this frontend can open (those of shares it knows), less those
   * logged out in this process. Sessions live in the browser, so a copy of a cookie made before
   * logout would otherwise stay usable until the next re-check; other replicas learn of the logout
   * at that re-check, when the revoked tokens fail (or the auth endpoint refuses to renew them).
   */
  private allSessions(req: Pick<IncomingMessage, 'headers'>): readonly Session[] {
    const jar = this.sessions.readAll(req.headers.cookie, (token) => this.shares().lookup(token)?.instance);
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
    const session = this.sessions.read(req.headers.cookie, share);
    if (!session || !madeFor(session, share, oauth.provider)) return undefined;
    if (this.shared.anyLoggedOut && this.shared.loggedOutUntil(session.id) !== undefined) return undefined;
    return session;
  }

  private callbackUri(provider: Provider): string {
    return new URL(`/${provider.name}/auth/callback`, this.config.endpointUrl).href;
  }
}
