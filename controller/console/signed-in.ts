import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { OriginCheck } from '../../lib/web/origin.ts';
import type { CsrfTokens } from '../../lib/web/session.ts';
import { errorBody } from '../errors.ts';
import type { OpenApi } from '../openapi.ts';
import type { AccountRecord } from '../store.ts';
import { FORM_OPERATIONS, runForm } from './actions.ts';
import { readFields } from './fields.ts';
import type { LiveUpdates } from './live.ts';
import { adminPage, dashboardPage, messagePage, type Notice, type Viewer } from './pages.ts';
import { refuse, seeOther, sendPage } from './respond.ts';
import type { ConsoleSession, ConsoleSessions } from './session.ts';
import { accountView, adminView, type ConsoleSources } from './views.ts';

/** What the signed-in pages use of the console's parts (console.ts). */
export interface SignedInParts {
  readonly sources: ConsoleSources;
  readonly openapi: OpenApi;
  readonly logger: Logger;
  readonly sessions: ConsoleSessions;
  readonly csrf: CsrfTokens;
  readonly live: LiveUpdates;
  readonly origin: () => OriginCheck;
  readonly providerNames: readonly string[];
}

/**
 * The console's pages for a signed-in session: the dashboard (only the session's account), the
 * admin view (admin sessions only), the live event stream, and the form operations (each POST with
 * its own Origin and the session's CSRF token, run through the API's operations).
 */
export function signedInPages(
  parts: SignedInParts,
): (req: IncomingMessage, res: ServerResponse, path: string, session: ConsoleSession) => Promise<void> {
  const { sources, logger, sessions, csrf, live, origin, providerNames } = parts;
  const accountOf = async (session: ConsoleSession): Promise<AccountRecord | undefined> =>
    session.accountId ? sources.store.getAccount(session.accountId) : undefined;
  const viewerOf = (session: ConsoleSession): Viewer => ({
    email: session.email,
    admin: session.admin,
    csrf: csrf.token(session.id),
  });

  const dashboard = async (res: ServerResponse, session: ConsoleSession, status: number, notice?: Notice) => {
    const account = await accountOf(session);
    const views = account ? await accountView(sources, account) : [];
    sendPage(res, status, dashboardPage(viewerOf(session), views, providerNames, notice));
  };

  const operate = async (req: IncomingMessage, res: ServerResponse, path: string, session: ConsoleSession) => {
    const fields = await readFields(req);
    if (!csrf.verify(session.id, fields.get('_csrf'))) {
      const message = 'The form does not carry this session’s CSRF token: reload the page and try again.';
      return sendPage(res, 403, messagePage('Refused', message, viewerOf(session)));
    }
    if (path === '/console/signout') return seeOther(res, '/console/signin', [sessions.end(session)]);
    const form = FORM_OPERATIONS.get(path);
    const account = await accountOf(session);
    if (!form || !account) {
      return sendPage(
        res,
        404,
        messagePage('Not found', 'There is no such operation for this session.', viewerOf(session)),
      );
    }
    try {
      const done = await runForm(form, fields, account, parts.openapi, sources.operations);
      await dashboard(res, session, 200, { kind: 'ok', text: done });
    } catch (err) {
      const { status, body } = errorBody(err);
      if (status >= 500 && body.code === 'internal_error') {
        logger.error({ err: errorText(err), path }, 'console operation failed');
      }
      await dashboard(res, session, status, { kind: 'error', text: body.message });
    }
  };

  const signedIn = async (req: IncomingMessage, res: ServerResponse, path: string, session: ConsoleSession) => {
    if (req.method === 'POST') {
      const refused = origin().refuseWrite(req);
      if (refused) return refuse(res, 403, `refused: ${refused}`);
      return operate(req, res, path, session);
    }
    if (path === '/console' || path === '/console/') return dashboard(res, session, 200);
    const viewer = viewerOf(session);
    if (path === '/console/admin') {
      if (!session.admin) {
        return sendPage(res, 403, messagePage('Not allowed', 'The admin view is for installation operators.', viewer));
      }
      return sendPage(res, 200, adminPage(viewer, await adminView(sources)));
    }
    const account = await accountOf(session);
    if (path === '/console/events' && account) return live.attach(req, res, account);
    sendPage(res, 404, messagePage('Not found', 'There is nothing at this address.', viewer));
  };

  return signedIn;
}
