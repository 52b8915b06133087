import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';

export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * One HTTP request to 127.0.0.1:port with an explicit Host header: `*.localhost` names do not
 * resolve in Node here, so Node-side tests address the frontend by IP and route by Host.
 * `rawHeaders` lets a test send duplicate or oddly spelled headers exactly as given.
 */
export function get(
  port: number,
  host: string,
  path: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; rawHeaders?: [string, string][]; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers: OutgoingHttpHeaders | [string, string][] = options.rawHeaders
      ? [['Host', host], ...options.rawHeaders]
      : { host, ...options.headers };
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: headers as OutgoingHttpHeaders,
        setHost: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The `name=value` pairs of a response's Set-Cookie headers, for sending back as a Cookie header. */
export function cookiesFrom(reply: Reply): string {
  return (reply.headers['set-cookie'] ?? [])
    .map((c) => c.split(';')[0] ?? '')
    .filter((c) => !c.endsWith('='))
    .join('; ');
}

/**
 * Visits something every `everyMs` until `stop()`, which waits for every visit still in flight and
 * returns their statuses in the order they answered (a visit that failed counts as 0). Awaiting
 * them matters: a visit in flight when the test closes its servers would otherwise reject unobserved.
 */
export function repeatVisits(everyMs: number, visit: () => Promise<{ status: number }>): { stop(): Promise<number[]> } {
  const statuses: number[] = [];
  const visits: Promise<void>[] = [];
  const timer = setInterval(() => {
    visits.push(
      visit().then(
        (r) => void statuses.push(r.status),
        () => void statuses.push(0),
      ),
    );
  }, everyMs);
  return {
    stop: async () => {
      clearInterval(timer);
      await Promise.all(visits);
      return statuses;
    },
  };
}
