import type { IncomingMessage } from 'node:http';
import { createBackendPipe, pushHeader, type BackendHeaders, type BackendPipe } from '../lib/http-pipe.ts';
import { connectionListed, forwardedConnection } from '../lib/hop-by-hop.ts';
import { isIdentityHeaderName } from '../lib/identity-headers.ts';
import { withoutOwnCookies } from './cookies.ts';
import type { FrontendMetrics } from './metrics.ts';
import type { Session } from './session.ts';

/**
 * The hot path: the incoming headers prepared for the share backend (identity look-alikes and the
 * frontend's own cookies removed, forwarding headers rebuilt, the real identity headers added),
 * then streamed to it through the backend pipe (lib/http-pipe.ts).
 */
export function createShareProxy(metrics: FrontendMetrics, backendTimeoutMs: number): BackendPipe {
  return createBackendPipe({
    backendTimeoutMs,
    observeUpstream: (seconds) => metrics.upstreamSeconds.observe(seconds),
  });
}

/** What `backendHeaders` reads of a request: Node's, or the fast path's (sidecar/fast-path/). */
export interface ProxiedRequest {
  readonly headers: IncomingMessage['headers'];
  readonly socket: { readonly remoteAddress?: string | undefined };
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
 * The request's headers for the backend, in one pass over them: identity look-alikes, the
 * frontend's own cookies and the headers the visitor's Connection names (lib/hop-by-hop.ts)
 * removed, the forwarding headers rebuilt and the real identity headers added. Runs for every
 * share, OAuth or not: a backend behind svc must be able to trust `svc-auth-*` headers, and it
 * never sees svc's cookies. A flat list because Node's client takes one as is, where an object
 * costs a header map and a lower-cased copy of every name per request.
 */
export function backendHeaders(
  req: ProxiedRequest,
  cookieName: string | undefined,
  session: Session | undefined,
  publicUrl: URL,
): BackendHeaders {
  const incoming = req.headers;
  const out: BackendHeaders = [];
  let forwardedFor: string | undefined;
  const listed = connectionListed(incoming.connection);
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || (listed.length > 0 && listed.includes(name))) continue;
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
      // Only the connection options go on (an upgrade's `Upgrade`): a name left in it would let the
      // next hop drop a header the frontend sets (`Connection: svc-auth-email`, `x-forwarded-for`).
      const kept = forwardedConnection(value);
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    if (isIdentityHeaderName(name) || isForwardingLookAlike(name)) continue;
    pushHeader(out, name, value);
  }
  const peer = req.socket.remoteAddress ?? '';
  const origin = publicOrigin(publicUrl);
  const host = incoming.host ?? origin.host;
  out.push(
    'x-forwarded-for',
    forwardedFor ? `${forwardedFor}, ${peer}` : peer,
    'x-forwarded-host',
    host,
    'x-forwarded-proto',
    origin.proto,
    'x-forwarded-port',
    origin.port,
    'x-real-ip',
    peer,
    'forwarded',
    forwarded(peer, host, origin.proto),
  );
  if (session) {
    out.push(
      'svc-auth-provider',
      session.provider,
      'svc-auth-email',
      emailHeader(session.email),
      'svc-auth-expires',
      isoTime(session.expiresAt),
    );
  }
  return out;
}

/**
 * The address as svc-auth-email's bytes: as given when it is ASCII, else its UTF-8 bytes (a string
 * of one Latin-1 character per byte, which is how Node writes a header string). The provider's
 * address may hold any Unicode letter (an IDN domain, a local part in another script): Node refuses
 * a header character past U+00FF (a throw that would end the frontend), and a raw Latin-1 write
 * keeps only each character's low byte (`š`, U+0161, would reach the backend as `a`).
 */
let lastEmail = '';
let lastEmailHeader = '';
export function emailHeader(email: string): string {
  if (email !== lastEmail) {
    lastEmailHeader = /^[\x20-\x7e]*$/.test(email) ? email : Buffer.from(email, 'utf8').toString('latin1');
    lastEmail = email;
  }
  return lastEmailHeader;
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

/** What the forwarding headers say of the public URL, read once: a URL's getters build new strings on every call. */
const PUBLIC_ORIGINS = new WeakMap<URL, { readonly host: string; readonly proto: string; readonly port: string }>();
function publicOrigin(url: URL): { readonly host: string; readonly proto: string; readonly port: string } {
  let origin = PUBLIC_ORIGINS.get(url);
  if (!origin) {
    const proto = url.protocol.slice(0, -1);
    origin = { host: url.host, proto, port: url.port || (proto === 'https' ? '443' : '80') };
    PUBLIC_ORIGINS.set(url, origin);
  }
  return origin;
}

/**
 * The RFC 7239 `Forwarded` value, remembered for the last peer and host: a keep-alive connection's
 * requests all carry the same one, so it is built once per connection rather than per request.
 */
let lastForwarded:
  { readonly peer: string; readonly host: string; readonly proto: string; readonly value: string } | undefined;
function forwarded(peer: string, host: string, proto: string): string {
  const last = lastForwarded;
  if (last && last.peer === peer && last.host === host && last.proto === proto) return last.value;
  const value = `for=${forwardedNode(peer)};host="${host}";proto=${proto}`;
  lastForwarded = { peer, host, proto, value };
  return value;
}

/** RFC 7239 §6 node name: IPv6 addresses are bracketed and quoted. */
function forwardedNode(address: string): string {
  return address.includes(':') ? `"[${address}]"` : address;
}
