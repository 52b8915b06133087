import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { KIT_ASSETS, StaticAssets } from '../../lib/web/assets.ts';
import { loopbackHosts, OriginCheck } from '../../lib/web/origin.ts';
import { CsrfTokens } from '../../lib/web/session.ts';
import { errorBody } from '../errors.ts';
import type { OpenApi } from '../openapi.ts';
import type { ConsoleConfig } from './config.ts';
import { consoleCookie } from './cookies.ts';
import { LiveUpdates } from './live.ts';
import { OAuthSignIn, type ConsoleProviders } from './oauth-sign-in.ts';
import { ASSET_BASE, messagePage } from './pages.ts';
import { refuse, seeOther, sendPage } from './respond.ts';
import { ConsoleSessions, type ConsoleSealer } from './session.ts';
import { SignIn } from './sign-in.ts';
import { signedInPages } from './signed-in.ts';
import type { ConsoleSources } from './views.ts';

export const CONSOLE_PREFIX = '/console';
const CONSOLE_ASSETS = new URL('./web/assets', import.meta.url).pathname;

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
  /** The API listener's host: its own `host:port` is answered besides the loopback names and the public URL's. */
  readonly listenHost: string;
  readonly logger: Logger;
}

/** The installation's console on the API host (docs/controller.md, "Console"). */
export interface Console {
  owns(path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void>;
  close(): void;
}

/**
 * The console: server-rendered pages under `/console` on the API listener, built on the page kit
 * (lib/web). Every request passes the Host check (DNS rebinding); every page but sign-in needs a
 * session; every POST carries the session's CSRF token and its own Origin; every operation is the
 * API's own (controller/operations) after the same OpenAPI check. An account sees only its own
 * environments; the admin view needs an admin session.
 */
export function createConsole(options: ConsoleOptions): Console {
  const { config, sources, logger } = options;
  const secure = options.origin().protocol === 'https:';
  const sessions = new ConsoleSessions(options.sealer, { secure, lifetimeMs: config.sessionLifetimeMs });
  const csrf = new CsrfTokens();
  const assets = new StaticAssets(ASSET_BASE, [KIT_ASSETS, CONSOLE_ASSETS]);
  const live = new LiveUpdates(sources);
  let check: OriginCheck | undefined;
  // Built at the first request: the names include the bound port, which port 0 reveals only then.
  const origin = () => (check ??= originCheck(options));
  const oauth =
    options.providers && config.oauthSignIn
      ? new OAuthSignIn(options.providers, options.sealer, options.origin, secure)
      : undefined;
  const formCookie = consoleCookie('svc-console-form', secure);
  const signIn = new SignIn({ sources, sessions, oauth, admins: config.admins, formCookie, csrf, origin, logger });
  const providerNames = oauth?.providers.names ?? [];

  const signedIn = signedInPages({
    sources,
    openapi: options.openapi,
    logger,
    sessions,
    csrf,
    live,
    origin,
    providerNames,
  });

  const route = async (req: IncomingMessage, res: ServerResponse, path: string) => {
    const badHost = origin().refuseHost(req);
    if (badHost) return refuse(res, 421, `this console answers only at its own address: ${badHost}`);
    if (path === '/') return seeOther(res, CONSOLE_PREFIX);
    if (assets.handle(req, res, path)) return;
    if (await signIn.handle(req, res, path)) return;
    const session = sessions.read(req);
    if (!session) {
      if (req.method === 'GET' && (path === '/console' || path === '/console/'))
        return seeOther(res, '/console/signin');
      return sendPage(res, 401, messagePage('Signed out', 'Sign in to use the console.'));
    }
    if (req.method !== 'GET' && req.method !== 'POST') return refuse(res, 405, 'the console answers GET and POST');
    return signedIn(req, res, path, session);
  };

  return {
    // `/` leads browsers to the console (the API itself lives under /api/v1).
    owns: (path) => path === '/' || path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`),
    handle: async (req, res, path) => {
      try {
        await route(req, res, path);
      } catch (err) {
        const { status, body } = errorBody(err);
        if (status >= 500) logger.error({ err: errorText(err), path }, 'console request failed');
        if (!res.headersSent) sendPage(res, status, messagePage('Error', body.message));
        else res.destroy();
      }
    },
    close: () => live.close(),
  };
}

/**
 * The names the console answers to: the public URL's host, the loopback names with the bound port,
 * and the listener's own address when it is not a wildcard.
 */
function originCheck(options: ConsoleOptions): OriginCheck {
  const bound = options.origin();
  const port = Number(bound.port) || (bound.protocol === 'https:' ? 443 : 80);
  const hosts = new Set([bound.host, ...loopbackHosts(port)]);
  if (options.config.publicUrl) hosts.add(options.config.publicUrl.host);
  if (!['0.0.0.0', '::'].includes(options.listenHost)) hosts.add(bound.host);
  return new OriginCheck([...hosts], bound.protocol === 'https:' ? 'https' : 'http');
}
