import type * as Https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpRequest } from './node-http.ts';

/**
 * One outbound HTTP exchange over node:http/node:https, for the few calls svc makes to other
 * servers on a login (an identity provider's discovery, keys, token, user info and revocation).
 * Not `fetch`: the first fetch loads Node's bundled undici and compiles its WebAssembly HTTP parser,
 * and V8 later re-compiles that parser with its optimizing tier; in the frontend this was 20-28 MiB
 * of RSS and a start-up peak, out of a sidecar's budget of 80 (docs/benchmarks-history.md).
 * Redirects are not followed (a 3xx is returned as it is); the body is read up to `maxBodyBytes`.
 */
export interface OutboundRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
}

export interface OutboundResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

let https: typeof Https | undefined;

/** node:https (and with it node:tls) is loaded at the first https request, not at start-up. */
function requestFor(url: URL): typeof httpRequest {
  if (url.protocol === 'http:') return httpRequest;
  if (url.protocol === 'https:') return (https ??= process.getBuiltinModule('node:https')).request;
  throw new Error(`unsupported URL scheme ${url.protocol}`);
}

/** Rejects with an Error whose message names the cause (timeout, refused, too large); never the body sent. */
export function outboundRequest(url: URL, options: OutboundRequest): Promise<OutboundResponse> {
  return new Promise((resolve, reject) => {
    const send = requestFor(url);
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers = { ...options.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
    const req = send(url, { method: options.method, headers });
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      req.destroy();
      reject(error);
    };
    // A deadline for the whole exchange, not the socket's idle timeout: a server that sends a byte
    // a second must not hold a login for longer than the limit.
    const deadline = setTimeout(() => fail(new Error(`timeout after ${options.timeoutMs} ms`)), options.timeoutMs);
    req.on('error', fail);
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBodyBytes) fail(new Error(`response larger than ${options.maxBodyBytes} bytes`));
        else chunks.push(chunk);
      });
      res.on('error', fail);
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
      });
    });
    req.end(body);
  });
}
