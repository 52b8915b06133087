import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { stripIdentityHeaders } from '../lib/identity-headers.ts';
import { Agent, request } from '../lib/node-http.ts';
import { BackendIdleWatch } from './backend-idle.ts';
import { withoutOwnCookies } from './cookies.ts';
import type { FrontendMetrics } from './metrics.ts';
import type { Session } from './session.ts';

/**
 * The hot path: prepares the incoming headers (identity look-alikes and the frontend's own cookies
 * removed, the real identity headers added) and streams the request to the share backend over
 * keep-alive connections. HTTP requests go through a bare `http.request` pipe (measured faster and
 * lighter than http-proxy-3, see docs/benchmarks.md); WebSocket upgrades still use http-proxy-3,
 * loaded on the first upgrade only (see docs/design.md).
 */
export interface ShareProxy {
  /** `setCookie` (a refreshed session) is added to the backend's response without replacing the backend's own. */
  web(req: IncomingMessage, res: ServerResponse, target: URL, onError: (err: Error) => void, setCookie?: string): void;
  ws(req: IncomingMessage, socket: Duplex, head: Buffer, target: URL): void;
  close(): void;
}

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) that belong to one connection, not forwarded either way.
 * Transfer-Encoding is the exception on requests: Node's client needs it to frame a chunked body
 * it pipes on (its parser already checked it); on responses Node frames the body itself.
 */
const HOP_BY_HOP_REQUEST = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']);
const HOP_BY_HOP_RESPONSE = new Set([...HOP_BY_HOP_REQUEST, 'transfer-encoding']);

export function createShareProxy(metrics: FrontendMetrics, backendTimeoutMs: number): ShareProxy {
  const agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
  const idle = new BackendIdleWatch(backendTimeoutMs);
  let upgrades: Promise<UpgradeProxy> | undefined;
  return {
    web(req, res, target, onError, setCookie) {
      const t0 = process.hrtime.bigint();
      const upstream = request({
        agent,
        host: target.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: target.port || 80,
        method: req.method,
        path: joinPath(target.pathname, req.url ?? '/'),
        headers: requestHeaders(req.headers, target.host),
      });
      const watched = idle.add(upstream);
      upstream.once('error', (err) => {
        if (res.headersSent) res.destroy();
        else onError(err);
      });
      upstream.once('response', (upstreamRes) => {
        metrics.upstreamSeconds.observe(Number(process.hrtime.bigint() - t0) / 1e9);
        res.writeHead(
          upstreamRes.statusCode ?? 502,
          upstreamRes.statusMessage ?? '',
          responseHeaders(upstreamRes.rawHeaders, setCookie),
        );
        // A backend that hangs up mid-body: cut the visitor's response too, so the browser sees a
        // failed download rather than waiting for the rest of a Content-Length that never comes
        // (and never a truncated "complete" one).
        upstreamRes.once('close', () => {
          if (!upstreamRes.complete) res.destroy();
        });
        upstreamRes.pipe(res);
      });
      // The visitor went away (or its request failed): stop the backend's work as well.
      res.once('close', () => {
        idle.done(watched);
        if (!res.writableFinished) upstream.destroy();
      });
      req.once('error', () => upstream.destroy());
      if (hasBody(req)) req.pipe(upstream);
      else upstream.end();
    },
    ws(req, socket, head, target) {
      upgrades ??= loadUpgradeProxy();
      void upgrades.then(
        (proxy) => proxy.ws(req, socket, head, { target: target.href }, () => socket.destroy()),
        () => socket.destroy(),
      );
    },
    close() {
      void upgrades?.then((proxy) => proxy.close()).catch(() => undefined);
      idle.close();
      agent.destroy();
    },
  };
}

interface UpgradeProxy {
  ws(req: IncomingMessage, socket: Duplex, head: Buffer, options: { target: string }, cb: () => void): void;
  close(): void;
}

