import type { OutgoingHttpHeaders } from 'node:http';

/**
 * Reading an HTTP/1.1 head where it stands, for the request and response parsers of the fast paths:
 * they run for every request, so they check lines in place and copy only what they keep; and
 * writing header lines as Node's HTTP objects write them.
 */

/** What Node's HTTP client and server refuse in a header value (`checkInvalidHeaderChar`). */
export const INVALID_HEADER_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * The header lines Node writes for `headers` (each ending in CRLF, in the object's order, a list
 * as one line per value), or undefined when a value is one Node would refuse.
 */
export function headerLines(headers: OutgoingHttpHeaders): string | undefined {
  let lines = '';
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [String(value)];
    for (const each of values) {
      if (INVALID_HEADER_VALUE.test(each)) return undefined;
      lines += `${name}: ${each}\r\n`;
    }
  }
  return lines;
}

/**
 * A header value (`value`, or its part from `from` to `to`) without the optional whitespace (spaces
 * and tabs, RFC 9110 §5.6.3) around it.
 * Not `String#trim`, which also takes U+00A0, a byte a Latin-1 read of obs-text can produce; and
 * not a regular expression, whose `[\t ]*$` backtracks quadratically on a long run of spaces.
 */
export function trimOws(value: string, from = 0, to = value.length): string {
  let start = from;
  let end = to;
  while (start < end && isOws(value.charCodeAt(start))) start += 1;
  while (end > start && isOws(value.charCodeAt(end - 1))) end -= 1;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** Whether the sticky `pattern` matches `text` at `index` (its end is then `pattern.lastIndex`). */
export function matchesAt(pattern: RegExp, text: string, index: number): boolean {
  pattern.lastIndex = index;
  return pattern.test(text);
}
