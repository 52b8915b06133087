import { MAX_RESPONSE_HEAD_BYTES } from '../http-limits.ts';
import type { ShareCookies } from '../backend-cookies.ts';
import { connectionListed, HOP_BY_HOP as HOP_BY_HOP_HEADERS } from '../hop-by-hop.ts';
import { matchesAt, trimOws } from './head-text.ts';

/**
 * Where a backend's HTTP/1.1 response ends, read from its bytes as they arrive (RFC 9112 §6.3), so
 * the fast path can relay a response without Node's HTTP client and still know when its backend
 * connection is free again. The head is rebuilt without the hop-by-hop headers that concern only
 * the frontend's connection to the backend (and those its Connection header names), its Set-Cookie
 * headers through the share's cookie rule (lib/backend-cookies.ts); the body is relayed as it came,
 * chunked framing included. Anything a strict reading does not settle (two Content-Lengths, Transfer-Encoding
 * with Content-Length, a bare LF, a 101 nobody asked for) is a `BackendProtocolError`: the fast
 * path then answers 502 or cuts the connection, as the slow path does when Node's parser refuses.
 */
export class BackendProtocolError extends Error {
  constructor(message: string) {
    super(`backend response refused: ${message}`);
    this.name = 'BackendProtocolError';
  }
}

/**
 * A response head longer than this is refused: Node's client, which the slow path uses, refuses a
 * head over 16 KiB (`--max-http-header-size`, counted without the line ends), so both paths answer
 * a backend's large head alike.
 */
const MAX_HEAD_BYTES = MAX_RESPONSE_HEAD_BYTES;
/**
 * A head of more header lines is refused: Node's client keeps only the first 1000 (its
 * `maxHeadersCount`, 2000, counts names and values), so the slow path would read another head.
 */
const MAX_HEADER_LINES = 1000;
/** A chunk-size line (size and extensions) longer than this is refused. */
const MAX_CHUNK_LINE_BYTES = 4 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

/**
 * Response headers the frontend does not pass on: they describe the backend connection
 * (lib/hop-by-hop.ts). Transfer-Encoding stays, as the body is relayed with its framing.
 */
const HOP_BY_HOP = new Set([...HOP_BY_HOP_HEADERS].filter((name) => name !== 'transfer-encoding'));

// Sticky patterns, tested in place on the head (no line copies, no match arrays: this runs for every
// response). Each matches one whole line and its CRLF, or the end of the head.
const STATUS_LINE = /HTTP\/1\.[01] [1-9]\d\d(?: [\t\x20-\x7e\x80-\xff]*)?(?:\r\n|$)/y;
const HEADER_NAME = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+:/y;
// One quantifier over the value, trimmed afterwards (a lazy value between optional whitespace backtracks quadratically).
const HEADER_VALUE = /[\t\x20-\x7e\x80-\xff]*(?:\r\n|$)/y;
/** A trailer field: the same syntax as a header line. */
const FIELD_LINE = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[\t\x20-\x7e\x80-\xff]*$/;
/** Trailer fields that would frame the message (RFC 9110 §6.5.1): Node's client refuses them. */
const FRAMING_TRAILER = /^(?:content-length|transfer-encoding):/i;
/**
 * A chunk-size line (RFC 9112 §7.1.1): hex digits, then extensions with token or quoted-string
 * values, no whitespace. Node's parser refuses what this does not match, or reads it otherwise.
 */
