import { describe, expect, it } from 'vitest';
import { BackendProtocolError, ResponseFramer } from './response-framer.ts';

/** Feeds `parts` in order; returns what was relayed (as Latin-1 text), whether the response ended, and the bytes used of each part. */
function frame(parts: readonly string[], toHead = false) {
  const framer = new ResponseFramer(toHead);
  let relayed = '';
  const used: number[] = [];
  for (const part of parts) {
    if (framer.done) break;
    used.push(
      framer.feed(Buffer.from(part, 'latin1'), (data) => {
        relayed += typeof data === 'string' ? data : data.toString('latin1');
      }),
    );
  }
  return { relayed, done: framer.done, used, framer };
}

/** Every split of `text` into two parts gives the same outcome as the whole. */
function everySplit(text: string, toHead = false) {
  const whole = frame([text], toHead);
  for (let at = 1; at < text.length; at += 1) {
    const split = frame([text.slice(0, at), text.slice(at)], toHead);
    expect({ relayed: split.relayed, done: split.done }).toEqual({ relayed: whole.relayed, done: whole.done });
  }
  return whole;
}

describe('ResponseFramer', () => {
  it('ends a Content-Length body at its last byte, whatever the reads, and drops hop-by-hop headers', () => {
    const response =
      'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 5\r\n\r\nhello';
    const { relayed, done, framer } = everySplit(response);
    expect(done).toBe(true);
    expect(relayed).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello');
    expect(framer.headParsed).toEqual({ status: 200, closes: false });
  });

  it('drops hop-by-hop headers wherever they stand: first, adjacent, last, and in any case', () => {
    const { relayed } = frame([
      'HTTP/1.1 200 OK\r\nTE: x\r\nserver: a\r\nUPGRADE: h2\r\nProxy-Connection: y\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok',
    ]);
    expect(relayed).toBe('HTTP/1.1 200 OK\r\nserver: a\r\nContent-Length: 2\r\n\r\nok');
    const closing = frame(['HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nrest']);
    expect(closing.relayed).toBe('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nrest');
    expect(frame(['HTTP/1.1 200 OK\r\n\r\n']).relayed).toBe('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n');
  });

  it('stops at the end of a response and leaves the bytes after it unused', () => {
    const { used, done } = frame(['HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n']);
    expect(done).toBe(true);
    expect(used).toEqual(['HTTP/1.1 204 No Content\r\n\r\n'.length]);
  });

  it('relays a chunked body with extensions and trailers as it came, split anywhere', () => {
    const body = '5;name=value\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Checksum: 1\r\n\r\n';
    const { relayed, done } = everySplit(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body}`);
    expect(done).toBe(true);
    expect(relayed).toBe(`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${body}`);
  });

  it('gives a response to HEAD, a 204 and a 304 no body whatever their headers say', () => {
    expect(frame(['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n'], true).done).toBe(true);
    expect(frame(['HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n']).done).toBe(true);
    expect(frame(['HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n']).done).toBe(true);
  });

  it('skips interim 1xx responses and relays the final one', () => {
    const { relayed, done } = everySplit(
      'HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok',
    );
    expect(done).toBe(true);
    expect(relayed).toBe('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
  });

  it('runs a body without length to the end of the connection, and says the connection closes', () => {
    const { relayed, done, framer } = frame(['HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nsome', ' more']);
    expect(done).toBe(false);
    expect(relayed).toBe('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nconnection: close\r\n\r\nsome more');
    expect(framer.end()).toBe(true);
    expect(framer.headParsed?.closes).toBe(true);
  });

  it('notes a backend that closes after a response with a length, and one that stops short is not complete', () => {
    const closing = frame(['HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok']);
    expect(closing.done).toBe(true);
    expect(closing.framer.headParsed?.closes).toBe(true);
    const short = frame(['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok']);
    expect(short.done).toBe(false);
    expect(short.framer.end()).toBe(false);
  });

  it.each([
    ['two Content-Lengths', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok'],
    ['a signed Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok'],
    [
      'Transfer-Encoding with Content-Length',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n',
    ],
    ['a bare LF in the head', 'HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok'],
    ['a space before the colon', 'HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok'],
    ['an unasked-for 101', 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n'],
    ['a malformed status line', 'HTTP/2 200 OK\r\n\r\n'],
    ['a status below 100', 'HTTP/1.1 099 Odd\r\nContent-Length: 2\r\n\r\nok'],
    ['status 000', 'HTTP/1.1 000 Odd\r\nContent-Length: 2\r\n\r\nok'],
    ['a chunk size that is not hex', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'],
    ['chunk data longer than its size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n'],
    ['whitespace after a chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3 ;a\r\nabc\r\n'],
    ['an unterminated quoted chunk extension', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;a="b\r\nc\r\n'],
    [
      'Content-Length in the trailers',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n',
    ],
    ['`chunked` followed by a tab', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\t\r\n\r\n'],
    ['`chunked` before another coding', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n'],
    ['a transfer coding with a parameter', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1\r\n\r\n'],
    ['more than 1000 header lines', `HTTP/1.1 200 OK\r\n${'x: 1\r\n'.repeat(1001)}\r\n`],
  ])('refuses %s', (_, response) => {
    expect(() => frame([response])).toThrow(BackendProtocolError);
  });

  it('takes chunk extensions with token and quoted values, and codings before chunked', () => {
    const body = '3;a=b;c="d \\" e";f\r\nabc\r\n0\r\n\r\n';
    expect(frame([`HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip ,  chunked \r\n\r\n${body}`]).done).toBe(true);
  });

  it('closes the backend connection where Node does: `close` over `keep-alive`, a HEAD answer without a length', () => {
    const both = frame(['HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n']);
    expect(both.framer.headParsed?.closes).toBe(true);
    expect(frame(['HTTP/1.1 200 OK\r\n\r\n'], true).framer.headParsed).toEqual({ status: 200, closes: true });
    expect(frame(['HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n'], true).framer.headParsed?.closes).toBe(false);
    expect(
      frame(['HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n']).framer.headParsed?.closes,
    ).toBe(false);
  });

  it('refuses a head larger than 16 KiB (Node’s limit), even in small reads', () => {
    const framer = new ResponseFramer(false);
    const line = `X-Filler: ${'a'.repeat(1000)}\r\n`;
    expect(() => {
      framer.feed(Buffer.from('HTTP/1.1 200 OK\r\n'), () => undefined);
      for (let i = 0; i < 70; i += 1) framer.feed(Buffer.from(line), () => undefined);
    }).toThrow(/head too large/);
  });
});
