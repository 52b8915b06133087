import type { IncomingMessage } from 'node:http';
import { SHARE_TOKEN, type ShareRoute } from '../lib/share/spec.ts';
import type { ShareSource } from '../lib/share/source.ts';

/**
 * `Host = uri-host [ ":" port ]` (RFC 9110 §7.2) restricted to what this frontend can serve: a DNS
 * name or IPv4 address, or a bracketed IPv6 literal. No user-info, no spaces, no percent-escapes:
 * `evil@share.example` would otherwise be read as `share.example` by a URL parser and as something
 * else by the next hop.
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::\d{1,5})?$/;

/**
 * The lower-cased host name a request is routed by, or undefined when the request must be refused
 * with 400: RFC 9112 §3.2 asks a server to answer 400 to a request with no Host, more than one
 * Host header, or an invalid Host value. The request target must be in origin-form (`/path`): this
 * frontend is not a forward proxy, and an absolute-form target would name a second authority that
 * disagrees with the Host it is routed by.
 */
export function hostnameOf(req: IncomingMessage): string | undefined {
  let host: string | undefined;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() !== 'host') continue;
    if (host !== undefined) return undefined;
    host = raw[i + 1];
  }
  return routableHostname(host, req.url ?? '');
}

/** `hostnameOf` for a request already known to have at most one Host header (the fast path's). */
export function routableHostname(host: string | undefined, url: string): string | undefined {
  if (host === undefined || !HOST.test(host) || !url.startsWith('/')) return undefined;
  const colon = host.lastIndexOf(':');
  const name = colon > host.lastIndexOf(']') ? host.slice(0, colon) : host;
  return name.toLowerCase();
}

/** What a share host names: the token, and the share when this frontend serves it. */
export interface ShareHost {
  readonly token: string;
  readonly share: ShareRoute | undefined;
}

/**
 * The share a request's host names, or undefined for any other host. A share host is
 * `<token>.<domain>` with a well-formed token; endpoint_url's own host is never a share, even when
 * it lies under the share domain.
 */
export function shareHostOf(req: IncomingMessage, routing: Routing): ShareHost | undefined {
  return shareHostNamed(hostnameOf(req), routing);
}

export interface Routing {
  readonly endpointHost: string;
  readonly domain: string;
  readonly shares: ShareSource;
}

/** `shareHostOf` for a host name already read from the request (`routableHostname`). */
export function shareHostNamed(host: string | undefined, routing: Routing): ShareHost | undefined {
  const { domain } = routing;
  if (!host || host === routing.endpointHost || !host.endsWith(`.${domain}`)) return undefined;
  const token = host.slice(0, -(domain.length + 1));
  if (!SHARE_TOKEN.test(token)) return undefined;
  return { token, share: routing.shares.lookup(token) };
}
