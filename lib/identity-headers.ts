import type { IncomingHttpHeaders } from 'node:http';

/** The identity headers only the OAuth frontend may set (seed: "Identity headers added to proxied requests"). */
/**
 * True for any header name a backend might read as an identity header: names are compared after
 * lower-casing and mapping `_` and `.` to `-`, because many servers (CGI, PHP, nginx with
 * underscores_in_headers, some frameworks) fold those together. `svc-auth-` itself is reserved
 * whole, so future identity headers are covered too.
 */
function isIdentityHeaderName(name: string): boolean {
  return name.toLowerCase().replace(/[_.]/g, '-').startsWith('svc-auth-');
}

/**
 * Removes every identity look-alike from incoming headers, and any header a client lists in
 * `Connection` (the hop-by-hop trick: `Connection: svc-auth-email` asks a proxy to drop the header
 * the frontend itself set). Mutates and returns the headers.
 */
export function stripIdentityHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  for (const name of Object.keys(headers)) {
    if (isIdentityHeaderName(name)) delete headers[name];
  }
  const connection = headers.connection;
  if (typeof connection === 'string') {
    const kept = connection
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t !== '' && !isIdentityHeaderName(t));
    if (kept.length > 0) headers.connection = kept.join(', ');
    else delete headers.connection;
  }
  return headers;
}
