import { matchesAt, trimOws } from './head-text.ts';

const STATUS_LINE_END = /[^\r\n]*(?:\r\n|$)/y;
const HEADER_LINE = /[^:\r\n]+:[^\r\n]*(?:\r\n|$)/y;

/**
 * A response head's header lines (the framer has checked their syntax) as Node's `rawHeaders`
 * gives them: `[name, value, …]`, names as sent, values without surrounding whitespace.
 */
export function rawHeaders(text: string): string[] {
  const out: string[] = [];
  if (!matchesAt(STATUS_LINE_END, text, 0)) return out;
  let at = STATUS_LINE_END.lastIndex;
  while (at < text.length && matchesAt(HEADER_LINE, text, at)) {
    const colon = text.indexOf(':', at);
    const next = HEADER_LINE.lastIndex;
    out.push(text.slice(at, colon), trimOws(text, colon + 1, text.charCodeAt(next - 1) === 10 ? next - 2 : next));
    at = next;
  }
  return out;
}
