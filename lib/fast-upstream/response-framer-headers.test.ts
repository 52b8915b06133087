import { describe, expect, it } from 'vitest';
import { BackendCookies } from '../backend-cookies.ts';
import { ResponseFramer } from './response-framer.ts';

const cookies = new BackendCookies('svc-auth-session', 'svc.example').forShare('app');

/** The head the fast path relays for `head` (a whole response head without a body). */
function relayedHead(head: string): string {
  const framer = new ResponseFramer(false, cookies);
  let relayed = '';
  framer.feed(Buffer.from(`${head}\r\n\r\n`, 'latin1'), (data) => {
    relayed += typeof data === 'string' ? data : data.toString('latin1');
  });
  expect(framer.done).toBe(true);
  return relayed;
}

describe('the response head the fast path relays', () => {
  it("drops the frontend's own cookies wherever the line stands, and Set-Cookie2", () => {
    expect(
      relayedHead(
        'HTTP/1.1 200 OK\r\nSET-COOKIE: svc-auth-session=x; Domain=svc.example\r\nset-cookie: a=1\r\nSet-Cookie2: b=2\r\nContent-Length: 0\r\nSet-Cookie: =svc-auth-session-login=y',
      ),
    ).toBe('HTTP/1.1 200 OK\r\nset-cookie: a=1\r\nContent-Length: 0\r\n\r\n');
  });

  it('rewrites a Domain that covers other shares, first, middle or last line', () => {
    expect(
      relayedHead(
        'HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Domain=svc.example\r\nContent-Length: 0\r\nSet-Cookie: b=2; Domain=app.svc.example\r\nSet-Cookie:  c=3;Domain=example ',
      ),
    ).toBe(
      'HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nContent-Length: 0\r\nSet-Cookie: b=2; Domain=app.svc.example\r\nSet-Cookie: c=3\r\n\r\n',
    );
  });

  it('drops the headers the backend names in Connection, before or after it, but never its framing', () => {
    expect(
      relayedHead(
        'HTTP/1.1 200 OK\r\nX-Secret: 1\r\nConnection: x-secret, X-Other, content-length\r\nContent-Length: 0\r\nx-other: 2\r\nX-Kept: 3',
      ),
    ).toBe('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Kept: 3\r\n\r\n');
  });
});
