import { SHARE_TOKEN } from '../lib/share/spec.ts';
import type { ShareSource } from '../lib/share/source.ts';

/**
 * Decides where the frontend may send a browser after logout: only to `endpoint_url`'s own host or
 * to a share host this frontend serves, on endpoint_url's scheme and port. The input is resolved
 * the way a browser would (WHATWG URL, relative to endpoint_url), so `//evil`, `/\evil`, `%09`
 * tricks and user-info confusion are judged by where they really lead. Returns the absolute URL to
 * emit, or undefined when the target is not allowed.
 */
export function allowedRedirect(input: string, endpointUrl: URL, domain: string, shares: ShareSource): URL | undefined {
  if (input.length === 0 || input.length > 2048) return undefined;
  // Control characters and whitespace are never part of a legitimate target; browsers strip some of
  // them silently, which is how several open-redirect payloads smuggle a second URL.
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u0020\u007f-\u009f\\]/u.test(input)) return undefined;
  let url: URL;
  try {
    url = new URL(input, endpointUrl);
  } catch {
    return undefined;
  }
  if (url.protocol !== endpointUrl.protocol || url.port !== endpointUrl.port) return undefined;
  if (url.username || url.password) return undefined;
  if (url.hostname === endpointUrl.hostname) return url;
  return shareTokenOfHost(url.hostname, domain, shares) ? url : undefined;
}

/** The share token when `hostname` is `<token>.<domain>` for a share this frontend serves. */
function shareTokenOfHost(hostname: string, domain: string, shares: ShareSource): string | undefined {
  const suffix = `.${domain}`;
  if (!hostname.endsWith(suffix)) return undefined;
  const label = hostname.slice(0, -suffix.length);
  return SHARE_TOKEN.test(label) && shares.has(label) ? label : undefined;
}

/**
 * The absolute URL of a path on a share host, on endpoint_url's scheme and port. The path is set
 * as a path, never resolved as a URL reference, so `//evil`, `/\\evil` or `https:evil` can only
 * ever name a path on the share host.
 */
export function shareUrl(token: string, domain: string, endpointUrl: URL, path = '/'): URL {
  const url = new URL(endpointUrl.origin);
  url.hostname = `${token}.${domain}`;
  const hash = path.indexOf('#');
  const withoutHash = hash === -1 ? path : path.slice(0, hash);
  const query = withoutHash.indexOf('?');
  const pathname = query === -1 ? withoutHash : withoutHash.slice(0, query);
  url.pathname = pathname.startsWith('/') ? pathname : '/';
  url.search = query === -1 ? '' : withoutHash.slice(query);
  return url;
}
