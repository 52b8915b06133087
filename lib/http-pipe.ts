import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, RequestOptions, ServerResponse } from 'node:http';
import type * as Https from 'node:https';
import type { Duplex } from 'node:stream';
import type { ShareCookies } from './backend-cookies.ts';
import { BackendIdleWatch } from './backend-idle.ts';
import type { ExchangeRecorder, ExchangeObserver } from './exchange-observer.ts';
import { INVALID_HEADER_VALUE } from './fast-upstream/head-text.ts';
import { MAX_RESPONSE_HEAD_BYTES } from './http-limits.ts';
import { connectionListed, HOP_BY_HOP, withoutListed } from './hop-by-hop.ts';
import { Agent, request } from './node-http.ts';
import { pipeUpgrade } from './upgrade-pipe.ts';

/**
 * The request pipe to a share backend, shared by the OAuth frontend and the agent's proxy backend:
 * the request streamed on over keep-alive connections (a pool per scheme, TLS verified for
 * `https://` targets), hop-by-hop headers dropped both ways, the backend timeout kept by one sweep
 * (backend-idle.ts). HTTP requests go through a bare `http.request` pipe (measured faster and
 * lighter than http-proxy-3, docs/benchmarks-history.md "Proxy path"); WebSocket upgrades get a connection of their
 * own (upgrade-pipe.ts). Callers prepare the headers (`BackendHeaders`).
 */
export interface BackendPipe {
  /**
   * `setCookie` (a refreshed session) is added to the backend's response without replacing the
   * backend's own; `cookies` decides which of the backend's own Set-Cookie headers pass (the frontend's).
   * `recorder` (the agent's request inspector) is shown the exchange as it passes.
   */
  web(
    req: IncomingMessage,
    res: ServerResponse,
    target: URL,
    headers: BackendHeaders,
    onError: (err: Error) => void,
    setCookie?: string,
    cookies?: ShareCookies,
    recorder?: ExchangeRecorder,
  ): void;
  /** `headers` as for `web`; Connection and Upgrade are kept, as the backend must see them. */
  ws(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: URL,
    headers: BackendHeaders,
    cookies?: ShareCookies,
  ): void;
  close(): void;
}

/** A request's headers as the backend gets them: a flat `[name, value, …]` list, names lower-case, a repeated header once per value. */
export type BackendHeaders = string[];

/** Appends an incoming header to a list, a repeated one (Node gives an array) once per value. */
export function pushHeader(out: BackendHeaders, name: string, value: string | string[]): void {
  if (typeof value === 'string') out.push(name, value);
  else for (const each of value) out.push(name, each);
}

/**
 * Hop-by-hop headers (lib/hop-by-hop.ts) belong to one connection and are not forwarded either way.
 * Transfer-Encoding is the exception on requests: Node's client needs it to frame a chunked body
 * it pipes on (its parser already checked it); on responses Node frames the body itself. The
 * headers a request's Connection names are left out where its headers are prepared (sidecar/proxy.ts).
 */
const HOP_BY_HOP_REQUEST = new Set([...HOP_BY_HOP].filter((name) => name !== 'transfer-encoding'));
const HOP_BY_HOP_RESPONSE = HOP_BY_HOP;

/** Keep-alive connections to the share backends, one pool per scheme. */
const POOL = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64 };

export interface BackendPipeOptions {
  /** A backend silent this long is cut off (BackendTimeout, backend-idle.ts). */
  readonly backendTimeoutMs: number;
  /** Told the time from sending a request to the backend's response head, in seconds. */
  readonly observeUpstream?: (seconds: number) => void;
}

