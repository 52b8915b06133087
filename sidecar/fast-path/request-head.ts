import type { IncomingHttpHeaders } from 'node:http';
import { trimOws } from './ows.ts';

/**
 * The requests the fast path takes itself: a GET or HEAD in HTTP/1.1 with an origin-form target,
 * no body and no header that would need more than a head to act on. Everything else (a body, an
 * upgrade, `Expect`, a header given twice, any byte outside what RFC 9110 allows, a head larger
 * than Node's limit) goes to Node's HTTP server, which also answers the malformed ones. So the
 * backend only ever sees heads the fast path wrote from what it parsed: there is no body whose end
 * two parsers could disagree on, and nothing to smuggle behind it.
 */
export interface FastRequest {
  readonly method: 'GET' | 'HEAD';
  readonly url: string;
  /** Lower-case names, one value each, in a null-prototype object (a header may be named `__proto__`). */
  readonly headers: IncomingHttpHeaders;
  readonly host: string;
  readonly socket: { readonly remoteAddress?: string | undefined };
}

/** Node's default limit on a request head (`--max-http-header-size`); a larger one is Node's to refuse with 431. */
export const MAX_REQUEST_HEAD_BYTES = 16 * 1024;

const REQUEST_LINE = /^(GET|HEAD) (\/[\x21-\x7e]*) HTTP\/1\.1$/;
// One quantifier over the value, trimmed afterwards: a lazy value between two runs of optional
// whitespace backtracks quadratically on a long run of spaces (a 16 KiB head: a ReDoS).
const HEADER_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):([\t\x20-\x7e]*)$/;

/**
 * Headers that ask for more than forwarding a head: a body (Content-Length, Transfer-Encoding),
 * an interim response (Expect), another protocol (Upgrade, HTTP2-Settings), or connection
 * handling (TE, Trailer, Keep-Alive, Proxy-Connection). `Connection: keep-alive`, which browsers
 * send on every request, is the only Connection header the fast path takes.
 */
const SLOW_PATH_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'expect',
  'upgrade',
  'http2-settings',
  'te',
  'trailer',
  'keep-alive',
  'proxy-connection',
]);

/**
 * The request whose head is `text` (the bytes before its blank line, read as Latin-1), or
 * undefined when the fast path leaves it to Node's server.
 */
export function parseRequestHead(text: string, socket: FastRequest['socket']): FastRequest | undefined {
  if (text.length > MAX_REQUEST_HEAD_BYTES || /\r(?!\n)|(?<!\r)\n/.test(text)) return undefined;
  const lines = text.split('\r\n');
  const requestLine = REQUEST_LINE.exec(lines[0] as string);
  if (!requestLine) return undefined;
  const headers: IncomingHttpHeaders = Object.create(null) as IncomingHttpHeaders;
  for (let i = 1; i < lines.length; i += 1) {
    const header = HEADER_LINE.exec(lines[i] as string);
    if (!header) return undefined;
    const name = (header[1] as string).toLowerCase();
    const value = trimOws(header[2] as string);
    if (name in headers || SLOW_PATH_HEADERS.has(name)) return undefined;
    // `Content_Length` and the like: a backend that reads `_` as `-` would frame a body the fast path did not.
    if (name.includes('_') && SLOW_PATH_HEADERS.has(name.replace(/_/g, '-'))) return undefined;
    if (name === 'connection' && value.toLowerCase() !== 'keep-alive') return undefined;
    headers[name] = value;
  }
  const host = headers.host;
  if (host === undefined) return undefined;
  return { method: requestLine[1] as 'GET' | 'HEAD', url: requestLine[2] as string, headers, host, socket };
}
