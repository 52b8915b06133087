import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { uncaughtErrors } from '../support/uncaught.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, startLogin } from '../support/oauth-flow.ts';
import { request } from '../support/raw-http.ts';
import { rawExchange } from '../support/raw-socket.ts';

/**
 * A provider vouches for addresses in any script (an IDN domain, a local part in Cyrillic or CJK),
 * and the share's patterns admit them. Node's HTTP client refuses a header character past U+00FF:
 * the svc-auth-email header of such a visitor threw inside the frontend's request and upgrade
 * handlers (its process, every share in it, gone), and the fast path, writing heads as Latin-1,
 * kept only each character's low byte (`šlice@example.com` reached the backend as
 * `alice@example.com`). The backend gets the address's UTF-8 bytes on every path.
 */
const figures = suiteFigures('email-header');
const carried = figures.attackClass(
  'A provider-verified address with characters past U+00FF reaches the backend (GET fast path, POST, WebSocket)',
  'the frontend exited on POST and WebSocket upgrades (Node refuses the header); the fast path sent each character’s low byte (šlice@ as alice@): UTF-8 bytes now',
);
const uncaught = uncaughtErrors();

const ADDRESSES = ['šlice@example.com', '例え@example.com', 'ü@bücher.example.com'];
let idp1: Idp1Server;
let backend: EchoBackend;
let fe: TestFrontend;
const cookies = new Map<string, string>();

beforeAll(async () => {
  [idp1, backend] = await Promise.all([startIdp1Server(), startEchoBackend()]);
  fe = await startTestFrontend({
    providers: [idp1.providerConfig('idp1')],
    shares: [
      {
        token: 'corp',
        target: backend.url.href,
        oauth_provider: 'idp1',
        oauth_email_address_patterns: ['*@example.com', '*@*.example.com'],
      },
    ],
  });
  idp1.redirectUris = [`http://${fe.authHost}/idp1/auth/callback`];
  for (const email of ADDRESSES) {
    idp1.nextUser = { email, email_verified: true };
    const { authorizeUrl, loginCookie } = await startLogin(fe, 'corp');
    const done = await callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
    expect(done.status).toBe(302);
    cookies.set(email, cookiesFrom(done));
  }
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  await Promise.all([idp1?.close(), backend?.close()]);
});

/** The address the backend's last request carried, its header bytes read as UTF-8. */
function lastSeenEmail(): string {
  const value = backend.seen.at(-1)?.headers['svc-auth-email'];
  return Buffer.from(String(value), 'latin1').toString('utf8');
}

describe.each(ADDRESSES)('%s', (email) => {
  it.each(['GET', 'POST'])('%s: the backend gets the exact address', (method) =>
    carried.run(async () => {
      const reply = await request(fe.port, '/', {
        method,
        host: fe.host('corp'),
        headers: { cookie: cookies.get(email) as string },
        ...(method === 'POST' ? { body: 'x' } : {}),
        timeoutMs: 10_000,
      });
      expect(reply.status).toBe(200);
      expect(lastSeenEmail()).toBe(email);
      expect(uncaught).toEqual([]);
    }),
  );

  it('WebSocket upgrade: switched, the backend gets the exact address', () =>
    carried.run(async () => {
      const reply = await rawExchange(
        fe.port,
        `GET / HTTP/1.1\r\nhost: ${fe.host('corp')}\r\ncookie: ${cookies.get(email) as string}\r\n` +
          'connection: upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\n' +
          'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        500,
      );
      expect(reply.text).toMatch(/^HTTP\/1\.1 101 /);
      expect(lastSeenEmail()).toBe(email);
      expect(uncaught).toEqual([]);
    }));
});
