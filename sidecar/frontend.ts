import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock } from '../lib/clock.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { errorText } from '../lib/errors.ts';
import {
  answerHealth,
  startHealthServer,
  type HealthRoutes,
  type HealthServer,
  type Readiness,
} from '../lib/health.ts';
import { closeServer, listen, portOf, type ListenAddress } from '../lib/listen.ts';
import type { Logger } from '../lib/logger.ts';
import type { ShareSource } from '../lib/share/source.ts';
import { BackendCookies } from '../lib/backend-cookies.ts';
import { Authenticator } from './auth.ts';
import { shareAuthPath } from './handover.ts';
import { startInternalEndpoint, type InternalEndpoint } from './auth-service.ts';
import { FastPath } from './fast-path/fast-path.ts';
import { hostnameOf, routableHostname, shareHostNamed, shareHostOf } from './host-routing.ts';
import { ConnectionSlots, createLimitedServer, DEFAULT_FRONTEND_LIMITS, type FrontendLimits } from './connections.ts';
import { FrontendMetrics } from './metrics.ts';
import { sendPage } from './pages.ts';
import { ProviderReadiness } from './provider-readiness.ts';
import { inTurn } from './request-order.ts';
import { UploadGate } from './upload-gate.ts';
import { backendHeaders, createShareProxy } from './proxy.ts';
import type { Session } from './session.ts';
import type { SharedState } from './shared-state.ts';
import { clientErrorStatus, rejectUpgrade, serveShare, upgradeShare, type ShareHandlerDeps } from './share-handler.ts';

export interface FrontendOptions {
  readonly listen: ListenAddress;
  /**
   * Public base URL: its host serves login start, callback and logout; its scheme and port are used
   * for share URLs. A function receives the bound port (for listeners on port 0, as tests and
   * `--dev` use).
   */
  readonly endpointUrl: URL | ((boundPort: number) => URL);
  /** Share hosts are `<token>.<domain>`. */
  readonly domain: string;
  readonly oauth?: OAuthConfig;
  readonly shares: ShareSource;
  readonly logger: Logger;
  readonly metricsListen?: ListenAddress;
  /** Timeouts and connection caps against slow or greedy clients (defaults in connections.ts). */
  readonly limits?: Partial<FrontendLimits>;
  /** Time of sessions, login state and re-checks; the system clock unless a test moves time itself. */
  readonly clock?: Clock;
  /**
   * A further readiness condition for `/readyz`, next to the identity providers' (the public
   * frontend waits for its first registry snapshot).
   */
  readonly ready?: () => Readiness;
  /** The replay guard and logged-out sessions, when several worker processes share them (sidecar/shared-state.ts). */
  readonly sharedState?: SharedState;
  /** Takes an upgrade on a host that is not a share's (the tunnel endpoint); true when it did. */
  readonly onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
}

export interface RunningFrontend {
  readonly port: number;
  readonly endpointUrl: URL;
  readonly metricsPort?: number;
  /** The auth endpoint's internal port (share pods' renew calls), when `oauth.internal_address` is set. */
  readonly internalPort?: number;
  readonly metrics: FrontendMetrics;
  /** Open client connections of one peer address, or of all (each holds a slot of its address's cap). */
  openConnections(peer?: string): number;
  close(): Promise<void>;
}

const CALLBACK = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/auth\/callback$/;
const START = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/auth\/start$/;
const LOGOUT = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/logout$/;

/**
 * The public frontend: one listener that routes by host. `<token>.<domain>` reaches a share
 * (sidecar/share-handler.ts, through OAuth when the share asks for it); endpoint_url's host serves
 * the OAuth login start, callback and logout; `/healthz` and `/readyz` answer by exact path on any other host
 * (probes use the pod IP).
 */
