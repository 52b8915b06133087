import { createServer, type ServerResponse } from 'node:http';
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

/** How the small body starts: a contender that answers with anything else is misrouted. */
export const FIXED_BODY_START = 'hello from the benchmark backend';

const STREAM_CHUNK = Buffer.alloc(64 * 1024, 'x');

/** The small body every fixed backend answers with (this one and bench/lib/nginx.ts's): the start line, then `x` filler. */
export function fixedBody(bytes: number): Buffer {
  const body = Buffer.alloc(bytes, 'x');
  body.write(`${FIXED_BODY_START}\n`);
  return body;
}

/**
 * The simplest real backend: node:http answering every request with the same small body
 * (`200`, fixed Content-Length, keep-alive). `GET /big?mib=N` instead streams N MiB in 64 KiB
 * writes that respect back-pressure (the bulk-transfer case of bench/tunnel.ts), so a slow reader
 * is what limits it, never the backend's memory. Meant to run in its own process through
 * `startModule(..., 'startFixedBackend', ...)`, so it never shares an event loop with a proxy or a
 * load generator.
 */
export async function startFixedBackend(options: FixedBackendOptions = {}): Promise<FixedBackend> {
  const body = fixedBody(options.bodyBytes ?? 64);
  const headers = { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(body.length) };
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000 }, (req, res) => {
    // Drain any request body, then answer; GETs have none. An upload is answered once it is all
    // read, so its time covers the whole body (bench/lib/upload.ts).
    req.resume();
    if (req.method === 'POST') {
      req.once('end', () => {
        res.writeHead(200, headers);
        res.end(body);
      });
      return;
    }
    if (req.url?.startsWith('/big?')) {
      streamBody(res, Number(new URL(req.url, 'http://x').searchParams.get('mib')));
      return;
    }
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

/** Writes `mib` MiB of filler, waiting for 'drain' whenever the socket's buffer is full. */
function streamBody(res: ServerResponse, mib: number): void {
  let left = Number.isInteger(mib) && mib > 0 ? mib * 16 : 0;
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left * STREAM_CHUNK.length });
  const pump = (): void => {
    while (left > 0) {
      left -= 1;
      if (!res.write(STREAM_CHUNK)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
}
