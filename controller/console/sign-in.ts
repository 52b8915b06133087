import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { hashesMatch, parseToken } from '../secrets.ts';
import type { AccountRecord } from '../store.ts';
import type { ConsoleCookie } from './cookies.ts';
import { sameOrigin } from './guard.ts';
import type { OAuthSignIn } from './oauth-sign-in.ts';
import { messagePage, signedInPage, signInPage, type Notice } from './pages.ts';
import { randomToken, sameSecret, type ConsoleSessions } from './session.ts';
import type { ConsoleSources } from './views.ts';
import { readForm } from './web/form.ts';
import { seeOther, sendHtml } from './web/headers.ts';

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
      sendHtml(res, 404, messagePage('Not found', `There is no identity provider ${name} for this console.`));
    } else if (step === 'start' && req.method === 'GET') await this.startOAuth(res, this.options.oauth, name);
    else if (step === 'callback' && req.method === 'GET') await this.completeOAuth(req, res, this.options.oauth, name);
    else sendHtml(res, 405, messagePage('Not allowed', 'Start a sign-in from the sign-in page.'));
    return true;
  }

  private page(req: IncomingMessage, res: ServerResponse, status: number, notice?: Notice): void {
    const { formCookie, oauth } = this.options;
    const csrf = formCookie.read(req) ?? randomToken();
    const body = signInPage({ providers: oauth?.providers.names ?? [], csrf, ...(notice ? { notice } : {}) });
    sendHtml(res, status, body, { 'set-cookie': formCookie.set(csrf, FORM_COOKIE_SECONDS) });
  }

  /** The form's CSRF field against the form cookie, and the request's origin. */
  private formAccepted(req: IncomingMessage, fields: ReadonlyMap<string, string>): boolean {
    const expected = this.options.formCookie.read(req);
    return sameOrigin(req) && expected !== undefined && sameSecret(fields.get('csrf'), expected);
  }

  private async byToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const fields = await readForm(req);
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
    seeOther(res, url.href, { 'set-cookie': setCookie });
  }

  private async completeOAuth(req: IncomingMessage, res: ServerResponse, oauth: OAuthSignIn, provider: string) {
    const callbackUrl = new URL(req.url ?? '/', oauth.redirectUri(provider));
    let outcome: Awaited<ReturnType<OAuthSignIn['complete']>>;
    try {
      outcome = await oauth.complete(provider, callbackUrl, (cookie) => cookie.read(req));
    } catch (err) {
      this.options.logger.warn({ provider, err: errorText(err) }, 'console: provider sign-in failed');
      return sendHtml(res, 502, messagePage('Sign-in failed', errorText(err)));
    }
    if ('refused' in outcome) return sendHtml(res, 400, messagePage('Sign-in refused', outcome.refused));
    const account = await this.options.sources.store.findAccountByEmail(outcome.email);
    if (!account && !this.isAdmin(outcome.email)) {
      return sendHtml(
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
    const headers = { 'set-cookie': [setCookie, ...cookies] };
    if (via === 'token') seeOther(res, '/console', headers);
    else sendHtml(res, 200, signedInPage(), headers);
  }
}