/** http-proxy-3 for WebSocket upgrades, imported on first use: most shares never see one. */
async function loadUpgradeProxy(): Promise<UpgradeProxy> {
  const { createProxyServer } = await import('http-proxy-3');
  const proxy = createProxyServer({ xfwd: false, changeOrigin: true });
  proxy.on('error', () => {
    // Errors are handled per upgrade through its callback; this keeps an unexpected one from crashing the process.
  });
  return proxy;
}

/** A request with a body to stream on (Node's parser has settled Content-Length against Transfer-Encoding). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function requestHeaders(incoming: IncomingHttpHeaders, host: string): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const name in incoming) if (!HOP_BY_HOP_REQUEST.has(name)) out[name] = incoming[name];
  out.host = host;
  return out;
}

/** The backend's headers as a flat [name, value, …] list (its spelling kept), hop-by-hop ones left out. */
function responseHeaders(raw: readonly string[], setCookie: string | undefined): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (!HOP_BY_HOP_RESPONSE.has(name.toLowerCase())) out.push(name, raw[i + 1] as string);
  }
  if (setCookie) out.push('set-cookie', setCookie);
  return out;
}

/** The target's own path prefix (a share may point at `http://host/app/`) joined with the request's. */
function joinPath(prefix: string, path: string): string {
  if (prefix === '/' || prefix === '') return path;
  return `${prefix.replace(/\/$/, '')}/${path.replace(/^\//, '')}`;
}

/** Headers that state where a request came from; `_`/`.` spellings are dropped as look-alikes (see identity headers). */
const FORWARDING_HEADERS = new Set([
  'forwarded',
  'x-real-ip',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
]);

/**
 * Rewrites `req.headers` in place for the backend. Runs for every share, OAuth or not: a backend
 * behind svc must be able to trust `svc-auth-*` headers, and it never sees svc's cookies.
 */
export function prepareBackendHeaders(
  req: IncomingMessage,
  cookieName: string | undefined,
  session: Session | undefined,
  publicUrl: URL,
): void {
  stripIdentityHeaders(req.headers);
  // The share's public host and scheme are known here: a client's own X-Forwarded-Host/Proto/Port
  // would let it poison the absolute URLs a backend builds (password-reset links and the like).
  // X-Forwarded-For is appended to, as every proxy in a chain does. RFC 7239 `Forwarded` and
  // `X-Real-IP` carry the same claims, so they are rebuilt from the frontend's own view.
  for (const name of Object.keys(req.headers)) {
    if (/[_.]/.test(name) && FORWARDING_HEADERS.has(name.replace(/[_.]/g, '-'))) delete req.headers[name];
  }
  const peer = req.socket.remoteAddress ?? '';
  const forwardedFor = req.headers['x-forwarded-for'];
  const host = req.headers.host ?? publicUrl.host;
  const proto = publicUrl.protocol.slice(0, -1);
  req.headers['x-forwarded-for'] = forwardedFor ? `${String(forwardedFor)}, ${peer}` : peer;
  req.headers['x-forwarded-host'] = host;
  req.headers['x-forwarded-proto'] = proto;
  req.headers['x-forwarded-port'] = publicUrl.port || (publicUrl.protocol === 'https:' ? '443' : '80');
  req.headers['x-real-ip'] = peer;
  req.headers.forwarded = `for=${forwardedNode(peer)};host="${host}";proto=${proto}`;
  if (cookieName !== undefined) {
    const cookie = withoutOwnCookies(req.headers.cookie, cookieName);
    if (cookie === undefined) delete req.headers.cookie;
    else req.headers.cookie = cookie;
  }
  if (session) {
    req.headers['svc-auth-provider'] = session.provider;
    req.headers['svc-auth-email'] = session.email;
    req.headers['svc-auth-expires'] = new Date(session.expiresAt).toISOString();
  }
}

/** RFC 7239 §6 node name: IPv6 addresses are bracketed and quoted. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}
