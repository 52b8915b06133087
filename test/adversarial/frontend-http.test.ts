import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteFigures } from '../support/figures.ts';
import { UNREACHABLE_IDP1, startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { rawExchange } from '../support/raw-socket.ts';
import { mintSessionCookie } from '../support/session.ts';

/**
 * HTTP-level attacks on a running frontend, each with the bytes an attacker would send: Host
 * confusion (RFC 9112 §3.2), identity-header smuggling in every spelling on OAuth and non-OAuth
 * shares, forwarding headers, and request smuggling through conflicting framing. A recording
 * backend shows exactly what got through.
 */
interface Seen {
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  readonly trailers: Record<string, string | undefined>;
  readonly body: string;
}

const figures = suiteFigures('frontend-http');
const provider = UNREACHABLE_IDP1;

let backend: Server;
const seen: Seen[] = [];
let fe: TestFrontend;

beforeAll(async () => {
  backend = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        trailers: req.trailers,
        body,
      });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const target = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  fe = await startTestFrontend({
    providers: [provider],
    shares: [
      { token: 'open', target },
      { token: 'alpha', target, oauth_provider: 'google' },
    ],
  });
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  await new Promise((r) => {
    backend?.closeAllConnections();
    backend?.close(r);
  });
});

const request = (lines: readonly string[], body = ''): string => `${lines.join('\r\n')}\r\n\r\n${body}`;
const identityLike = (raw: readonly string[]): string[] =>
  raw.filter((_, i) => i % 2 === 0).filter((n) => n.toLowerCase().replace(/[_.]/g, '-').startsWith('svc-auth'));

describe('Host header confusion is refused with 400 (RFC 9112 §3.2)', () => {
  const host = () => fe.host('open');
  const cases: [string, () => string][] = [
    ['two identical Host headers', () => request(['GET / HTTP/1.1', `Host: ${host()}`, `Host: ${host()}`])],
    [
      'two Host headers naming different hosts',
      () => request(['GET / HTTP/1.1', `Host: ${host()}`, 'Host: evil.example']),
    ],
    ['two Host headers, differing in case', () => request(['GET / HTTP/1.1', `host: ${host()}`, `HOST: ${host()}`])],
    ['user-info before the share host', () => request(['GET / HTTP/1.1', `Host: evil@${host()}`])],
    ['user-info with password', () => request(['GET / HTTP/1.1', `Host: evil:pw@${host()}`])],
    ['the share host as user-info', () => request(['GET / HTTP/1.1', `Host: ${host()}@evil.example`])],
    ['a backslash', () => request(['GET / HTTP/1.1', `Host: evil.example\\@${host()}`])],
    ['a space inside', () => request(['GET / HTTP/1.1', `Host: open .svc.localhost:${fe.port}`])],
    ['a percent-escape', () => request(['GET / HTTP/1.1', `Host: open%2esvc.localhost:${fe.port}`])],
    ['an empty Host', () => request(['GET / HTTP/1.1', 'Host: '])],
    ['no Host at all (HTTP/1.1)', () => request(['GET / HTTP/1.1', 'Accept: */*'])],
    [
      'an absolute-form target naming another host',
      () => request(['GET http://evil.example/ HTTP/1.1', `Host: ${host()}`]),
    ],
    ['an absolute-form target naming the share', () => request([`GET http://${host()}/ HTTP/1.1`, `Host: ${host()}`])],
    ['a path-less target', () => request(['GET evil HTTP/1.1', `Host: ${host()}`])],
    [
      'two Host headers on a websocket upgrade',
      () =>
        request([
          'GET /ws HTTP/1.1',
          `Host: ${host()}`,
          'Host: evil.example',
          'Connection: Upgrade',
          'Upgrade: websocket',
          'Sec-WebSocket-Version: 13',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        ]),
    ],
  ];

  const tally = figures.attackClass(
    'Host confusion (duplicate, user-info, absolute-form, malformed)',
    'two Host headers and a Host with user-info were routed; now 400',
  );

  it.each(cases)('%s', (_name, bytes) =>
    tally.run(async () => {
      const before = seen.length;
      const reply = await rawExchange(fe.port, bytes());
      expect(reply.status).toBe(400);
      expect(seen.length).toBe(before);
    }),
  );

  it('still routes well-formed hosts, in any case', async () => {
    expect(
      (await rawExchange(fe.port, request(['GET / HTTP/1.1', `Host: ${host()}`, 'Connection: close']))).status,
    ).toBe(200);
    const upper = `OPEN.SVC.LOCALHOST:${fe.port}`;
    expect(
      (await rawExchange(fe.port, request(['GET / HTTP/1.1', `Host: ${upper}`, 'Connection: close']))).status,
    ).toBe(200);
  });
});

