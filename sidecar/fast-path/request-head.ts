import type { IncomingHttpHeaders } from 'node:http';
import { matchesAt, trimOws } from '../../lib/fast-upstream/head-text.ts';

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
/**
 * Node's server answers 431 to a head of more header lines than this (its `maxHeadersCount`, 2000,
 * counts names and values): a head of many short lines stays under the byte limit.
 */
export const MAX_REQUEST_HEADERS = 1000;

// Sticky patterns, tested in place on the head (no line copies, no match arrays: this runs for every
// request). Each matches one whole line and its CRLF, or the end of the head.
const REQUEST_LINE = /(?:GET|HEAD) \/[\x21-\x7e]* HTTP\/1\.1(?:\r\n|$)/y;
const HEADER_NAME = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+:/y;
// One quantifier over the value, trimmed afterwards: a lazy value between two runs of optional
// whitespace backtracks quadratically on a long run of spaces (a 16 KiB head: a ReDoS).
const HEADER_VALUE = /[\t\x20-\x7e]*(?:\r\n|$)/y;

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
 * undefined when the fast path leaves it to Node's server. A CR or LF anywhere but in a line's
 * CRLF fails the line's pattern, so a bare one sends the request to Node's parser too.
 */
export function parseRequestHead(text: string, socket: FastRequest['socket']): FastRequest | undefined {
  if (text.length > MAX_REQUEST_HEAD_BYTES || !matchesAt(REQUEST_LINE, text, 0)) return undefined;
  let at = REQUEST_LINE.lastIndex;
  const head = text.charCodeAt(0) === 72; // 'H'
  const targetStart = head ? 5 : 4;
  const url = text.slice(targetStart, text.indexOf(' ', targetStart));
  const headers: IncomingHttpHeaders = Object.create(null) as IncomingHttpHeaders;
  let count = 0;
  while (at < text.length) {
    if (++count > MAX_REQUEST_HEADERS) return undefined;
    if (!matchesAt(HEADER_NAME, text, at)) return undefined;
    const colon = HEADER_NAME.lastIndex - 1;
    if (!matchesAt(HEADER_VALUE, text, colon + 1)) return undefined;
    const next = HEADER_VALUE.lastIndex;
    const lineEnd = text.charCodeAt(next - 1) === 10 ? next - 2 : next; // without its CRLF
    const name = text.slice(at, colon).toLowerCase();
    const value = trimOws(text, colon + 1, lineEnd);
    at = next;
    if (name in headers || SLOW_PATH_HEADERS.has(name)) return undefined;
    // `Content_Length` and the like: a backend that reads `_` as `-` would frame a body the fast path did not.
    if (name.includes('_') && SLOW_PATH_HEADERS.has(name.replace(/_/g, '-'))) return undefined;
    if (name === 'connection' && value.toLowerCase() !== 'keep-alive') return undefined;
    headers[name] = value;
  }
  const host = headers.host;
  if (host === undefined) return undefined;
  return { method: head ? 'HEAD' : 'GET', url, headers, host, socket };
}