export function createBackendPipe(options: BackendPipeOptions): BackendPipe {
  const { backendTimeoutMs, observeUpstream } = options;
  const agent = new Agent(POOL);
  const tls = new TlsTransport();
  const idle = new BackendIdleWatch(backendTimeoutMs);
  return {
    web(req, res, target, headers, onError, setCookie, cookies, recorder) {
      const t0 = process.hrtime.bigint();
      const backendHeaders = webRequestHeaders(headers, target.host);
      const observer = recorder?.(req.method ?? 'GET', req.url ?? '/', backendHeaders);
      const sent: RequestOptions = {
        agent,
        host: upstreamHost(target),
        port: upstreamPort(target),
        method: req.method,
        path: joinPath(target.pathname, req.url ?? '/'),
        headers: backendHeaders,
        maxHeaderSize: MAX_RESPONSE_HEAD_BYTES,
      };
      const upstream = target.protocol === 'https:' ? tls.request(sent) : request(sent);
      const watched = idle.add(upstream);
      // `on`, not `once`: each of these objects lives for one request, and `once` costs a wrapper
      // and a listener removal per event on the hot path.
      upstream.on('error', (err) => {
        if (res.headersSent) res.destroy();
        else onError(err);
      });
      // A 101 to a request that asked for no upgrade (Node's client only tells of it through
      // 'upgrade', and without a listener leaves the request hanging; the request has no socket
      // then, so it emits no error): refused, as the fast path does.
      upstream.on('upgrade', (_upgraded, socket: Duplex) => {
        socket.destroy();
        upstream.destroy();
        onError(new BackendResponseRefused('a 101 response to a request that asked for no upgrade'));
      });
      upstream.on('response', (upstreamRes) => {
        observeUpstream?.(Number(process.hrtime.bigint() - t0) / 1e9);
        const refused = unrelayableHead(upstreamRes);
        if (refused !== undefined) {
          upstream.destroy();
          onError(new BackendResponseRefused(refused));
          return;
        }
        if (observer) observeResponse(observer, upstreamRes);
        relayResponse(upstreamRes, res, setCookie, cookies);
      });
      // The visitor went away (or its request failed): stop the backend's work as well.
      res.on('close', () => {
        idle.done(watched);
        if (!res.writableFinished) upstream.destroy();
        observer?.end();
      });
      sendRequestBody(req, upstream, observer);
    },
    ws(req, socket, head, target, headers, cookies) {
      pipeUpgrade(req, socket, head, {
        host: upstreamHost(target),
        port: upstreamPort(target),
        path: joinPath(target.pathname, req.url ?? '/'),
        secure: target.protocol === 'https:',
        headers: requestHeaders(headers, target.host, NONE),
        timeoutMs: backendTimeoutMs,
        ...(cookies ? { cookies } : {}),
      });
    },
    close() {
      idle.close();
      agent.destroy();
      tls.close();
    },
  };
}

/**
 * Why Node's server would refuse to write the backend's status line (`writeHead` throws on a status
 * outside 100–999 and on a reason phrase with control characters, both of which Node's client
 * parses), or undefined when it writes it. A share's backend is not trusted: a throw there, inside
 * an event handler, would end the whole process with every other share in it.
 */
export function unrelayableHead(upstreamRes: IncomingMessage): string | undefined {
  const status = upstreamRes.statusCode ?? 0;
  if (status < 100 || status > 999) return `status ${status} is not an HTTP status`;
  if (INVALID_HEADER_VALUE.test(upstreamRes.statusMessage ?? '')) return 'a control character in the reason phrase';
  return undefined;
}

/** The backend's response head (hop-by-hop headers dropped, cookies added or filtered) and body, on to the visitor. */
function relayResponse(
  upstreamRes: IncomingMessage,
  res: ServerResponse,
  setCookie: string | undefined,
  cookies: ShareCookies | undefined,
): void {
  res.writeHead(
    upstreamRes.statusCode ?? 502,
    upstreamRes.statusMessage ?? '',
    responseHeaders(upstreamRes.rawHeaders, setCookie, cookies),
  );
  // A backend that hangs up mid-body: cut the visitor's response too, so the browser sees a
  // failed download rather than waiting for the rest of a Content-Length that never comes
  // (and never a truncated "complete" one).
  upstreamRes.on('close', () => {
    if (!upstreamRes.complete) res.destroy();
  });
  upstreamRes.pipe(res);
}

/** The visitor's request body on to the backend (what was read ahead, or the stream), then the request's end. */
function sendRequestBody(req: IncomingMessage, upstream: ClientRequest, observer: ExchangeObserver | undefined): void {
  const readAhead = READ_AHEAD.get(req);
  if (readAhead) {
    observer?.requestBody(readAhead);
    upstream.end(readAhead);
  } else if (hasBody(req)) {
    if (observer) req.on('data', (chunk: Buffer) => observer.requestBody(chunk));
    // A request that fails mid-body (without a body, the visitor's leaving closes `res` in `web`).
    req.on('error', () => upstream.destroy());
    req.pipe(upstream);
  } else upstream.end();
}

