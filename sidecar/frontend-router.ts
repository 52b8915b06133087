import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { answerHealth } from '../lib/health.ts';
import { guardUpgradeSocket } from '../lib/upgrade-socket.ts';
import type { FrontendParts } from './frontend-parts.ts';
import { hostnameOf, shareHostOf } from './host-routing.ts';
import { sendPage } from './pages.ts';
import { inTurn } from './request-order.ts';
import { answeringErrors } from './request-errors.ts';
import { clientErrorStatus, rejectUpgrade, serveShare, upgradeShare } from './share-handler.ts';

const CALLBACK = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/auth\/callback$/;
const START = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/auth\/start$/;
const LOGOUT = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/logout$/;

/** endpoint_url's host: the OAuth login start, callback and logout of each provider, else 404. */
async function serveEndpoint(parts: FrontendParts, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { auth, metrics } = parts;
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const callback = CALLBACK.exec(path);
  const start = START.exec(path);
  const logout = LOGOUT.exec(path);
  if (auth && (req.method === 'GET' || req.method === 'HEAD') && (callback || start || logout)) {
    metrics.request('auth_endpoint');
    if (callback) await auth.callback(req, res, callback[1] as string);
    else if (start) await auth.start(req, res, start[1] as string);
    else await auth.logout(req, res, (logout as RegExpExecArray)[1] as string);
    return;
  }
  sendPage(res, 404, 'Not found', 'There is nothing at this address.');
}

/**
 * Routes one request by host: a share's host to the share, `/healthz` and `/readyz` on any host,
 * endpoint_url's host to the login endpoints. Undefined when the response is already under way:
 * most requests take no promise.
 */
function routeRequest(parts: FrontendParts, req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
  const { metrics } = parts;
  const host = hostnameOf(req);
  if (!host) {
    metrics.request('bad_request');
    sendPage(res, 400, 'Bad request', 'The request needs exactly one valid Host header and a path (RFC 9112 §3.2).');
    return undefined;
  }
  const routed = shareHostOf(req, parts.routing);
  if (routed) {
    if (routed.share) return serveShare(parts.deps, req, res, routed.share);
    metrics.request('unknown_share');
    sendPage(res, 404, 'Share not found', `There is no share named ${routed.token} on this frontend.`);
    return undefined;
  }
  if (answerHealth(req, res, parts.health)) return undefined;
  if (host === parts.endpointUrl.hostname) return serveEndpoint(parts, req, res);
  sendPage(res, 404, 'Not found', 'This host is not served here.');
  return undefined;
}

/**
 * Attaches the frontend's routes to Node's server: the requests the fast path leaves to it, one at
 * a time per connection as the fast path takes them (request-order.ts), upgrades (a share's
 * WebSocket, or `onUpgrade` for a host that is not a share's) and malformed requests.
 */
export function attachRouter(
  server: Server,
  parts: FrontendParts,
  onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean,
): void {
  const serve = answeringErrors((req, res) => routeRequest(parts, req, res), parts.log);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => inTurn(req, res, () => serve(req, res)));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    guardUpgradeSocket(socket);
    if (!hostnameOf(req)) return rejectUpgrade(socket, 400);
    const routed = shareHostOf(req, parts.routing);
    if (!routed && onUpgrade?.(req, socket, head)) return;
    upgradeShare(parts.deps, req, socket, head, routed?.share);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => rejectUpgrade(socket, clientErrorStatus(err)));
}
