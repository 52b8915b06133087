/**
 * Reading an HTTP/1.1 head where it stands, for the request and response parsers of the fast path:
 * they run for every request, so they check lines in place and copy only what they keep.
 */

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
