import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * One raw HTTP request to 127.0.0.1:port (or `address`:port): the path is sent exactly as given (no normalisation of
 * `..` or percent-escapes, unlike fetch), and the Host header can name a `*.localhost` share host,
 * which Node's resolver does not resolve here. With `timeoutMs`, a reply not complete by then fails
 * the request (for "answers, never hangs" checks).
 */
export function request(
  port: number,
  path: string,
  options: {
    method?: string;
    host?: string;
    headers?: Record<string, string>;
    body?: string;
    timeoutMs?: number;
    address?: string;
  } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: options.address ?? '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        agent: false,
        headers: { ...(options.host ? { host: options.host } : {}), ...options.headers },
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
    req.on('error', reject);
    if (options.timeoutMs !== undefined) {
      const timer = setTimeout(
        () => req.destroy(new Error(`no complete answer to ${path} within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      req.on('close', () => clearTimeout(timer));
    }
    req.end(options.body);
  });
}

/** A real HTTP backend on port 0 that echoes what it received as JSON. */
export async function echoBackend(): Promise<{ port: number; url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers });
    if (req.url === '/status/503') res.statusCode = 503;
    res.setHeader('content-type', 'application/json');
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
