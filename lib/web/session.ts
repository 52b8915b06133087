import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** The header (or form field `_csrf`) that carries the CSRF token of a state-changing request. */
export const CSRF_HEADER = 'x-svc-csrf';

/**
 * CSRF tokens bound to a session: HMAC-SHA256 of the session id under a per-process key, so a
 * token is valid only with the cookie it was issued for and no state is kept. The token is put in
 * the page (`<meta name="csrf">`) and sent back in {@link CSRF_HEADER}; a page of another origin can
 * read neither.
 */
export class CsrfTokens {
  private readonly key: Buffer;

  constructor(key: Buffer = randomBytes(32)) {
    this.key = key;
  }

  token(session: string): string {
    return createHmac('sha256', this.key).update(session).digest('base64url');
  }

  /** Whether `presented` is the token of `session`, compared in constant time. */
  verify(session: string, presented: string | undefined): boolean {
    return presented !== undefined && sameText(this.token(session), presented);
  }
}

/**
 * The per-start secret of a local page (docs/security.md, "The agent's page"). The URL printed at
 * start carries it once (`/?key=<secret>`); that request sets an HttpOnly, SameSite=Strict session
 * cookie and redirects to the same path without the key, so the secret leaves the address bar and
 * history. Both change at every start. Anyone who can connect to the port but did not see the URL
 * (another local user, a page of another origin) holds neither.
 */
export class StartSecret {
  readonly secret = randomBytes(24).toString('base64url');
  private readonly session = randomBytes(24).toString('base64url');
  readonly csrf = new CsrfTokens();

  /** `cookieName`: distinct per listener (cookies ignore ports), e.g. `svc-ui-4040`. */
  readonly cookieName: string;

  constructor(cookieName: string) {
    this.cookieName = cookieName;
  }

  /** The path that admits a browser: `/?key=<secret>`. */
  entryPath(path = '/'): string {
    return `${path}?key=${this.secret}`;
  }

  /** For a request carrying the right `key` query parameter: the Set-Cookie value; otherwise undefined. */
  admit(url: URL): string | undefined {
    const key = url.searchParams.get('key');
    if (key === null || !sameText(key, this.secret)) return undefined;
    return `${this.cookieName}=${this.session}; Path=/; HttpOnly; SameSite=Strict`;
  }

  /** The session id when the request carries the session cookie, else undefined. */
  sessionOf(req: IncomingMessage): string | undefined {
    const value = cookieValue(req.headers.cookie, this.cookieName);
    return value !== undefined && sameText(value, this.session) ? value : undefined;
  }
}

/** The single value of cookie `name` in a Cookie header; undefined when absent or given twice. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  const values = header
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => pair.slice(0, pair.indexOf('=')).trim() === name)
    .map((pair) => pair.slice(pair.indexOf('=') + 1).trim());
  return values.length === 1 ? values[0] : undefined;
}

/** Constant-time comparison of two texts of any length. */
function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
