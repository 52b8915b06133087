import { describe, expect, it } from 'vitest';
import { trimOws } from '../../lib/fast-upstream/head-text.ts';
import { MAX_REQUEST_HEAD_BYTES, parseRequestHead } from './request-head.ts';

const SOCKET = { remoteAddress: '10.0.0.1' };

function head(lines: readonly string[]): string {
  return lines.join('\r\n');
}

describe('parseRequestHead', () => {
  it('takes a browser-style GET: lower-case names, values trimmed, one value each', () => {
    const request = parseRequestHead(
      head([
        'GET /docs/a.html?x=1 HTTP/1.1',
        'Host: docs.svc.example.com',
        'Connection: keep-alive',
        'Cookie: a=1; b=2',
        'Accept:   text/html  ',
      ]),
      SOCKET,
    );
    expect(request).toMatchObject({ method: 'GET', url: '/docs/a.html?x=1', host: 'docs.svc.example.com' });
    expect({ ...request?.headers }).toEqual({
      host: 'docs.svc.example.com',
      connection: 'keep-alive',
      cookie: 'a=1; b=2',
      accept: 'text/html',
    });
    expect(Object.getPrototypeOf(request?.headers)).toBe(null);
  });

  it('takes HEAD, and a header named like an Object property as a plain header', () => {
    const request = parseRequestHead(head(['HEAD / HTTP/1.1', 'Host: a', '__proto__: x', 'constructor: y']), SOCKET);
    expect(request?.method).toBe('HEAD');
    expect(request?.headers['__proto__']).toBe('x');
    expect(request?.headers['constructor']).toBe('y');
  });

  it.each([
    ['a body (Content-Length)', ['GET / HTTP/1.1', 'Host: a', 'Content-Length: 0']],
    ['a body (Transfer-Encoding)', ['GET / HTTP/1.1', 'Host: a', 'Transfer-Encoding: chunked']],
    ['Content-Length spelled with an underscore', ['GET / HTTP/1.1', 'Host: a', 'Content_Length: 5']],
    ['another method', ['POST / HTTP/1.1', 'Host: a']],
    ['a lower-case method', ['get / HTTP/1.1', 'Host: a']],
    ['HTTP/1.0', ['GET / HTTP/1.0', 'Host: a']],
    ['an absolute-form target', ['GET http://a/ HTTP/1.1', 'Host: a']],
    ['a target with a space', ['GET /a b HTTP/1.1', 'Host: a']],
    ['no Host', ['GET / HTTP/1.1', 'Accept: */*']],
    ['two Host headers', ['GET / HTTP/1.1', 'Host: a', 'Host: b']],
    ['a repeated header in another case', ['GET / HTTP/1.1', 'Host: a', 'Cookie: x=1', 'cookie: y=2']],
    ['an upgrade', ['GET / HTTP/1.1', 'Host: a', 'Connection: Upgrade', 'Upgrade: websocket']],
    ['Expect', ['GET / HTTP/1.1', 'Host: a', 'Expect: 100-continue']],
    ['Connection: close', ['GET / HTTP/1.1', 'Host: a', 'Connection: close']],
    ['a space before the colon', ['GET / HTTP/1.1', 'Host : a']],
    ['a folded line', ['GET / HTTP/1.1', 'Host: a', 'X-A: 1', ' continued']],
    ['a control character in a value', ['GET / HTTP/1.1', 'Host: a', 'X-A: 1\u00002']],
    ['a byte above ASCII in a value', ['GET / HTTP/1.1', 'Host: a', 'X-A: caf\u00e9']],
  ])('leaves to Node a request with %s', (_, lines) => {
    expect(parseRequestHead(head(lines), SOCKET)).toBeUndefined();
  });

  it('leaves to Node a head with a bare LF or CR, and one over Node’s size limit', () => {
    expect(parseRequestHead('GET / HTTP/1.1\nHost: a', SOCKET)).toBeUndefined();
    expect(parseRequestHead('GET / HTTP/1.1\r\nHost: a\rX: 1', SOCKET)).toBeUndefined();
    const large = head(['GET / HTTP/1.1', 'Host: a', `X-Large: ${'a'.repeat(MAX_REQUEST_HEAD_BYTES)}`]);
    expect(parseRequestHead(large, SOCKET)).toBeUndefined();
  });

  it('leaves to Node a head of more header lines than Node’s server allows (1000), however short', () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `x${i.toString(36)}:`);
    expect(parseRequestHead(head(['GET / HTTP/1.1', 'Host: a', ...lines(999)]), SOCKET)).toBeDefined();
    expect(parseRequestHead(head(['GET / HTTP/1.1', 'Host: a', ...lines(1000)]), SOCKET)).toBeUndefined();
  });
});

describe('trimOws', () => {
  it('removes spaces and tabs around a value and nothing else', () => {
    expect(trimOws(' \t a b \t ')).toBe('a b');
    expect(trimOws('\u00a0x\u00a0')).toBe('\u00a0x\u00a0');
    expect(trimOws('   ')).toBe('');
  });

  it('leaves to Node a value of many spaces ending in a control character, and keeps one that ends in spaces', () => {
    const spaces = ' '.repeat(4 * 1024);
    expect(parseRequestHead(head(['GET / HTTP/1.1', 'Host: a', `X-A:${spaces}\u0001`]), SOCKET)).toBeUndefined();
    expect(
      parseRequestHead(head(['GET / HTTP/1.1', 'Host: a', `X-A:${spaces}v${spaces}`]), SOCKET)?.headers['x-a'],
    ).toBe('v');
  });
});
