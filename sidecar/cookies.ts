/** Cookie parsing and serialisation for the frontend's own cookies (RFC 6265). */

export interface CookieOptions {
  /** The cookie domain; none makes a host-only cookie (the endpoint host's login cookie). */
  readonly domain?: string;
  readonly secure: boolean;
  /** Seconds; 0 expires the cookie now. */
  readonly maxAgeSeconds: number;
}

/** Browsers drop cookies over 4096 bytes (name + value + attributes); stay well below. */
export const MAX_COOKIE_BYTES = 4000;

/**
 * The value of the cookie named `name`, found without splitting the whole header (this runs per
 * request); undefined when there is none, or more than one. The frontend sets each of its cookies
 * once (one Domain, `Path=/`), so a second cookie of the same name was written by someone else:
 * script on a share's page can write `<name>=…; domain=<cookie domain>; path=/some/path`, which the
 * browser then sends before the frontend's own on that path (longer paths first). Neither copy is
 * trusted then: taking the first would let a share's page choose the visitor's session elsewhere.
 */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  let start = 0;
  while (start < header.length) {
    let end = header.indexOf(';', start);
    if (end === -1) end = header.length;
    const eq = header.indexOf('=', start);
    if (eq > start && eq < end && header.slice(start, eq).trim() === name) {
      if (found !== undefined) return undefined;
      found = header.slice(eq + 1, end).trim();
      // The common header names the cookie once: nothing further to read.
      if (header.indexOf(name, end) === -1) return found;
    }
    start = end + 1;
  }
  return found;
}

/** HttpOnly and SameSite=Lax always; Secure whenever the public endpoint is https. */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${value}`, 'Path=/'];
  if (options.domain !== undefined) parts.push(`Domain=${options.domain}`);
  parts.push(`Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`);
  if (options.maxAgeSeconds <= 0) parts.push('Expires=Thu, 01 Jan 1970 00:00:00 GMT');
  parts.push('HttpOnly', 'SameSite=Lax');
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

/**
 * Removes the frontend's own cookies (session, login, binding: any name starting with the configured
 * cookie name, also behind a `__Host-`/`__Secure-` prefix) from a Cookie header before it reaches a backend. Returns undefined when nothing is left.
 */
export function withoutOwnCookies(header: string | string[] | undefined, cookieName: string): string | undefined {
  if (header === undefined) return undefined;
  const joined = Array.isArray(header) ? header.join('; ') : header;
  // The common header of one cookie (often the session's alone), kept or dropped without the copies below.
  if (!joined.includes(';')) {
    const only = joined.trim();
    return only === '' || isOwnCookie(only, cookieName) ? undefined : only;
  }
  const kept = joined
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '' && !isOwnCookie(p, cookieName));
  return kept.length > 0 ? kept.join('; ') : undefined;
}

/** Whether a `name=value` pair (trimmed) is one of the frontend's own cookies, with or without a prefix. */
function isOwnCookie(pair: string, cookieName: string): boolean {
  const eq = pair.indexOf('=');
  const name = (eq === -1 ? pair : pair.slice(0, eq)).trim();
  return name.startsWith(cookieName) || (PREFIXED.test(name) && name.replace(PREFIXED, '').startsWith(cookieName));
}

const PREFIXED = /^__(?:host|secure)-/i;

/**
 * The session cookie's name: `__Host-<cookie_name>` when the endpoint is https, so that browsers
 * take it only host-only, Secure and for `Path=/` from the share host itself (no other share can
 * plant it, from a response or from script); `<cookie_name>`, host-only too, on plain HTTP, where
 * the prefix cannot be used (docs/security.md: development only).
 */
export function sessionCookieName(cookieName: string, secure: boolean): string {
  return secure ? `__Host-${cookieName}` : cookieName;
}

/**
 * The binding cookie's name (`__Host-<cookie_name>-bind` under https): the share host sets it when
 * it starts a login and accepts the login's hand-over only from the browser that holds it.
 */
export function bindCookieName(cookieName: string, secure: boolean): string {
  return `${sessionCookieName(cookieName, secure)}-bind`;
}
