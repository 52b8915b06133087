import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface RequestOptions {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Connect here instead of resolving the URL's host (`*.localhost` does not resolve in Node). */
  readonly connectTo?: string;
}

/**
 * One plain-HTTP request. The URL's host:port goes into the Host header, while the connection is
 * made to `connectTo` (default 127.0.0.1) at the URL's port: name-based routing on loopback.
 */
export function request(url: URL, options: RequestOptions = {}): Promise<Reply> {
  if (url.protocol !== 'http:') return Promise.reject(new Error(`only http:// is supported, got ${url.href}`));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: options.connectTo ?? '127.0.0.1',
        port: url.port || 80,
        path: `${url.pathname}${url.search}`,
        method: options.method ?? 'GET',
        headers: { host: url.host, ...options.headers },
        setHost: false,
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout: ${options.method ?? 'GET'} ${url.origin}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * A minimal cookie jar for scripted logins: cookies are kept per host name suffix (their Domain
 * attribute, else the exact host), paths and expiry dates are ignored, Max-Age=0 deletes.
 */
export class CookieJar {
  private readonly cookies = new Map<string, { domain: string; hostOnly: boolean; value: string }>();

  store(url: URL, reply: Reply): void {
    for (const line of reply.headers['set-cookie'] ?? []) {
      const [pair = '', ...attributes] = line.split(';').map((p) => p.trim());
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const attr = (key: string): string | undefined =>
        attributes
          .find((a) => a.toLowerCase().startsWith(`${key}=`))
          ?.slice(key.length + 1)
          .trim();
      const domainAttr = attr('domain')?.replace(/^\./, '').toLowerCase();
      const domain = domainAttr ?? url.hostname.toLowerCase();
      const key = `${domain}\u0000${name}`;
      if (attr('max-age') === '0' || value === '') this.cookies.delete(key);
      else this.cookies.set(key, { domain, hostOnly: domainAttr === undefined, value: `${name}=${value}` });
    }
  }

  /** The Cookie header value for a URL, or undefined when no cookie applies. */
  header(url: URL): string | undefined {
    const host = url.hostname.toLowerCase();
    const values = [...this.cookies.values()]
      .filter((c) => host === c.domain || (!c.hostOnly && host.endsWith(`.${c.domain}`)))
      .map((c) => c.value);
    return values.length > 0 ? values.join('; ') : undefined;
  }

  /** The value of one cookie (name=value pair stripped of the name) visible at a URL. */
  value(url: URL, name: string): string | undefined {
    const pair = this.header(url)
      ?.split('; ')
      .find((p) => p.startsWith(`${name}=`));
    return pair?.slice(name.length + 1);
  }
}

/**
 * A browser-like GET/POST with the jar: sends the URL's cookies, stores the reply's, and follows
 * redirects (303 and 302 become GET) up to `maxRedirects`. Returns the final reply and its URL.
 */
export async function browse(
  jar: CookieJar,
  start: URL,
  options: RequestOptions & { maxRedirects?: number } = {},
): Promise<{ url: URL; reply: Reply; hops: URL[] }> {
  let url = start;
  let current: RequestOptions = options;
  const hops: URL[] = [];
  for (let i = 0; i <= (options.maxRedirects ?? 10); i += 1) {
    const cookie = jar.header(url);
    const reply = await request(url, {
      ...current,
      headers: { ...current.headers, ...(cookie ? { cookie } : {}) },
    });
    jar.store(url, reply);
    hops.push(url);
    const location = reply.headers.location;
    if (reply.status < 300 || reply.status >= 400 || !location) return { url, reply, hops };
    url = new URL(location, url);
    current = {
      ...(options.connectTo ? { connectTo: options.connectTo } : {}),
      ...(reply.status === 307 || reply.status === 308
        ? { method: current.method ?? 'GET', body: current.body ?? '' }
        : {}),
    };
  }
  throw new Error(`more than ${options.maxRedirects ?? 10} redirects from ${start.origin}`);
}