export async function startFrontend(options: FrontendOptions): Promise<RunningFrontend> {
  const { logger: log, domain, shares } = options;
  const metrics = new FrontendMetrics();
  // Listen first: with port 0 the public URL depends on the port the system picked.
  const limits = { ...DEFAULT_FRONTEND_LIMITS, ...options.limits };
  // Built once the public URL is known (below); no connection can arrive before then.
  const fast: { path?: FastPath } = {};
  const slots = new ConnectionSlots((total) => metrics.connectionsOpen.set(total));
  const server = createLimitedServer(
    limits,
    (peer) => {
      metrics.connectionsRefused.inc();
      log.warn({ peer }, 'connection refused: too many open connections from this address');
    },
    (socket, attach, started) => (fast.path ? fast.path.take(socket, attach, started) : attach(socket)),
    slots,
  );
  await listen(server, options.listen);
  const endpointUrl =
    typeof options.endpointUrl === 'function' ? options.endpointUrl(portOf(server)) : options.endpointUrl;
  const auth = options.oauth
    ? new Authenticator(
        { ...options.oauth, endpointUrl },
        () => shares,
        metrics,
        log,
        options.clock,
        options.sharedState,
      )
    : undefined;
  const proxy = createShareProxy(metrics, limits.backendTimeoutMs);
  const cookies = new BackendCookies(options.oauth?.cookieName, domain);
  const deps: ShareHandlerDeps = {
    auth,
    cookieName: options.oauth?.cookieName,
    cookies,
    endpointUrl,
    proxy,
    uploads: new UploadGate(limits),
    metrics,
    log,
  };
  const readiness = new ProviderReadiness(auth, log);
  const health: HealthRoutes = {
    ready: () => {
      const also = options.ready?.();
      if (also && !also.ok) return also;
      return { ok: readiness.isReady, detail: readiness.isReady ? 'ok' : 'identity providers not ready' };
    },
    onProbe: () => metrics.request('health'),
  };
  const routing = { endpointHost: endpointUrl.hostname, domain, shares };
  const cookieName = options.oauth?.cookieName;
  fast.path = new FastPath({
    // A share with a plain-HTTP backend or a tunnelled one, and a session that needs no I/O when it
    // asks for a login. A share the agent's request inspector records is recorded there too
    // (fast-path/recording.ts); a tunnelled share is recorded by its agent.
    route: (request) => {
      const share = shareHostNamed(routableHostname(request.host, request.url), routing)?.share;
      const target = share && (share.target instanceof URL ? share.target : share.target.streams);
      if (!share || !target || (target instanceof URL && target.protocol !== 'http:')) return undefined;
      let session: Session | undefined;
      if (share.oauth) {
        if (shareAuthPath(request.url, share.oauth.provider)) return undefined;
        session = auth?.currentSession(request, share, share.oauth);
        if (!session) return undefined;
      }
      return {
        target,
        share: share.token,
        headers: backendHeaders(request, cookieName, session, endpointUrl),
        cookies: cookies.forShare(share.token),
        recorder: share.recorder,
      };
    },
    limits,
    metrics,
    log,
  });

  const serveEndpoint = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
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
  };

  /** Undefined when the response is already under way: most requests take no promise. */
  const handle = (req: IncomingMessage, res: ServerResponse): Promise<void> | undefined => {
    const host = hostnameOf(req);
    if (!host) {
      metrics.request('bad_request');
      sendPage(res, 400, 'Bad request', 'The request needs exactly one valid Host header and a path (RFC 9112 §3.2).');
      return undefined;
    }
    const routed = shareHostOf(req, routing);
    if (routed) {
      if (routed.share) return serveShare(deps, req, res, routed.share);
      metrics.request('unknown_share');
      sendPage(res, 404, 'Share not found', `There is no share named ${routed.token} on this frontend.`);
      return undefined;
    }
    if (answerHealth(req, res, health)) return undefined;
    if (host === endpointUrl.hostname) return serveEndpoint(req, res);
    sendPage(res, 404, 'Not found', 'This host is not served here.');
    return undefined;
  };
  const failed = (res: ServerResponse, err: unknown): void => {
    log.error({ err: errorText(err) }, 'request failed');
    sendPage(res, 500, 'Internal error', 'The frontend could not handle this request.');
  };

  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    let pending: Promise<void> | undefined;
    try {
      pending = handle(req, res);
    } catch (err) {
      failed(res, err);
      return;
    }
    pending?.catch((err: unknown) => failed(res, err));
  };
  // Pipelined requests one at a time (request-order.ts), as the fast path takes them.
  server.on('request', (req: IncomingMessage, res: ServerResponse) => inTurn(req, res, () => serve(req, res)));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!hostnameOf(req)) return rejectUpgrade(socket, 400);
    const routed = shareHostOf(req, routing);
    if (!routed && options.onUpgrade?.(req, socket, head)) return;
    upgradeShare(deps, req, socket, head, routed?.share);
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => rejectUpgrade(socket, clientErrorStatus(err)));

  let metricsServer: HealthServer | undefined;
  if (options.metricsListen) {
    metricsServer = await startHealthServer(options.metricsListen, { ...health, registry: metrics.registry });
  }
  log.info(
    { address: options.listen.host, port: portOf(server), endpoint: endpointUrl.origin, domain },
    'frontend listening',
  );

  const internal: InternalEndpoint | undefined =
    auth && options.oauth?.internalAddress
      ? await startInternalEndpoint(options.oauth.internalAddress, auth, log)
      : undefined;

  return {
    port: portOf(server),
    endpointUrl,
    ...(metricsServer ? { metricsPort: metricsServer.port } : {}),
    ...(internal ? { internalPort: internal.port } : {}),
    metrics,
    openConnections: (peer) => slots.open(peer),
    async close() {
      readiness.stop();
      fast.path?.close();
      proxy.close();
      await Promise.all([closeServer(server), metricsServer?.close(), internal?.close()]);
    },
  };
}
