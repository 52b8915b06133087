import type { IncomingMessage } from 'node:http';
import { SHARE_TOKEN, type ShareRoute } from '../lib/share/spec.ts';
import type { ShareSource } from '../lib/share/source.ts';

/** Lower-cased host name of the request without port, or undefined when missing or malformed. */
export function hostnameOf(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (!host || host.length > 300) return undefined;
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return undefined;
  }
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
export function shareHostOf(
  req: IncomingMessage,
  routing: { readonly endpointHost: string; readonly domain: string; readonly shares: ShareSource },
): ShareHost | undefined {
  const host = hostnameOf(req);
  const { domain } = routing;
  if (!host || host === routing.endpointHost || !host.endsWith(`.${domain}`)) return undefined;
  const token = host.slice(0, -(domain.length + 1));
  if (!SHARE_TOKEN.test(token)) return undefined;
  return { token, share: routing.shares.lookup(token) };
}