describe('identity headers: the backend sees only the frontend’s values, or none', () => {
  const spellings: [string, string][] = [
    ['svc-auth-email', 'evil@attacker.io'],
    ['SVC-AUTH-EMAIL', 'evil@attacker.io'],
    ['Svc-Auth-Email', 'evil@attacker.io'],
    ['svc_auth_email', 'evil@attacker.io'],
    ['svc.auth.email', 'evil@attacker.io'],
    ['svc_auth.email', 'evil@attacker.io'],
    ['SVC_AUTH_PROVIDER', 'evil'],
    ['svc-auth-expires', '2999-01-01T00:00:00Z'],
    ['svc-auth-future-header', 'x'],
  ];
  const tally = figures.attackClass('Identity header smuggling (OAuth and non-OAuth shares)');

  /** The last request the backend saw carries exactly the frontend's identity headers (or none). */
  const check = (token: 'open' | 'alpha'): void => {
    const last = seen[seen.length - 1]!;
    const expected = token === 'open' ? [] : ['svc-auth-email', 'svc-auth-expires', 'svc-auth-provider'];
    expect(identityLike(last.rawHeaders).sort()).toEqual(expected);
    if (token === 'alpha') {
      expect(last.headers['svc-auth-email']).toBe('alice@example.com');
      expect(last.headers['svc-auth-provider']).toBe('google');
    }
  };

  for (const token of ['open', 'alpha'] as const) {
    const cookie = () =>
      token === 'alpha'
        ? [['Cookie', mintSessionCookie({ share: 'alpha', provider: 'google' })] as [string, string]]
        : [];

    it.each(spellings)(`${token}: %s`, (name, value) =>
      tally.run(async () => {
        const reply = await get(fe.port, fe.host(token), '/', { rawHeaders: [[name, value], ...cookie()] });
        expect(reply.status).toBe(200);
        check(token);
      }),
    );

    it(`${token}: all spellings at once, twice each`, () =>
      tally.run(async () => {
        const reply = await get(fe.port, fe.host(token), '/', {
          rawHeaders: [...spellings, ...spellings, ...cookie()],
        });
        expect(reply.status).toBe(200);
        check(token);
      }));

    it(`${token}: identity header names listed in Connection`, () =>
      tally.run(async () => {
        const reply = await get(fe.port, fe.host(token), '/', {
          rawHeaders: [
            ['Connection', 'keep-alive, svc-auth-email, SVC_AUTH_PROVIDER, svc.auth.expires'],
            ['svc-auth-email', 'evil@attacker.io'],
            ...cookie(),
          ],
        });
        expect(reply.status).toBe(200);
        check(token);
      }));

    it(`${token}: an identity header in the trailers of a chunked body`, () =>
      tally.run(async () => {
        const session = cookie()[0];
        const reply = await rawExchange(
          fe.port,
          request(
            [
              'POST /upload HTTP/1.1',
              `Host: ${fe.host(token)}`,
              ...(session ? [`Cookie: ${session[1]}`] : []),
              'Transfer-Encoding: chunked',
              'Trailer: svc-auth-email',
              'Connection: close',
            ],
            '5\r\nhello\r\n0\r\nsvc-auth-email: evil@attacker.io\r\nsvc_auth_provider: evil\r\n\r\n',
          ),
        );
        expect(reply.status).toBe(200);
        const last = seen[seen.length - 1]!;
        expect(last.body).toBe('hello');
        expect(Object.keys(last.trailers)).toEqual([]);
        check(token);
      }));
  }

  it('refuses header lines no HTTP parser should accept (obs-fold, space before colon, NUL)', async () => {
    const malformed = [
      ['GET / HTTP/1.1', `Host: ${fe.host('open')}`, 'X-A: a', ' svc-auth-email: evil@attacker.io'],
      ['GET / HTTP/1.1', `Host: ${fe.host('open')}`, 'svc-auth-email : evil@attacker.io'],
      ['GET / HTTP/1.1', `Host: ${fe.host('open')}`, 'svc-auth-email\u0000: evil@attacker.io'],
    ];
    for (const lines of malformed) {
      await tally.run(async () => {
        const before = seen.length;
        const reply = await rawExchange(fe.port, request(lines));
        expect(reply.status).toBe(400);
        expect(seen.length).toBe(before);
      });
    }
  });
});

describe('forwarding headers are set from the frontend’s own view', () => {
  const tally = figures.attackClass(
    'Forwarding headers (Forwarded, X-Real-IP, X-Forwarded-*, look-alikes)',
    'client Forwarded and X-Real-IP reached the backend unchanged; now set from the frontend’s view',
  );

  it('replaces Forwarded and X-Real-IP (and their look-alikes) as X-Forwarded-Host/Proto/Port are', () =>
    tally.run(async () => {
      const reply = await get(fe.port, fe.host('open'), '/', {
        rawHeaders: [
          ['Forwarded', 'for=203.0.113.7;host=evil.example;proto=https'],
          ['Forwarded', 'for=198.51.100.1'],
          ['X-Real-IP', '203.0.113.7'],
          ['X_Real_IP', '203.0.113.8'],
          ['x.forwarded.host', 'evil.example'],
          ['X_Forwarded_Proto', 'https'],
          ['X-Forwarded-Host', 'evil.example'],
        ],
      });
      expect(reply.status).toBe(200);
      const last = seen[seen.length - 1]!;
      expect(last.headers).toMatchObject({
        forwarded: `for=127.0.0.1;host="${fe.host('open')}";proto=http`,
        'x-real-ip': '127.0.0.1',
        'x-forwarded-host': fe.host('open'),
        'x-forwarded-proto': 'http',
      });
      const names = last.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      expect(names.filter((n) => /^x[_.]|_/.test(n))).toEqual([]);
      expect(names.filter((n) => n === 'forwarded')).toEqual(['forwarded']);
    }));
});

