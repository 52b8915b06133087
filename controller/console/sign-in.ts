import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { hashesMatch, parseToken } from '../tokens.ts';
import type { AccountRecord } from '../store.ts';
import type { ConsoleCookie } from './cookies.ts';
import type { OAuthSignIn } from './oauth-sign-in.ts';
import { messagePage, signedInPage, signInPage, type Notice } from './pages.ts';
import { randomToken, type ConsoleSessions } from './session.ts';
import type { ConsoleSources } from './views.ts';
import type { CsrfTokens } from '../../lib/web/session.ts';
import type { OriginCheck } from '../../lib/web/origin.ts';
import { readFields } from './fields.ts';
import { seeOther, sendPage } from './respond.ts';

const PROVIDER_PATH = /^\/console\/oauth\/([A-Za-z0-9][A-Za-z0-9_-]*)\/(start|callback)$/;
const FORM_COOKIE_SECONDS = 3600;

/**
 * Signing in to the console: the account token posted in a form (never in a URL, never logged), or
 * an OAuth login with one of the installation's providers whose verified email is an account's or an
 * admin's. The sign-in form's CSRF token is a random value in a SameSite=Strict cookie, repeated in
 * the form.
 */
export class SignIn {
  private readonly options: {
    readonly sources: ConsoleSources;
    readonly sessions: ConsoleSessions;
    readonly oauth: OAuthSignIn | undefined;
    readonly admins: readonly string[];
    readonly formCookie: ConsoleCookie;
    readonly csrf: CsrfTokens;
    readonly origin: () => OriginCheck;
    readonly logger: Logger;
  };

  constructor(options: SignIn['options']) {
    this.options = options;
  }

  /** Answers the sign-in routes (true), or leaves the request to the caller (false). */
  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean> {
    if (path === '/console/signin') {
      if (req.method === 'POST') await this.byToken(req, res);
      else this.page(req, res, 200);
      return true;
    }
    const provider = PROVIDER_PATH.exec(path);
    if (!provider) return false;
    const [, name = '', step] = provider;
    if (!this.options.oauth?.providers.names.includes(name)) {
      sendPage(res, 404, messagePage('Not found', `There is no identity provider ${name} for this console.`));
    } else if (step === 'start' && req.method === 'GET') await this.startOAuth(res, this.options.oauth, name);
    else if (step === 'callback' && req.method === 'GET') await this.completeOAuth(req, res, this.options.oauth, name);
    else sendPage(res, 405, messagePage('Not allowed', 'Start a sign-in from the sign-in page.'));
    return true;
  }

  private page(req: IncomingMessage, res: ServerResponse, status: number, notice?: Notice): void {
    const { formCookie, oauth } = this.options;
    const value = formCookie.read(req) ?? randomToken();
    const csrf = this.options.csrf.token(value);
    const body = signInPage({ providers: oauth?.providers.names ?? [], csrf, ...(notice ? { notice } : {}) });
    sendPage(res, status, body, [formCookie.set(value, FORM_COOKIE_SECONDS)]);
  }

  /** The form's CSRF field against the form cookie's token, and the request's origin. */
  private formAccepted(req: IncomingMessage, fields: ReadonlyMap<string, string>): boolean {
    const value = this.options.formCookie.read(req);
    if (this.options.origin().refuseWrite(req) !== undefined || value === undefined) return false;
    return this.options.csrf.verify(value, fields.get('_csrf'));
  }

  private async byToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fields = await readFields(req);
    if (!this.formAccepted(req, fields)) {
      return this.page(req, res, 403, {
        kind: 'error',
        text: 'The sign-in form expired or came from another site: try again.',
      });
    }
    const parsed = parseToken('svca', fields.get('token')?.trim() ?? '');
    const account = parsed ? await this.options.sources.store.getAccount(parsed.id) : undefined;
    if (!parsed || !account || !hashesMatch(parsed.hash, account.tokenHash)) {
      this.options.logger.info({ claimed: parsed?.id }, 'console: sign-in with an invalid account token refused');
      return this.page(req, res, 401, { kind: 'error', text: 'That is not a valid account token (svca_…).' });
    }
    this.begin(res, account, account.email, 'token');
  }

  /**
   * A GET: another site can start a sign-in in this browser, but it ends with this browser's own
   * identity at the provider, and the state and login cookie tie the callback to this start.
   */
  private async startOAuth(res: ServerResponse, oauth: OAuthSignIn, provider: string) {
    const { url, setCookie } = await oauth.start(provider);
    seeOther(res, url.href, [setCookie]);
  }

  private async completeOAuth(req: IncomingMessage, res: ServerResponse, oauth: OAuthSignIn, provider: string) {
    const callbackUrl = new URL(req.url ?? '/', oauth.redirectUri(provider));
    let outcome: Awaited<ReturnType<OAuthSignIn['complete']>>;
    try {
      outcome = await oauth.complete(provider, callbackUrl, (cookie) => cookie.read(req));
    } catch (err) {
      this.options.logger.warn({ provider, err: errorText(err) }, 'console: provider sign-in failed');
      return sendPage(res, 502, messagePage('Sign-in failed', errorText(err)));
    }
    if ('refused' in outcome) return sendPage(res, 400, messagePage('Sign-in refused', outcome.refused));
    const account = await this.options.sources.store.findAccountByEmail(outcome.email);
    if (!account && !this.isAdmin(outcome.email)) {
      return sendPage(
        res,
        403,
        messagePage(
          'No account',
          `There is no account for ${outcome.email} on this installation: ask its operator (svc admin create account).`,
        ),
      );
    }
    this.begin(res, account, outcome.email, provider, [outcome.clearCookie]);
  }

  private isAdmin(email: string): boolean {
    return this.options.admins.includes(email.toLowerCase());
  }

  private begin(
    res: ServerResponse,
    account: AccountRecord | undefined,
    email: string,
    via: string,
    cookies: string[] = [],
  ) {
    const { setCookie } = this.options.sessions.start({
      ...(account ? { accountId: account.id } : {}),
      email,
      admin: this.isAdmin(email),
      via,
    });
    this.options.logger.info({ account: account?.id, via }, 'console: signed in');
    if (via === 'token') seeOther(res, '/console', [setCookie, ...cookies]);
    else sendPage(res, 200, signedInPage(), [setCookie, ...cookies]);
  }
}