const CHUNK_SIZE_LINE =
  /^([0-9A-Fa-f]{1,12})(?:;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:=(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[\t\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t\x20-\x7e\x80-\xff])*"))?)*$/;
/**
 * A Transfer-Encoding value as Node's parser reads it: codings separated by commas and spaces,
 * without parameters or tabs; `chunked` only as the last coding (RFC 9112 §6.1).
 */
const TRANSFER_CODINGS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?: *, *[!#$%&'*+\-.^_`|~0-9A-Za-z]+)*$/;
const CHUNKED_LAST = /(?:^|, *)chunked$/i;
const CHUNKED_BEFORE_LAST = /(?:^|, *)chunked *,/i;
/** The lengths of the header names the framer reads or drops: any other name needs no copy to be passed on. */
const READ_NAME_LENGTHS = new Set(
  [...HOP_BY_HOP, 'content-length', 'transfer-encoding', 'set-cookie', 'set-cookie2'].map((name) => name.length),
);
const EMPTY = Buffer.alloc(0);
const DECIMAL = /^\d{1,15}$/;

type Body =
  | { readonly kind: 'none' }
  | { readonly kind: 'length'; remaining: number }
  | { readonly kind: 'chunked'; state: ChunkState; remaining: number; line: string }
  | { readonly kind: 'close' };

/** Where a chunked body's reader is: a size line, chunk data, the CRLF after the data, or the trailer section. */
type ChunkState = 'size' | 'data' | 'data-end' | 'trailer';

/** What a response head's header lines said about its framing, and the head passed on so far. */
interface HeadScan {
  length: string | undefined;
  transferEncoding: string | undefined;
  /** HTTP/1.0 closes unless its Connection says keep-alive; `close` wins over `keep-alive` (as in Node's parser). */
  sawClose: boolean;
  sawKeepAlive: boolean;
  /** The header names Connection lists, dropped from the head passed on. */
  listed: readonly string[];
  /** The head passed on is the text less the hop-by-hop lines, copied in as few pieces as there are such lines. */
  out: string;
  copiedTo: number;
}

/** Records a Content-Length, Transfer-Encoding or Connection header (the value at `from`..`to` of `text`). */
function readFramingHeader(scan: HeadScan, name: string, value: string, text: string, from: number, to: number): void {
  if (name === 'content-length') {
    if (scan.length !== undefined || !DECIMAL.test(value)) throw new BackendProtocolError('bad Content-Length');
    scan.length = value;
  } else if (name === 'transfer-encoding') {
    // A trailing tab kept: Node's parser does not take `chunked` followed by one.
    const codings = transferCodings(text, from, to);
    if (!TRANSFER_CODINGS.test(codings)) throw new BackendProtocolError('malformed Transfer-Encoding');
    scan.transferEncoding = scan.transferEncoding === undefined ? codings : `${scan.transferEncoding}, ${codings}`;
  } else if (name === 'connection') {
    if (/(?:^|,)\s*close\s*(?:,|$)/i.test(value)) scan.sawClose = true;
    if (/(?:^|,)\s*keep-alive\s*(?:,|$)/i.test(value)) scan.sawKeepAlive = true;
    const named = connectionListed(value);
    if (named.length > 0) scan.listed = [...scan.listed, ...named];
  }
}

/**
 * Told of the final response as the backend sent it, for the request inspector (recording.ts):
 * its head's text (status line and header lines, as read) and its body's bytes without the
 * chunked framing. Only a recorded exchange's framer has one.
 */
export interface FramerTap {
  head(status: number, text: string): void;
  body(data: Buffer): void;
}

export interface FramedHead {
  readonly status: number;
  /** The backend closes after this response (it said so, or the body runs to the end of the connection). */
  readonly closes: boolean;
}

/**
 * One response at a time. `feed` takes the backend's bytes in order and passes on, through
 * `relay`, what the visitor should get; it returns the number of bytes of `chunk` that belonged to
 * the response, and `done` turns true at its last byte.
 */
export class ResponseFramer {
  /** An unfinished head's reads so far, their length, and its last three bytes. */
  private headParts: Buffer[] = [];
  private headLength = 0;
  private headTail: Buffer = EMPTY;
  private body: Body | undefined;
  private framed: FramedHead | undefined;
  done = false;
  /** Bytes of this response relayed to the visitor so far (its head included). */
  relayed = 0;

  /** A response to HEAD has no body whatever its headers say. */
  readonly toHead: boolean;
  /** Which of the backend's Set-Cookie headers reach the visitor; all when undefined. */
  private readonly cookies: ShareCookies | undefined;
  private readonly tap: FramerTap | undefined;

  constructor(toHead: boolean, cookies?: ShareCookies, tap?: FramerTap) {
    this.toHead = toHead;
    this.cookies = cookies;
    this.tap = tap;
  }

  get headParsed(): FramedHead | undefined {
    return this.framed;
  }

  /** The backend closed its connection: the end of a close-delimited body, an error otherwise. */
  end(): boolean {
    if (this.body?.kind === 'close') this.done = true;
    return this.done;
  }

  feed(chunk: Buffer, relay: (data: Buffer | string) => void): number {
    let used = 0;
    if (!this.body) {
      used = this.readHead(chunk, relay);
      if (!this.body) return used;
    }
    if (this.done || used === chunk.length) return used;
    const rest = used === 0 ? chunk : chunk.subarray(used);
    const taken = this.readBody(rest);
    if (taken > 0) {
      const relayed = taken === rest.length ? rest : rest.subarray(0, taken);
      relay(relayed);
      this.relayed += taken;
      if (this.tap && this.body.kind !== 'chunked') this.tap.body(relayed);
    }
    return used + taken;
  }

  /** Reads (and skips 1xx interim responses in front of) the final head; returns the bytes it used. */
  private readHead(chunk: Buffer, relay: (data: string) => void): number {
    let used = 0;
    while (!this.body) {
      const rest = used === 0 ? chunk : chunk.subarray(used);
      if (rest.length === 0) return used;
      // Only the new bytes and the three before them are searched: a head sent a byte per packet
      // costs linear time, not a copy and search of everything so far on every read.
      const seam = this.headParts.length > 0 ? Buffer.concat([this.headTail, rest]) : rest;
      const at = seam.indexOf(CRLF2);
      if (at < 0) {
        this.headParts.push(rest);
        this.headLength += rest.length;
        if (this.headLength > MAX_HEAD_BYTES) throw new BackendProtocolError('response head too large');
        this.headTail = seam.subarray(Math.max(0, seam.length - 3));
        return chunk.length;
      }
      const ownBytes = at - (seam.length - rest.length) + 4;
      const whole = this.headParts.length > 0 ? Buffer.concat([...this.headParts, rest.subarray(0, ownBytes)]) : rest;
      const headEnd = this.headParts.length > 0 ? whole.length - 4 : at;
      this.headParts = [];
      this.headLength = 0;
      if (headEnd > MAX_HEAD_BYTES) throw new BackendProtocolError('response head too large');
      used += ownBytes;
      const text = whole.toString('latin1', 0, headEnd);
      const head = this.parseHead(text);
      if (head === 'interim') continue;
      this.tap?.head((this.framed as FramedHead).status, text);
      relay(head.text);
      this.relayed += head.text.length;
    }
    return used;
  }

  /**
   * Checks a response head and rebuilds it for the visitor: the status line, the header lines (the
   * framing ones read, the hop-by-hop ones dropped, Set-Cookie filtered), then the body's framing.
   */
  private parseHead(text: string): 'interim' | { text: string } {
    if (text.includes('\n\n') || /\r(?!\n)|(?<!\r)\n/.test(text)) throw new BackendProtocolError('bare CR or LF');
    if (!matchesAt(STATUS_LINE, text, 0)) throw new BackendProtocolError('malformed status line');
    const status = digit(text, 9) * 100 + digit(text, 10) * 10 + digit(text, 11);
    if (status === 101) throw new BackendProtocolError('101 Switching Protocols without an upgrade');
    // Not an interim response to skip: no status class at all (Node's path refuses it too).
    if (status < 100) throw new BackendProtocolError(`status ${status}`);
    const scan = this.scanHeaders(text, STATUS_LINE.lastIndex);
    if (status < 200) return 'interim';
    return { text: this.frameBody(status, text, scan) };
  }

  /** Reads the header lines from `at`: the framing headers, and the head passed on without the dropped lines. */
  private scanHeaders(text: string, at: number): HeadScan {
    const scan: HeadScan = {
      length: undefined,
      transferEncoding: undefined,
      sawClose: false,
      sawKeepAlive: false,
      listed: [],
      out: '',
      copiedTo: 0,
    };
    let lines = 0;
    while (at < text.length) {
      if (++lines > MAX_HEADER_LINES) throw new BackendProtocolError('too many header lines');
      if (!matchesAt(HEADER_NAME, text, at)) throw new BackendProtocolError('malformed header line');
      const colon = HEADER_NAME.lastIndex - 1;
      if (!matchesAt(HEADER_VALUE, text, colon + 1)) throw new BackendProtocolError('malformed header line');
      const next = HEADER_VALUE.lastIndex;
      const lineStart = at;
      at = next;
      if (!READ_NAME_LENGTHS.has(colon - lineStart)) continue;
      const name = text.slice(lineStart, colon).toLowerCase();
      const valueEnd = text.charCodeAt(next - 1) === 10 ? next - 2 : next;
      const value = trimOws(text, colon + 1, valueEnd);
      readFramingHeader(scan, name, value, text, colon + 1, valueEnd);
      if (HOP_BY_HOP.has(name) || name === 'set-cookie2') {
        scan.out += text.slice(scan.copiedTo, lineStart);
        scan.copiedTo = next;
      } else if (name === 'set-cookie' && this.cookies) {
        const kept = this.cookies.filter(value);
        if (kept !== value) {
          scan.out += text.slice(scan.copiedTo, lineStart);
          if (kept !== undefined) scan.out += `${text.slice(lineStart, colon)}: ${kept}\r\n`;
          scan.copiedTo = next;
        }
      }
    }
    return scan;
  }

  /** Decides how the final response's body is framed and returns the head the visitor gets. */
  private frameBody(status: number, text: string, scan: HeadScan): string {
    const { length, transferEncoding } = scan;
    let closes = scan.sawClose || (text.startsWith('HTTP/1.0') && !scan.sawKeepAlive);
    if (transferEncoding !== undefined && length !== undefined)
      throw new BackendProtocolError('both Transfer-Encoding and Content-Length');
    if (transferEncoding !== undefined && CHUNKED_BEFORE_LAST.test(transferEncoding))
      throw new BackendProtocolError('chunked before another transfer coding');
    // Chunked must be the last coding; any other framing runs to the end of the connection.
    const chunked = transferEncoding !== undefined && CHUNKED_LAST.test(transferEncoding);
    const delimited = chunked || (transferEncoding === undefined && length !== undefined);
    if (status === 204 || status === 304) this.body = { kind: 'none' };
    else if (this.toHead) {
      this.body = { kind: 'none' };
      // As Node's client: a head that would not frame a body leaves the connection's end undecided.
      if (!delimited) closes = true;
    } else if (chunked) this.body = { kind: 'chunked', state: 'size', remaining: 0, line: '' };
    else if (length !== undefined && transferEncoding === undefined)
      this.body = { kind: 'length', remaining: Number(length) };
    else this.body = { kind: 'close' };
    let out = scan.out;
    // The last line's CRLF is not in `text` (the head's end took it): added here unless that line was dropped.
    if (scan.copiedTo < text.length) out += `${scan.copiedTo === 0 ? text : text.slice(scan.copiedTo)}\r\n`;
    if (scan.listed.length > 0) out = withoutListedLines(out, scan.listed);
    if (this.body.kind === 'close') {
      closes = true;
      out += 'connection: close\r\n';
    }
    this.framed = { status, closes };
    if (this.body.kind === 'none' || (this.body.kind === 'length' && this.body.remaining === 0)) this.done = true;
    return `${out}\r\n`;
  }

  /** How many bytes of `chunk` belong to the body; sets `done` at its end. */
  private readBody(chunk: Buffer): number {
    const body = this.body as Body;
    switch (body.kind) {
      case 'none':
        return 0;
      case 'close':
        return chunk.length;
      case 'length': {
        const taken = Math.min(body.remaining, chunk.length);
        body.remaining -= taken;
        if (body.remaining === 0) this.done = true;
        return taken;
      }
      case 'chunked':
        return this.readChunked(body, chunk);
    }
  }

  private readChunked(body: Extract<Body, { kind: 'chunked' }>, chunk: Buffer): number {
    let i = 0;
    while (i < chunk.length && !this.done) {
      if (body.state === 'data') {
        const taken = Math.min(body.remaining, chunk.length - i);
        this.tap?.body(chunk.subarray(i, i + taken));
        body.remaining -= taken;
        i += taken;
        if (body.remaining === 0) {
          body.state = 'data-end';
          body.line = '';
        }
        continue;
      }
      // A line: a chunk size, the CRLF closing a chunk's data, or a trailer field.
      const lf = chunk.indexOf(10, i);
      const stop = lf < 0 ? chunk.length : lf + 1;
      body.line += chunk.toString('latin1', i, stop);
      i = stop;
      if (body.line.length > MAX_CHUNK_LINE_BYTES) throw new BackendProtocolError('chunk line too long');
      if (lf < 0) break;
      if (!body.line.endsWith('\r\n') || body.line.indexOf('\r') !== body.line.length - 2)
        throw new BackendProtocolError('bare CR or LF in chunked framing');
      const line = body.line.slice(0, -2);
      body.line = '';
      if (body.state === 'data-end') {
        if (line !== '') throw new BackendProtocolError('chunk data longer than its size');
        body.state = 'size';
      } else if (body.state === 'size') {
        const size = CHUNK_SIZE_LINE.exec(line);
        if (!size) throw new BackendProtocolError('malformed chunk size');
        body.remaining = Number.parseInt(size[1] as string, 16);
        body.state = body.remaining === 0 ? 'trailer' : 'data';
      } else if (line === '') this.done = true;
      else if (!FIELD_LINE.test(line) || FRAMING_TRAILER.test(line))
        throw new BackendProtocolError('malformed trailer field');
    }
    return i;
  }
}

/** A head (status line and header lines, each ending in CRLF) without the lines of the `listed` headers. */
function withoutListedLines(head: string, listed: readonly string[]): string {
  const lines = head.split('\r\n');
  return lines
    .filter((line, i) => i === 0 || !listed.includes(line.slice(0, Math.max(0, line.indexOf(':'))).toLowerCase()))
    .join('\r\n');
}

/** The value from `from` to `to` without leading spaces and tabs or trailing spaces (a trailing tab stays). */
function transferCodings(text: string, from: number, to: number): string {
  let start = from;
  let end = to;
  while (start < end && (text.charCodeAt(start) === 0x20 || text.charCodeAt(start) === 0x09)) start += 1;
  while (end > start && text.charCodeAt(end - 1) === 0x20) end -= 1;
  return text.slice(start, end);
}

function digit(text: string, index: number): number {
  return text.charCodeAt(index) - 48;
}
