import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../lib/logger.ts';
import { errorText } from '../lib/errors.ts';
import { Authenticator } from './auth.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { SHARE_TOKEN, type ShareRoute } from '../lib/share/spec.ts';
import { FrontendMetrics } from './metrics.ts';
import { sendPage } from './pages.ts';
import { createShareProxy, prepareBackendHeaders } from './proxy.ts';
import type { ShareSource } from '../lib/share/source.ts';

export interface FrontendOptions {
  readonly listen: { host: string; port: number };
  /**
   * Public base URL: its host serves callback and logout; its scheme and port are used for share
   * URLs. A function receives the bound port (for listeners on port 0, as tests and `--dev` use).
   */
  readonly endpointUrl: URL | ((boundPort: number) => URL);
  /** Share hosts are `<token>.<domain>`. */
  readonly domain: string;
  readonly oauth?: OAuthConfig;
  readonly shares: ShareSource;
  readonly logger: Logger;
  readonly metricsListen?: { host: string; port: number };
}

export interface RunningFrontend {
  readonly port: number;
  readonly endpointUrl: URL;
  readonly metricsPort?: number;
  readonly metrics: FrontendMetrics;
  close(): Promise<void>;
}

const CALLBACK = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/auth\/callback$/;
const LOGOUT = /^\/([A-Za-z0-9][A-Za-z0-9_-]*)\/logout$/;
const HEALTH_PATHS = new Set(['/healthz', '/readyz']);

/**
 * The public frontend: one listener that routes by host. `<token>.<domain>` reaches a share
 * (through OAuth when the share asks for it); endpoint_url's host serves the OAuth callback and
 * logout; `/healthz` and `/readyz` answer by exact path on any other host (probes use the pod IP).
 */