/** Shows a recorded exchange its response head and body as they are piped on. */
function observeResponse(observer: ExchangeObserver, upstreamRes: IncomingMessage): void {
  observer.response(upstreamRes.statusCode ?? 0, upstreamRes.rawHeaders);
  upstreamRes.on('data', (chunk: Buffer) => observer.responseBody(chunk));
}

/**
 * A backend response the frontend does not pass on (answered 502 "Bad gateway"): a 101 to a
 * request that asked for no upgrade, or a status line Node's server refuses to write.
 */
export class BackendResponseRefused extends Error {
  constructor(message: string) {
    super(`backend response refused: ${message}`);
    this.name = 'BackendResponseRefused';
  }
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

/** A request with a body to pass on (Node's parser has settled Content-Length against Transfer-Encoding). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/** Bodies read whole before the request was passed on (`sendReadAhead`), sent in one piece. */
const READ_AHEAD = new WeakMap<IncomingMessage, Buffer>();

/** `body`, read whole from `req` already, is what `web` sends the backend instead of piping `req`. */
export function sendReadAhead(req: IncomingMessage, body: Buffer): void {
  READ_AHEAD.set(req, body);
}

/** Nothing dropped: an upgrade's Connection and Upgrade headers are what it asks the backend for. */
const NONE: ReadonlySet<string> = new Set();

/** Whether a request header belongs to one connection and is not forwarded (the fast path writes its heads itself). */
export function isHopByHopRequestHeader(name: string): boolean {
  return HOP_BY_HOP_REQUEST.has(name);
}

/**
 * The headers a request is sent to the backend with (`web`, and the fast path's recording): Host
 * the target's, the hop-by-hop ones left out.
 */
export function webRequestHeaders(headers: BackendHeaders, host: string): BackendHeaders {
  return requestHeaders(headers, host, HOP_BY_HOP_REQUEST);
}

/** The backend's headers less the `dropped` ones (hop-by-hop for a request), its Host the target's. */
function requestHeaders(headers: BackendHeaders, host: string, dropped: ReadonlySet<string>): BackendHeaders {
  const out: BackendHeaders = ['host', host];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (name !== 'host' && !dropped.has(name)) out.push(name, headers[i + 1] as string);
  }
  return out;
}

/**
 * The backend's headers as a flat [name, value, …] list (its spelling kept): hop-by-hop ones and
 * those its Connection names left out, its Set-Cookie headers through `cookies` (Set-Cookie2, which
 * no browser reads, never passes).
 */
function responseHeaders(raw: readonly string[], setCookie: string | undefined, cookies?: ShareCookies): string[] {
  const out: string[] = [];
  let listed: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    const lower = name.toLowerCase();
    const value = raw[i + 1] as string;
    if (HOP_BY_HOP_RESPONSE.has(lower)) {
      if (lower === 'connection') {
        const named = connectionListed(value);
        if (named.length > 0) (listed ??= []).push(...named);
      }
      continue;
    }
    if (lower.charCodeAt(0) === 0x73 && (lower === 'set-cookie' || lower === 'set-cookie2')) {
      if (lower === 'set-cookie2') continue;
      const kept = cookies ? cookies.filter(value) : value;
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    out.push(name, value);
  }
  if (listed) withoutListed(out, listed);
  if (setCookie) out.push('set-cookie', setCookie);
  return out;
}

/** The target's own path prefix (a share may point at `http://host/app/`) joined with the request's. */
export function joinPath(prefix: string, path: string): string {
  if (prefix === '/' || prefix === '') return path;
  return `${prefix.replace(/\/$/, '')}/${path.replace(/^\//, '')}`;
}

/** For the paths that pass `req` itself on (WebSocket upgrades, tunnelled shares): its headers replaced by the backend's. */
export function applyBackendHeaders(req: IncomingMessage, headers: BackendHeaders): void {
  const target = req.headers;
  for (const name of Object.keys(target)) delete target[name];
  addBackendHeaders(target, headers);
}

/** `headers` added to `target` (and returned), a name given more than once as the list of its values. */
export function addBackendHeaders(target: IncomingHttpHeaders, headers: BackendHeaders): IncomingHttpHeaders {
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    const value = headers[i + 1] as string;
    const earlier = target[name];
    target[name] = earlier === undefined ? value : [...(Array.isArray(earlier) ? earlier : [earlier]), value];
  }
  return target;
}
