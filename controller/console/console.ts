import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { errorBody } from '../errors.ts';
import type { OpenApi } from '../openapi.ts';
import type { AccountRecord } from '../store.ts';
import { FORM_OPERATIONS, runForm } from './actions.ts';
import type { ConsoleConfig } from './config.ts';
import { consoleCookie } from './cookies.ts';
import { hostGuard, sameOrigin } from './guard.ts';
import { liveUpdates } from './live.ts';
import { OAuthSignIn, type ConsoleProviders } from './oauth-sign-in.ts';
import { adminPage, dashboardPage, messagePage, type Notice } from './pages.ts';
import { ConsoleSessions, sameSecret, type ConsoleSealer, type ConsoleSession } from './session.ts';
import { SignIn } from './sign-in.ts';
import { accountView, adminView, type ConsoleSources } from './views.ts';
import { serveAsset } from './web/assets.ts';
import { readForm as readFormOf } from './web/form.ts';
import { seeOther, sendHtml, sendText } from './web/headers.ts';

export const CONSOLE_PREFIX = '/console';

export interface ConsoleOptions {
  readonly sources: ConsoleSources;
  readonly openapi: OpenApi;
  readonly config: ConsoleConfig;
  /** Seals the console's cookies and OAuth state (the frontend's sealer, under keys derived for the console). */
  readonly sealer: ConsoleSealer;
  /** The installation's identity providers, when the console offers sign-in with them. */
  readonly providers?: ConsoleProviders;
  /** The console's origin: `console.public_url`, else the API's bound address (known once it listens). */
  readonly origin: () => URL;
  /** The API listener's host: on loopback only loopback Host names are answered. */
  readonly listenHost: string;
  readonly logger: Logger;
}

/** The installation's console on the API host (docs/controller.md, "Console"). */
export interface Console {
  owns(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
}

/**
 * The console: server-rendered pages under `/console` on the API listener. Every request passes the
 * Host check; every page but sign-in needs a session; every POST carries the session's CSRF token
 * from the same origin; every operation is the API's own (controller/operations), after the same
 * OpenAPI check. An account sees only its own environments; the admin view needs an admin session.
 */
export function createConsole(options: ConsoleOptions): Console {
  const { config, sources, logger } = options;
  const secure = () => options.origin().protocol === 'https:';
  const sessions = new ConsoleSessions(options.sealer, { secure: secure(), lifetimeMs: config.sessionLifetimeMs });
  const oauth =
    options.providers && config.oauthSignIn
      ? new OAuthSignIn(options.providers, options.sealer, options.origin, secure())
      : undefined;
  const signIn = new SignIn({
    sources,
    sessions,
    oauth,
    admins: config.admins,
    formCookie: consoleCookie('svc-console-form', secure()),
    logger,
  });
  const hostAllowed = hostGuard({
    ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
    listenHost: options.listenHost,
    port: () => Number(options.origin().port),
  });
  const providerNames = oauth?.providers.names ?? [];

  const accountOf = async (session: ConsoleSession): Promise<AccountRecord | undefined> =>
    session.accountId ? sources.store.getAccount(session.accountId) : undefined;

  const dashboard = async (res: ServerResponse, session: ConsoleSession, status: number, notice?: Notice) => {
    const account = await accountOf(session);
    const views = account ? await accountView(sources, account) : [];
    sendHtml(res, status, dashboardPage(session, views, providerNames, notice));
  };

  const operate = async (req: IncomingMessage, res: ServerResponse, path: string, session: ConsoleSession) => {
    const fields = await readFormOf(req);
    if (!sameSecret(fields.get('csrf'), session.csrf)) {
      return sendHtml(
        res,
        403,
        messagePage(
          'Refused',
          'The form does not carry this session’s CSRF token: reload the page and try again.',
          session,
        ),
      );
    }
    if (path === '/console/signout') return seeOther(res, '/console/signin', { 'set-cookie': sessions.end(session) });
    const form = FORM_OPERATIONS.get(path);
    const account = await accountOf(session);
    if (!form || !account)
      return sendHtml(res, 404, messagePage('Not found', 'There is no such operation for this session.', session));
    try {
      await dashboard(res, session, 200, {
        kind: 'ok',
        text: await runForm(form, fields, account, options.openapi, sources.operations),
      });
    } catch (err) {
      const { status, body } = errorBody(err);
      if (status >= 500 && body.code === 'internal_error')
        logger.error({ err: errorText(err), path }, 'console operation failed');
      await dashboard(res, session, status, { kind: 'error', text: body.message });
    }
  };

  const signedIn = async (req: IncomingMessage, res: ServerResponse, path: string, session: ConsoleSession) => {
    if (req.method === 'POST') {
      if (!sameOrigin(req)) return sendText(res, 403, 'cross-origin form posts are refused');
      return operate(req, res, path, session);
    }
    if (path === '/console' || path === '/console/') return dashboard(res, session, 200);
    if (path === '/console/admin') {
      if (!session.admin)
        return sendHtml(res, 403, messagePage('Not allowed', 'The admin view is for installation operators.', session));
      return sendHtml(res, 200, adminPage(session, await adminView(sources)));
    }
    if (path === '/console/events') return liveUpdates(req, res, sources, await accountOf(session));
    sendHtml(res, 404, messagePage('Not found', 'There is nothing at this address.', session));
  };

  const route = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    if (!hostAllowed(req)) return sendText(res, 421, 'this console answers only at its own address (Host refused)');
    if (req.method === 'GET' && serveAsset(res, path)) return;
    if (await signIn.handle(req, res, path)) return;
    const session = sessions.read(req);
    if (!session) {
      if (req.method === 'GET' && (path === '/console' || path === '/console/'))
        return seeOther(res, '/console/signin');
      return sendHtml(res, 401, messagePage('Signed out', 'Sign in to use the console.'));
    }
    if (req.method !== 'GET' && req.method !== 'POST') return sendText(res, 405, 'the console answers GET and POST');
    return signedIn(req, res, path, session);
  };

  return {
    owns: (path) => path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`),
    handle: async (req, res, path) => {
      try {
        await route(req, res, path);
      } catch (err) {
        const { status, body } = errorBody(err);
        if (status >= 500) logger.error({ err: errorText(err), path }, 'console request failed');
        if (!res.headersSent) sendHtml(res, status, messagePage('Error', body.message));
        else res.destroy();
      }
    },
  };
}