export async function startFrontend(options: FrontendOptions): Promise<RunningFrontend> {
  const { logger: log, domain } = options;
  const metrics = new FrontendMetrics();
  // Listen first: with port 0 the public URL depends on the port the system picked.
  const server = createServer({ requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 65_000 });
  await listen(server, options.listen);
  const endpointUrl =
    typeof options.endpointUrl === 'function' ? options.endpointUrl(portOf(server)) : options.endpointUrl;
  const auth = options.oauth
    ? new Authenticator({ ...options.oauth, endpointUrl }, () => options.shares, metrics, log)
    : undefined;
  const cookieName = options.oauth?.cookieName;
  const proxy = createShareProxy(metrics);
  let ready = auth === undefined;
  let stopped = false;

  const becomeReady = async (): Promise<void> => {
    while (!ready && !stopped && auth) {
      try {
        await auth.ready();
        ready = true;
        log.info('identity providers ready');
      } catch (err) {
        log.warn({ err: errorText(err) }, 'identity provider not ready; retrying in 5s');
        await new Promise((r) => setTimeout(r, 5000).unref());
      }
    }
  };
  void becomeReady();

  const health = (req: IncomingMessage, res: ServerResponse): boolean => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (!HEALTH_PATHS.has(path) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    metrics.request('health');
    const ok = path === '/healthz' || ready;
    res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end(ok ? 'ok\n' : 'identity providers not ready\n');
    return true;
  };

  const shareOf = (req: IncomingMessage): { token: string; share: ShareRoute | undefined } | undefined => {
    const host = hostnameOf(req);
    if (!host || host === endpointUrl.hostname || !host.endsWith(`.${domain}`)) return undefined;
    const token = host.slice(0, -(domain.length + 1));
    if (!SHARE_TOKEN.test(token)) return undefined;
    return { token, share: options.shares.lookup(token) };
  };

  const serveShare = async (req: IncomingMessage, res: ServerResponse, share: ShareRoute): Promise<void> => {
    let setCookie: string | undefined;
    if (share.oauth) {
      if (!auth) {
        metrics.request('refused');
        sendPage(
          res,
          500,
          'Share misconfigured',
          'This share requires a login, but the frontend has no identity providers configured.',
        );
        return;
      }
      const decision = await auth.authorize(req, res, { ...share, oauth: share.oauth });
      if (decision === 'handled') return;
      prepareBackendHeaders(req, cookieName, decision.session, endpointUrl);
      setCookie = decision.setCookie;
    } else {
      prepareBackendHeaders(req, cookieName, undefined, endpointUrl);
    }
    if (setCookie) proxy.addSetCookie(req, setCookie);
    metrics.request('proxied');
    proxy.web(req, res, share.target, (err) => {
      metrics.request('upstream_error');
      log.warn({ share: share.token, err: errorText(err) }, 'backend unreachable');
      sendPage(res, 502, 'Backend unreachable', 'The service behind this share is not answering. Try again later.');
    });
  };

  const serveEndpoint = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const callback = CALLBACK.exec(path);
    const logout = LOGOUT.exec(path);
    if (auth && (req.method === 'GET' || req.method === 'HEAD') && (callback || logout)) {
      metrics.request('auth_endpoint');
      if (callback) await auth.callback(req, res, callback[1] as string);
      else await auth.logout(req, res, (logout as RegExpExecArray)[1] as string);
      return;
    }
    sendPage(res, 404, 'Not found', 'There is nothing at this address.');
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const host = hostnameOf(req);
    if (!host) {
      sendPage(res, 400, 'Bad request', 'The request has no valid Host header.');
      return;
    }
    const routed = shareOf(req);
    if (routed) {
      if (routed.share) await serveShare(req, res, routed.share);
      else {
        metrics.request('unknown_share');
        sendPage(res, 404, 'Share not found', `There is no share named ${routed.token} on this frontend.`);
      }
      return;
    }
    if (health(req, res)) return;
    if (host === endpointUrl.hostname) await serveEndpoint(req, res);
    else sendPage(res, 404, 'Not found', 'This host is not served here.');
  };

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err: errorText(err) }, 'request failed');
      sendPage(res, 500, 'Internal error', 'The frontend could not handle this request.');
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const routed = shareOf(req);
    const share = routed?.share;
    if (!share) return rejectUpgrade(socket, 404);
    const session = share.oauth ? auth?.sessionForUpgrade(req, share) : undefined;
    if (share.oauth && !session) return rejectUpgrade(socket, 401);
    prepareBackendHeaders(req, cookieName, session, endpointUrl);
    metrics.request('proxied');
    proxy.ws(req, socket, head, share.target);
  });
  server.on('clientError', (_err, socket) => rejectUpgrade(socket, 400));

  let metricsServer: Server | undefined;
  if (options.metricsListen) {
    metricsServer = createServer((req, res) => {
      if (health(req, res)) return;
      if ((req.url ?? '').split('?')[0] === '/metrics') {
        metrics.registry
          .metrics()
          .then((text) => {
            res.writeHead(200, { 'content-type': metrics.registry.contentType });
            res.end(text);
          })
          .catch(() => sendPage(res, 500, 'Metrics unavailable', 'Metrics could not be collected.'));
        return;
      }
      sendPage(res, 404, 'Not found', 'Only /metrics, /healthz and /readyz are served here.');
    });
    await listen(metricsServer, options.metricsListen);
  }
  log.info(
    { address: options.listen.host, port: portOf(server), endpoint: endpointUrl.origin, domain },
    'frontend listening',
  );

  return {
    port: portOf(server),
    endpointUrl,
    ...(metricsServer ? { metricsPort: portOf(metricsServer) } : {}),
    metrics,
    async close() {
      stopped = true;
      proxy.close();
      await Promise.all([server, metricsServer].filter((s): s is Server => s !== undefined).map(closeServer));
    },
  };
}

/** Lower-cased host name of the request without port, or undefined when missing or malformed. */
function hostnameOf(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (!host || host.length > 300) return undefined;
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
}

function rejectUpgrade(socket: Duplex, status: number): void {
  if (socket.writable)
    socket.end(
      `HTTP/1.1 ${status} ${status === 401 ? 'Unauthorized' : status === 404 ? 'Not Found' : 'Bad Request'}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
    );
  else socket.destroy();
}

function listen(server: Server, address: { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function portOf(server: Server): number {
  return (server.address() as AddressInfo).port;
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
