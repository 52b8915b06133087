import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { headerLines } from '../../lib/fast-upstream/head-text.ts';

/**
 * The heads of the agent's fast path to a share backend (backend-exchange.ts), written and read as
 * `node:http`'s client writes and reads them on the agent's other path (serve-stream.ts), so that a
 * backend cannot tell the two apart and a visitor gets the same headers from either.
 */

/** What Node's client refuses in a request path (`INVALID_PATH_REGEX`). */
const INVALID_PATH = /[^\x21-\xff]/;
/** Methods Node's client sends without a Content-Length when they have no body (not `useChunkedEncodingByDefault`). */
const NO_LENGTH = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

/**
 * The head Node's client writes for a bodiless request with these headers through a kept-alive
 * agent: the request line, the headers in their order (a list as one line per value), then
 * `Connection: keep-alive` and, for a method that may carry a body, `Content-Length: 0` unless one
 * was given. Undefined when Node's client would refuse a value or the path (the other path then
 * answers as it does).
 */
export function requestHead(method: string, path: string, headers: OutgoingHttpHeaders): string | undefined {
  if (INVALID_PATH.test(path)) return undefined;
  const lines = headerLines(headers);
  if (lines === undefined) return undefined;
  const length = NO_LENGTH.has(method) || headers['content-length'] !== undefined ? '' : 'Content-Length: 0\r\n';
  return `${method} ${path} HTTP/1.1\r\n${lines}Connection: keep-alive\r\n${length}\r\n`;
}

/** Header names whose repeats Node's `IncomingMessage` drops: the first value wins. */
const FIRST_WINS = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/**
 * A response's headers as Node's `IncomingMessage.headers` reads them from its `rawHeaders`:
 * names lower-cased, Set-Cookie as a list, Cookie joined with `; `, the `FIRST_WINS` ones kept
 * once, every other repeat joined with `, `.
 */
export function nodeResponseHeaders(raw: readonly string[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    const prior = headers[name];
    if (name === 'set-cookie') {
      if (prior !== undefined) (prior as string[]).push(value);
      else headers[name] = [value];
    } else if (FIRST_WINS.has(name)) {
      if (prior === undefined) headers[name] = value;
    } else headers[name] = typeof prior === 'string' ? `${prior}${name === 'cookie' ? '; ' : ', '}${value}` : value;
  }
  return headers;
}
