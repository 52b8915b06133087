import type { IncomingHttpHeaders } from 'node:http';

/** The identity headers only the OAuth frontend may set (seed: "Identity headers added to proxied requests"). */
/**
 * True for any header name a backend might read as an identity header: names are compared after
 * lower-casing and mapping `_` and `.` to `-`, because many servers (CGI, PHP, nginx with
 * underscores_in_headers, some frameworks) fold those together. `svc-auth-` itself is reserved
 * whole, so future identity headers are covered too.
 */
export function isIdentityHeaderName(name: string): boolean {
  // Most names are rejected by their first letter: this runs for every header of every request.
  if (name.length < 9) return false;
  const first = name.charCodeAt(0);
  if (first !== 0x73 && first !== 0x53) return false;
  return name.toLowerCase().replace(/[_.]/g, '-').startsWith('svc-auth-');
}

/** A `Connection` value without the identity header names it lists; undefined when nothing is left. */
export function connectionWithoutIdentity(connection: string): string | undefined {
  if (connection === 'keep-alive' || connection === 'close') return connection;
  const kept = connection
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '' && !isIdentityHeaderName(t));
  return kept.length > 0 ? kept.join(', ') : undefined;
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
    const kept = connectionWithoutIdentity(connection);
    if (kept !== undefined) headers.connection = kept;
    else delete headers.connection;
  }
  return headers;
}
