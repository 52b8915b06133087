import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { STATUS_CODES } from '../lib/node-http.ts';
import type { ShareRoute } from '../lib/share/spec.ts';
import type { Authenticator } from './auth.ts';
import type { FrontendMetrics } from './metrics.ts';
import { BACKEND_PAGES, sendPage } from './pages.ts';
import { BackendTimeout } from '../lib/backend-idle.ts';
import { applyBackendHeaders, BackendResponseRefused, type BackendPipe } from '../lib/http-pipe.ts';
import type { BackendCookies } from '../lib/backend-cookies.ts';
import { backendHeaders } from './proxy.ts';
import type { Session } from './session.ts';
import { shareAuthPath } from './handover.ts';
import type { UploadGate } from './upload-gate.ts';

export interface ShareHandlerDeps {
  /** Absent when the frontend has no identity providers: OAuth shares are then refused. */
  readonly auth: Authenticator | undefined;
  readonly cookieName: string | undefined;
  /** What passes of a backend's Set-Cookie headers, per share (lib/backend-cookies.ts). */
  readonly cookies: BackendCookies;
  readonly endpointUrl: URL;
  readonly proxy: BackendPipe;
  /** When a request with a body may take a backend connection (upload-gate.ts). */
  readonly uploads: UploadGate;
  readonly metrics: FrontendMetrics;
  readonly log: Logger;
}

/**
 * A request on a share host: the login when the share asks for one (seed: "OAuth"), then the
 * backend. Every path on a share host belongs to the backend, `/healthz` included, except on an
 * OAuth share its provider's hand-over and logout paths (sidecar/handover.ts: `shareAuthPath`). A request with
 * a current session is proxied at once; only a login, a re-check or a refusal returns a promise.
 */
export function serveShare(
  deps: ShareHandlerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  share: ShareRoute,
): Promise<void> | undefined {
  const { auth, metrics } = deps;
  const oauth = share.oauth;
  if (!oauth) return void proxyToBackend(deps, req, res, share, undefined, undefined);
  if (!auth) {
    metrics.request('refused');
    sendPage(
      res,
      500,
      'Share misconfigured',
      'This share requires a login, but the frontend has no identity providers configured.',
    );
    return undefined;
  }
  const reserved = shareAuthPath(req.url ?? '/', oauth.provider);
  if (reserved && (req.method === 'GET' || req.method === 'HEAD')) {
    metrics.request('auth_endpoint');
    return reserved === 'handover' ? auth.handOver(req, res, share) : auth.logout(req, res, oauth.provider);
  }
  const session = auth.currentSession(req, share, oauth);
  if (session) return void proxyToBackend(deps, req, res, share, session, undefined);
  return authorizeAndProxy(deps, auth, req, res, { ...share, oauth });
}

async function authorizeAndProxy(
  deps: ShareHandlerDeps,
  auth: Authenticator,
  req: IncomingMessage,
  res: ServerResponse,
  share: ShareRoute & { oauth: NonNullable<ShareRoute['oauth']> },
): Promise<void> {
  const decision = await auth.authorize(req, res, share);
  if (decision !== 'handled') proxyToBackend(deps, req, res, share, decision.session, decision.setCookie);
}

function proxyToBackend(
  deps: ShareHandlerDeps,
  req: IncomingMessage,
  res: ServerResponse,
  share: ShareRoute,
  session: Session | undefined,
  setCookie: string | undefined,
): void {
  const { cookieName, endpointUrl, proxy, metrics, log } = deps;
  const headers = backendHeaders(req, cookieName, session, endpointUrl);
  const cookies = deps.cookies.forShare(share.token);
  metrics.request('proxied');
  if (!(share.target instanceof URL)) {
    applyBackendHeaders(req, headers);
    share.target.web(req, res, setCookie, cookies);
    return;
  }
  const onError = (err: Error): void => {
    metrics.request('upstream_error');
    if (err instanceof BackendTimeout) {
      log.warn({ share: share.token, err: errorText(err) }, 'backend timed out');
      const { status, title, message } = BACKEND_PAGES.timeout;
      sendPage(res, status, title, message);
      return;
    }
    log.warn({ share: share.token, err: errorText(err) }, 'backend unreachable');
    // A response Node's parser refused (HPE_*, a head over the limit among them), or one the pipe refused.
    const refused = err instanceof BackendResponseRefused || (err as NodeJS.ErrnoException).code?.startsWith('HPE_');
    const { status, title, message } = refused ? BACKEND_PAGES.refused : BACKEND_PAGES.unreachable;
    sendPage(res, status, title, message);
  };
  const target = share.target;
  deps.uploads.admit(req, res, share.token, () =>
    proxy.web(req, res, target, headers, onError, setCookie, cookies, share.recorder),
  );
}

/**
 * A WebSocket upgrade on a share host: only with a valid session when the share asks for a login
 * (no redirect is possible mid-handshake, so no session is a plain 401).
 */
export function upgradeShare(
  deps: ShareHandlerDeps,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  share: ShareRoute | undefined,
): void {
  if (!share) return rejectUpgrade(socket, 404);
  const session = share.oauth ? deps.auth?.sessionForUpgrade(req, share) : undefined;
  if (share.oauth && !session) return rejectUpgrade(socket, 401);
  const headers = backendHeaders(req, deps.cookieName, session, deps.endpointUrl);
  const cookies = deps.cookies.forShare(share.token);
  deps.metrics.request('proxied');
  if (share.target instanceof URL) deps.proxy.ws(req, socket, head, share.target, headers, cookies);
  else {
    applyBackendHeaders(req, headers);
    share.target.ws(req, socket, head, cookies);
  }
}

/**
 * Answers `status` and closes the connection. What the visitor sends meanwhile is read and
 * dropped: left unread (an upgraded socket is paused), it would hold the visitor's close behind it
 * and the connection, with its slot of the per-address cap, would never close.
 */
export function rejectUpgrade(socket: Duplex, status: 400 | 401 | 404 | 408 | 431): void {
  if (socket.writable) {
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    socket.resume();
  } else socket.destroy();
}

/** The status for a request Node's parser gave up on: too slow (408), headers too large (431), or malformed (400). */
export function clientErrorStatus(err: NodeJS.ErrnoException): 400 | 408 | 431 {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (err.code === 'HPE_HEADER_OVERFLOW') return 431;
  return 400;
}
