import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FixedBackendOptions {
  /** Listen address (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: any free port). */
  readonly port?: number;
  /** Size of the response body in bytes (default 64). */
  readonly bodyBytes?: number;
}

export interface FixedBackend {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  close(): Promise<void>;
}

/**
 * The simplest real backend: node:http answering every request with the same small body
 * (`200`, fixed Content-Length, keep-alive). Meant to run in its own process through
 * `startModule(..., 'startFixedBackend', ...)`, so it never shares an event loop with a proxy or a
 * load generator.
 */
export async function startFixedBackend(options: FixedBackendOptions = {}): Promise<FixedBackend> {
  const body = Buffer.alloc(options.bodyBytes ?? 64, 'x');
  body.write('hello from the benchmark backend\n');
  const headers = { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(body.length) };
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000 }, (req, res) => {
    // Drain any request body, then answer; GETs have none.
    req.resume();
    res.writeHead(200, headers);
    res.end(body);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}/`,
    port,
    pid: process.pid,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
