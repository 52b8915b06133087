import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { SvcError } from '../../lib/errors.ts';
import { formatAddress, listen, portOf, closeServer, type ListenAddress } from '../../lib/listen.ts';
import type { Logger } from '../../lib/logger.ts';
import { createServer } from '../../lib/node-http.ts';
import { KIT_ASSETS, StaticAssets } from '../../lib/web/assets.ts';
import { sendJson, sendText } from '../../lib/web/headers.ts';
import { OriginCheck, loopbackHosts } from '../../lib/web/origin.ts';
import { CSRF_HEADER, StartSecret } from '../../lib/web/session.ts';
import { SseHub } from '../../lib/web/sse.ts';
import type { Agent } from '../agent.ts';
import type { InspectorStore } from '../inspector/store.ts';
import { apiRoutes } from './api.ts';
import type { Route } from './routes.ts';
import { pageRoutes } from './pages.ts';
import { summary } from './views.ts';

/** What the agent's page is built from. */
export interface AgentPageOptions {
  readonly agent: Agent;
  /** A loopback address (serve config `ui.listen`). */
  readonly listen: ListenAddress;
  readonly inspector?: InspectorStore;
  /** The frontend's cookie name, redacted from recorded requests and replays. */
  readonly ownCookie?: string;
  /** OAuth providers the frontend offers (the share form's choices). */
  readonly providers: readonly string[];
  readonly logger: Logger;
}

export interface RunningAgentPage {
  /** The page's URL with the per-start secret: printed at start, opened once to get the session cookie. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The agent's page (docs/agent.md, "The agent's page"): the shares and accesses of this machine,
 * the operations of the CLI on them, and the request inspector, served by `svc serve` on a
 * loopback port. Every request passes, in order: the Host check (DNS rebinding), then — except the
 * static assets — the session cookie set by the per-start secret, then for POSTs the Origin check
 * and the CSRF token (docs/security.md, "The agent's page").
 */
export async function startAgentPage(options: AgentPageOptions): Promise<RunningAgentPage> {
  const server = createServer();
  await listen(server, options.listen, 'ui.listen');
  const port = portOf(server);
  const origin = new OriginCheck(loopbackHosts(port));
  const secret = new StartSecret(`svc-ui-${port}`);
  const assets = new StaticAssets('/assets/', [KIT_ASSETS, join(import.meta.dirname, 'assets')]);
  const hub = new SseHub();
  const context = { ...options, hub, secret };
  const routes: Route[] = [...pageRoutes(context), ...apiRoutes(context)];
  const unsubscribe = [
    options.agent.onChange(() => hub.publish('*', 'changed', {})),
    options.inspector?.subscribe((r) => {
      const topic = `share:${r.share}`;
      if (hub.listening(topic)) hub.publish(topic, 'request', summary(r));
    }),
  ];

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const refusedHost = origin.refuseHost(req);
    if (refusedHost) return sendText(res, 421, `refused: ${refusedHost}`);
    const url = pageUrl(req.url);
    if (!url) return sendText(res, 400, 'refused: the request target is not a path of this page');
    if (assets.handle(req, res, url.pathname)) return;
    const cookie = req.method === 'GET' ? secret.admit(url) : undefined;
    if (cookie) return redirect(res, url.pathname, cookie);
    const session = secret.sessionOf(req);
    if (!session)
      return sendText(res, 401, 'refused: open the URL that svc serve printed at start (it carries the key)');
    if (req.method === 'POST') {
      const refused = origin.refuseWrite(req);
      if (refused) return sendText(res, 403, `refused: ${refused}`);
      const token = req.headers[CSRF_HEADER];
      if (!secret.csrf.verify(session, typeof token === 'string' ? token : undefined))
        return sendText(res, 403, 'refused: missing or wrong CSRF token');
    }
    const route = routes.find((r) => r.method === req.method && r.path.test(url.pathname));
    if (!route) return sendText(res, 404, `no page ${req.method} ${url.pathname}`);
    const match = route.path.exec(url.pathname) as RegExpExecArray;
    Promise.resolve(route.handle({ req, res, url, match, session })).catch((err: unknown) => {
      if (res.headersSent) return res.destroy();
      if (err instanceof SvcError && err.status < 500)
        return sendJson(res, err.status, { error: err.message, code: err.code });
      options.logger.error({ err, route: `${req.method} ${url.pathname}` }, 'agent page request failed');
      sendJson(res, err instanceof SvcError ? err.status : 500, {
        error: err instanceof SvcError ? err.message : 'internal error',
        code: err instanceof SvcError ? err.code : 'internal',
      });
    });
  });

  const base = `http://${formatAddress({ host: options.listen.host, port })}`;
  return {
    url: `${base}${secret.entryPath()}`,
    port,
    close: async () => {
      for (const u of unsubscribe) u?.();
      hub.close();
      server.closeAllConnections();
      await closeServer(server);
    },
  };
}

/**
 * The request target as a URL, or undefined when it is none: `new URL('//', base)` throws (an empty
 * host), and any web page the user opens can send that to the page's well-known loopback port; a
 * throw here would end `svc serve`.
 */
function pageUrl(target: string | undefined): URL | undefined {
  try {
    return new URL(target ?? '/', 'http://page');
  } catch {
    return undefined;
  }
}

/** After the key was taken: its cookie set, the same path without the key (out of the address bar). */
function redirect(res: ServerResponse, path: string, cookie: string): void {
  res.writeHead(303, {
    location: path,
    'set-cookie': cookie,
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  });
  res.end();
}
