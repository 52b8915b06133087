import type { ClientRequest, IncomingMessage, RequestOptions, ServerResponse } from 'node:http';
import type * as Https from 'node:https';
import type { Duplex } from 'node:stream';
import { connectionWithoutIdentity, isIdentityHeaderName } from '../lib/identity-headers.ts';
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
  web(
    req: IncomingMessage,
    res: ServerResponse,
    target: URL,
    headers: BackendHeaders,
    onError: (err: Error) => void,
    setCookie?: string,
  ): void;
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

/** Keep-alive connections to the share backends, one pool per scheme. */
const POOL = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64 };

export function createShareProxy(metrics: FrontendMetrics, backendTimeoutMs: number): ShareProxy {
  const agent = new Agent(POOL);
  const tls = new TlsTransport();
  const idle = new BackendIdleWatch(backendTimeoutMs);
  let upgrades: Promise<UpgradeProxy> | undefined;
  return {
    web(req, res, target, headers, onError, setCookie) {
      const t0 = process.hrtime.bigint();
      const options: RequestOptions = {
        agent,
        host: upstreamHost(target),
        port: upstreamPort(target),
        method: req.method,
        path: joinPath(target.pathname, req.url ?? '/'),
        headers: requestHeaders(headers, target.host),
      };
      const upstream = target.protocol === 'https:' ? tls.request(options) : request(options);
      const watched = idle.add(upstream);
      // `on`, not `once`: each of these objects lives for one request, and `once` costs a wrapper
      // and a listener removal per event on the hot path.
      upstream.on('error', (err) => {
        if (res.headersSent) res.destroy();
        else onError(err);
      });
      upstream.on('response', (upstreamRes) => {
        metrics.upstreamSeconds.observe(Number(process.hrtime.bigint() - t0) / 1e9);
        res.writeHead(
          upstreamRes.statusCode ?? 502,
          upstreamRes.statusMessage ?? '',
          responseHeaders(upstreamRes.rawHeaders, setCookie),
        );
        // A backend that hangs up mid-body: cut the visitor's response too, so the browser sees a
        // failed download rather than waiting for the rest of a Content-Length that never comes
        // (and never a truncated "complete" one).
        upstreamRes.on('close', () => {
          if (!upstreamRes.complete) res.destroy();
        });
        upstreamRes.pipe(res);
      });
      // The visitor went away (or its request failed): stop the backend's work as well.
      res.on('close', () => {
        idle.done(watched);
        if (!res.writableFinished) upstream.destroy();
      });
      if (hasBody(req)) {
        // A request that fails mid-body (without a body, the visitor's leaving closes `res` above).
        req.on('error', () => upstream.destroy());
        req.pipe(upstream);
      } else upstream.end();
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
      tls.close();
    },
  };
}

