/**
 * What the frontend lets through of a share backend's `Set-Cookie` headers (docs/security.md,
 * "Cookies from a share's backend"). Every share lives at `<token>.<domain>` and the frontend's own
 * cookies are set for the whole domain, so a backend could otherwise write them (cookie tossing: a
 * sealed session of its owner's login, which the visitor would then carry to every share) or write
 * any cookie for every other share's backend to read. Two rules, applied on every path a response
 * takes to a visitor (the fast path, Node's path, WebSocket upgrades, the tunnel):
 * - a cookie whose name is the frontend's cookie name, or starts with it (the login cookie is
 *   `<name>-login`), is dropped, whatever the spelling a browser or a server would still read as
 *   that name: any letter case, whitespace, quotes, a `__Secure-`/`__Host-` prefix, a name-less
 *   cookie whose value is `<name>=…`, or a second cookie after a comma in the same header;
 * - a `Domain` attribute other than the share's own host is removed, which makes the cookie
 *   host-only: it reaches the share that set it and no other.
 */
export class BackendCookies {
  private readonly ownName: string | undefined;
  private readonly domain: string;
  private readonly shares = new Map<string, ShareCookies>();

  /** `ownName`: the frontend's cookie name (undefined without OAuth); `domain`: share hosts are `<token>.<domain>`. */
  constructor(ownName: string | undefined, domain: string) {
    this.ownName = ownName?.toLowerCase();
    this.domain = domain.toLowerCase();
  }

  /** The rule for one share's responses (kept per token: the fast path asks for every request). */
  forShare(token: string): ShareCookies {
    let rule = this.shares.get(token);
    if (!rule) {
      rule = new ShareCookies(this.ownName, `${token.toLowerCase()}.${this.domain}`);
      this.shares.set(token, rule);
    }
    return rule;
  }
}

/** The `Set-Cookie` rule for the responses of the share at `host`. */
export class ShareCookies {
  private readonly ownName: string | undefined;
  readonly host: string;

  constructor(ownName: string | undefined, host: string) {
    this.ownName = ownName;
    this.host = host;
  }

  /** A `Set-Cookie` value as it may reach the visitor, or undefined when it must be dropped. */
  filter(value: string): string | undefined {
    const lower = value.toLowerCase();
    if (this.ownName !== undefined && lower.includes(this.ownName) && namesOwnCookie(lower, this.ownName))
      return undefined;
    return lower.includes('domain') ? withoutForeignDomain(value, this.host) : value;
  }
}

/** Cookie name prefixes with a meaning to browsers (RFC 6265bis §4.1.3), which they match in any case. */
const NAME_PREFIXES = ['__secure-', '__host-'];

/**
 * Whether a lower-cased `Set-Cookie` value sets a cookie whose name, as any reader could take it,
 * starts with `own`. Candidates are the start of the value and every place after a comma (a reader
 * that splits a combined header there); before the name, whitespace, quotes and `=` are skipped (a
 * name-less cookie `=svc-auth-session=x` is sent back by browsers as `svc-auth-session=x`).
 */
function namesOwnCookie(lower: string, own: string): boolean {
  let start = 0;
  while (start !== -1) {
    let at = skipPadding(lower, start);
    for (const prefix of NAME_PREFIXES) {
      if (lower.startsWith(prefix, at)) at = skipPadding(lower, at + prefix.length);
    }
    if (lower.startsWith(own, at)) return true;
    const comma = lower.indexOf(',', start);
    start = comma === -1 ? -1 : comma + 1;
  }
  return false;
}

function skipPadding(text: string, from: number): number {
  let at = from;
  for (;;) {
    const c = text.charCodeAt(at);
    if (c !== 0x20 && c !== 0x09 && c !== 0x3d && c !== 0x22) return at; // space, tab, '=', '"'
    at += 1;
  }
}

/**
 * The value without the `Domain` attributes that name anything but `host` (RFC 6265 §5.2.3: a
 * leading dot is ignored, the last Domain attribute wins, and an empty one means host-only).
 * Attributes start after the first `;`; the name-value pair itself is never read as one.
 */
function withoutForeignDomain(value: string, host: string): string {
  const parts = value.split(';');
  let dropped = false;
  const kept = [parts[0] as string];
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i] as string;
    const eq = part.indexOf('=');
    const name = (eq === -1 ? part : part.slice(0, eq)).trim().toLowerCase();
    if (name === 'domain') {
      const domain = part
        .slice(eq + 1)
        .trim()
        .toLowerCase();
      if (eq === -1 || (domain.startsWith('.') ? domain.slice(1) : domain) !== host) {
        dropped = true;
        continue;
      }
    }
    kept.push(part);
  }
  return dropped ? kept.join(';') : value;
}
