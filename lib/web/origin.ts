import type { IncomingMessage } from 'node:http';

/**
 * Host and Origin checks of the web pages (docs/security.md, "Web pages"). A page on a loopback
 * port is reachable from any web site the user visits through DNS rebinding: `evil.example`
 * re-resolves to 127.0.0.1 and the browser then sends `Host: evil.example:4040`, so every request
 * whose Host is not one of the page's own names is refused. State-changing requests must also name
 * the page's own origin in `Origin` (browsers always send it on POST), which a page of another
 * origin — another port on the same machine included — cannot forge.
 */
export class OriginCheck {
  private readonly hosts: ReadonlySet<string>;
  private readonly origins: ReadonlySet<string>;

  /** `hosts`: the `host:port` names the pages answer to (compared lowercase); `scheme`: how they are reached. */
  constructor(hosts: readonly string[], scheme: 'http' | 'https' = 'http') {
    this.hosts = new Set(hosts.map((h) => h.toLowerCase()));
    this.origins = new Set([...this.hosts].map((h) => `${scheme}://${h}`));
  }

  /** Why the request's Host is refused, or undefined when it is one of the page's names. */
  refuseHost(req: IncomingMessage): string | undefined {
    const host = req.headers.host?.toLowerCase();
    if (host === undefined) return 'the request has no Host header';
    return this.hosts.has(host) ? undefined : `Host ${JSON.stringify(host)} is not this page's address`;
  }

  /**
   * Why a state-changing request is refused: a Host refusal, a missing or foreign `Origin`, or a
   * `Sec-Fetch-Site` other than same-origin (a sibling port is same-site but not same-origin).
   */
  refuseWrite(req: IncomingMessage): string | undefined {
    const host = this.refuseHost(req);
    if (host) return host;
    const origin = req.headers.origin?.toLowerCase();
    if (origin === undefined) return 'a state-changing request must carry Origin';
    if (!this.origins.has(origin)) return `Origin ${JSON.stringify(origin)} is not this page's origin`;
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') return `Sec-Fetch-Site ${site} is not same-origin`;
    return undefined;
  }
}

/** The names a loopback listener on `port` answers to: `127.0.0.1`, `localhost` and `[::1]`. */
export function loopbackHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
}
