import { describe, expect, it } from 'vitest';
import { rawHeaders } from './raw-headers.ts';
import { ResponseFramer } from './response-framer.ts';

/** What a framer's tap is told of a response fed in reads of `size` bytes. */
function tapped(response: string, size: number, toHead = false) {
  const seen = { status: 0, head: '', body: '', heads: 0 };
  const framer = new ResponseFramer(toHead, undefined, {
    head(status, text) {
      seen.status = status;
      seen.head = text;
      seen.heads += 1;
    },
    body(data) {
      seen.body += data.toString('latin1');
    },
  });
  const bytes = Buffer.from(response, 'latin1');
  for (let at = 0; at < bytes.length && !framer.done; at += size)
    framer.feed(bytes.subarray(at, at + size), () => undefined);
  return { ...seen, done: framer.done };
}

describe('recording on the fast path', () => {
  const chunked =
    'HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n' +
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n' +
    '5;x=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nTrailer-Field: t\r\n\r\n';

  it('tells the tap the final head once and a chunked body without its framing, whatever the reads', () => {
    for (const size of [1, 2, 7, chunked.length]) {
      const seen = tapped(chunked, size);
      expect(seen).toEqual({
        status: 200,
        head: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked',
        body: 'hello world',
        heads: 1,
        done: true,
      });
    }
  });

  it('tells the tap a Content-Length body exactly, and no body for HEAD or 304', () => {
    const response = 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello';
    expect(tapped(response, 3).body).toBe('hello');
    expect(tapped(response.replace('hello', ''), 3, true)).toMatchObject({ status: 200, body: '' });
    expect(tapped('HTTP/1.1 304 Not Modified\r\nETag: "a"\r\n\r\n', 4)).toMatchObject({ status: 304, body: '' });
  });

  it("reads a head's headers as Node's rawHeaders: names as sent, values trimmed, repeats kept", () => {
    const head = 'HTTP/1.1 200 OK\r\nX-A:  one \t\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nEmpty:\r\nLatin: caf\xe9';
    expect(rawHeaders(head)).toEqual([
      'X-A',
      'one',
      'Set-Cookie',
      'a=1',
      'set-cookie',
      'b=2',
      'Empty',
      '',
      'Latin',
      'caf\xe9',
    ]);
    expect(rawHeaders('HTTP/1.1 204 No Content')).toEqual([]);
  });
});