/** The target's host as a socket address: an IPv6 literal without its URL brackets. */
export function upstreamHost(target: URL): string {
  const hostname = target.hostname;
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

/** The target's port, or its scheme's default (a URL leaves the default port out). */
export function upstreamPort(target: URL): number {
  if (target.port) return Number(target.port);
  return target.protocol === 'https:' ? 443 : 80;
}

/**
 * HTTPS backends (a share whose target is an `https://` URL, e.g. a Kubernetes Service behind TLS):
 * the certificate is verified against Node's CA store (plus NODE_EXTRA_CA_CERTS), with the
 * target's host name as SNI. node:https (and node:tls with it) is loaded on the first such request
 * only, so a frontend whose backends are all plain HTTP never carries it.
 */
class TlsTransport {
  private https: { readonly module: typeof Https; readonly agent: Https.Agent } | undefined;

  request(options: RequestOptions): ClientRequest {
    if (!this.https) {
      const module: typeof Https = process.getBuiltinModule('node:https');
      this.https = { module, agent: new module.Agent(POOL) };
    }
    return this.https.module.request({ ...options, agent: this.https.agent });
  }

  close(): void {
    this.https?.agent.destroy();
  }
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

/** The backend's headers less the hop-by-hop ones, its Host the target's. */
function requestHeaders(headers: BackendHeaders, host: string): BackendHeaders {
  const out: BackendHeaders = ['host', host];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name !== 'host' && !HOP_BY_HOP_REQUEST.has(name)) out.push(name, headers[i + 1] as string);
  }
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

/** A request's headers as the backend gets them: a flat `[name, value, …]` list, names lower-case, a repeated header once per value. */
export type BackendHeaders = string[];

/**
 * The request's headers for the backend, in one pass over them: identity look-alikes and the
 * frontend's own cookies removed, the forwarding headers rebuilt and the real identity headers
 * added. Runs for every share, OAuth or not: a backend behind svc must be able to trust
 * `svc-auth-*` headers, and it never sees svc's cookies. A flat list because Node's client takes
 * one as is, where an object costs a header map and a lower-cased copy of every name per request.
 */
export function backendHeaders(
  req: IncomingMessage,
  cookieName: string | undefined,
  session: Session | undefined,
  publicUrl: URL,
): BackendHeaders {
  const incoming = req.headers;
  const out: BackendHeaders = [];
  let forwardedFor: string | undefined;
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined) continue;
    // The share's public host and scheme are known here: a client's own X-Forwarded-Host/Proto/Port
    // would let it poison the absolute URLs a backend builds (password-reset links and the like).
    // X-Forwarded-For is appended to, as every proxy in a chain does. RFC 7239 `Forwarded` and
    // `X-Real-IP` carry the same claims, so they are rebuilt from the frontend's own view.
    if (FORWARDING_HEADERS.has(name)) {
      if (name === 'x-forwarded-for') forwardedFor = String(value);
      continue;
    }
    if (name === 'cookie' && cookieName !== undefined) {
      const kept = withoutOwnCookies(value, cookieName);
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    if (name === 'connection' && typeof value === 'string') {
      const kept = connectionWithoutIdentity(value);
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    if (isIdentityHeaderName(name) || isForwardingLookAlike(name)) continue;
    if (typeof value === 'string') out.push(name, value);
    else for (const each of value) out.push(name, each);
  }
  const peer = req.socket.remoteAddress ?? '';
  const host = incoming.host ?? publicUrl.host;
  const proto = publicUrl.protocol.slice(0, -1);
  out.push(
    'x-forwarded-for',
    forwardedFor ? `${forwardedFor}, ${peer}` : peer,
    'x-forwarded-host',
    host,
    'x-forwarded-proto',
    proto,
    'x-forwarded-port',
    publicUrl.port || (publicUrl.protocol === 'https:' ? '443' : '80'),
    'x-real-ip',
    peer,
    'forwarded',
    `for=${forwardedNode(peer)};host="${host}";proto=${proto}`,
  );
  if (session) {
    out.push(
      'svc-auth-provider',
      session.provider,
      'svc-auth-email',
      session.email,
      'svc-auth-expires',
      isoTime(session.expiresAt),
    );
  }
  return out;
}

/** For the paths that pass `req` itself on (WebSocket upgrades, tunnelled shares): its headers replaced by the backend's. */
export function applyBackendHeaders(req: IncomingMessage, headers: BackendHeaders): void {
  const target = req.headers;
  for (const name of Object.keys(target)) delete target[name];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    const earlier = target[name];
    target[name] = earlier === undefined ? value : [...(Array.isArray(earlier) ? earlier : [earlier]), value];
  }
}

function isForwardingLookAlike(name: string): boolean {
  return (name.includes('_') || name.includes('.')) && FORWARDING_HEADERS.has(name.replace(/[_.]/g, '-'));
}

/**
 * `new Date(ms).toISOString()` for svc-auth-expires, remembered for the last value: every request
 * of a session carries the same expiry, so this formats once per session rather than per request.
 */
let lastIsoMs = Number.NaN;
let lastIso = '';
function isoTime(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIso = new Date(ms).toISOString();
    lastIsoMs = ms;
  }
  return lastIso;
}

/** RFC 7239 §6 node name: IPv6 addresses are bracketed and quoted. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}
