import { Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import { stripIdentityHeaders } from '../lib/identity-headers.ts';
import { withoutOwnCookies } from './cookies.ts';
import type { FrontendMetrics } from './metrics.ts';
import type { Session } from './session.ts';

/**
 * The hot path: prepares the incoming headers (identity look-alikes and the frontend's own cookies
 * removed, the real identity headers added) and streams the request to the share backend over
 * keep-alive connections. http-proxy-3 is used instead of http-proxy 1.x: same API, maintained,
 * no deprecated Node APIs (see docs/design.md).
 */
export interface ShareProxy {
  web(req: IncomingMessage, res: ServerResponse, target: URL, onError: (err: Error) => void): void;
  /** Adds a Set-Cookie (a refreshed session) to the backend's response without replacing the backend's own. */
  addSetCookie(req: IncomingMessage, cookie: string): void;
  ws(req: IncomingMessage, socket: Duplex, head: Buffer, target: URL): void;
  close(): void;
}

/** The backend stayed silent longer than the frontend's backend timeout (answered 504, not 502). */
export class BackendTimeout extends Error {
  constructor(ms: number) {
    super(`no answer from the backend within ${ms} ms`);
    this.name = 'BackendTimeout';
  }
}

export function createShareProxy(metrics: FrontendMetrics, backendTimeoutMs: number): ShareProxy {
  const agent = new Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64 });
  // X-Forwarded-* are set by prepareBackendHeaders, not by the proxy library (see there).
  const proxy = createProxyServer({ xfwd: false, changeOrigin: true, agent });
  // The library's own proxyTimeout fails with a bare "socket hang up", indistinguishable from a
  // backend that closed on us; a typed error lets the frontend answer 504 for silence.
  proxy.on('proxyReq', (proxyReq) => {
    proxyReq.setTimeout(backendTimeoutMs, () => proxyReq.destroy(new BackendTimeout(backendTimeoutMs)));
  });
  const started = new WeakMap<IncomingMessage, bigint>();
  const extraCookies = new WeakMap<IncomingMessage, string>();
  proxy.on('proxyRes', (proxyRes, req, res) => {
    const extra = extraCookies.get(req);
    if (extra) proxyRes.headers['set-cookie'] = [...(proxyRes.headers['set-cookie'] ?? []), extra];
    const t0 = started.get(req);
    if (t0 !== undefined) metrics.upstreamSeconds.observe(Number(process.hrtime.bigint() - t0) / 1e9);
    // A backend that hangs up mid-body: the library only stops piping, and the visitor would wait
    // for the rest of a Content-Length that never comes. Cut the visitor's response too, so the
    // browser sees a failed download rather than a hang (and never a truncated "complete" one).
    proxyRes.once('close', () => {
      if (!proxyRes.complete) res.destroy();
    });
  });
  proxy.on('error', () => {
    // Errors are handled per request through the callbacks below; this listener keeps an
    // unexpected one from crashing the process.
  });
  return {
    web(req, res, target, onError) {
      started.set(req, process.hrtime.bigint());
      proxy.web(req, res, { target: target.href }, (err) => onError(err));
    },
    addSetCookie(req, cookie) {
      extraCookies.set(req, cookie);
    },
    ws(req, socket, head, target) {
      proxy.ws(req, socket, head, { target: target.href }, () => socket.destroy());
    },
    close() {
      proxy.close();
      agent.destroy();
    },
  };
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
    if (FORWARDING_HEADERS.has(name.replace(/[_.]/g, '-')) && /[_.]/.test(name)) delete req.headers[name];
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