describe('request smuggling through conflicting framing', () => {
  const host = () => fe.host('open');
  const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
  const cases: [string, () => string][] = [
    [
      'Content-Length and Transfer-Encoding together (CL.TE)',
      () =>
        request(
          [
            'POST / HTTP/1.1',
            `Host: ${host()}`,
            `Content-Length: ${5 + smuggled.length}`,
            'Transfer-Encoding: chunked',
          ],
          `0\r\n\r\n${smuggled}`,
        ),
    ],
    [
      'two different Content-Length values',
      () => request(['POST / HTTP/1.1', `Host: ${host()}`, 'Content-Length: 0', 'Content-Length: 40'], smuggled),
    ],
    [
      'an obfuscated Transfer-Encoding',
      () =>
        request(
          ['POST / HTTP/1.1', `Host: ${host()}`, 'Transfer-Encoding: xchunked', 'Content-Length: 3'],
          `abc${smuggled}`,
        ),
    ],
    [
      'Transfer-Encoding with a space before the colon',
      () => request(['POST / HTTP/1.1', `Host: ${host()}`, 'Transfer-Encoding : chunked'], `0\r\n\r\n${smuggled}`),
    ],
    [
      'a chunk size with junk',
      () =>
        request(
          ['POST / HTTP/1.1', `Host: ${host()}`, 'Transfer-Encoding: chunked'],
          `5;\u0000\r\nhello\r\n0\r\n\r\n${smuggled}`,
        ),
    ],
  ];

  const tally = figures.attackClass('Request smuggling (CL.TE, duplicate CL, obfuscated TE)');

  it.each(cases)('%s: refused, nothing smuggled to the backend', (_name, bytes) =>
    tally.run(async () => {
      const before = seen.length;
      const reply = await rawExchange(fe.port, bytes());
      expect([400, 501]).toContain(reply.status);
      expect(seen.slice(before).map((s) => s.url)).not.toContain('/smuggled');
    }),
  );
});

/**
 * The fast path (sidecar/fast-path/) takes bodiless GETs itself and writes the backend a head of its
 * own; these are GETs dressed to carry a second request in what one parser or another could read as
 * a body. Whatever each is answered, every request that reaches the backend went through the
 * frontend's checks: none carries the identity the smuggled head claims.
 */
describe('request smuggling behind a GET (the fast path)', () => {
  const host = () => fe.host('open');
  const smuggled = () => `GET /smuggled HTTP/1.1\r\nHost: ${host()}\r\nsvc-auth-email: evil@attacker.io\r\n\r\n`;
  const cases: [string, () => string][] = [
    [
      'a GET with a Content-Length covering the next head',
      () => request(['GET / HTTP/1.1', `Host: ${host()}`, `Content-Length: ${smuggled().length}`], smuggled()),
    ],
    [
      'a GET with a chunked body ending before the next head',
      () => request(['GET / HTTP/1.1', `Host: ${host()}`, 'Transfer-Encoding: chunked'], `0\r\n\r\n${smuggled()}`),
    ],
    [
      'a GET with Content-Length spelled with an underscore',
      () => request(['GET / HTTP/1.1', `Host: ${host()}`, `Content_Length: ${smuggled().length}`], smuggled()),
    ],
    [
      'a GET with a space before the colon of Content-Length',
      () => request(['GET / HTTP/1.1', `Host: ${host()}`, `Content-Length : ${smuggled().length}`], smuggled()),
    ],
    [
      'a GET with Content-Length folded onto a continuation line',
      () =>
        request(['GET / HTTP/1.1', `Host: ${host()}`, 'X-A: 1', ` Content-Length: ${smuggled().length}`], smuggled()),
    ],
    [
      'a GET whose lines end in bare LF',
      () => `GET / HTTP/1.1\nHost: ${host()}\nContent-Length: ${smuggled().length}\n\n${smuggled()}`,
    ],
  ];

  const tally = figures.attackClass('Request smuggling behind a GET (fast path)');

  it.each(cases)('%s: nothing reaches the backend unchecked', (_name, bytes) =>
    tally.run(async () => {
      const before = seen.length;
      const reply = await rawExchange(fe.port, bytes());
      expect(reply.status).toBeGreaterThan(0);
      const reached = seen.slice(before);
      expect(reached.map((r) => r.headers['svc-auth-email'])).not.toContain('evil@attacker.io');
      expect(reached.flatMap((r) => identityLike(r.rawHeaders))).toEqual([]);
    }),
  );
});
