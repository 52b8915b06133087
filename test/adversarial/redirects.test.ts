import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, followStart } from '../support/oauth-flow.ts';
import { rawExchange } from '../support/raw-socket.ts';

/**
 * Open redirects on both places the frontend sends a browser: `redirect_url` after logout and the
 * original URL after login. The payloads are oauth2-proxy's corpus (which assumes the allowed
 * domain `whitelisteddomain.tld`) plus one list per class of URL-parser confusion. The only
 * acceptable outcomes are a refusal or a `Location` on a host this frontend serves.
 */
const figures = suiteFigures('redirects');
const DOMAIN = 'whitelisteddomain.tld';
const corpus = readFileSync(new URL('../data/openredirects.txt', import.meta.url), 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '');

/** Parser-confusion classes beyond the corpus, each aimed at leaving for evil.example. */
const OWN_CASES: Record<string, string[]> = {
  backslashes: [
    '/\\evil.example',
    '\\\\evil.example',
    '/\\/evil.example',
    'https:\\\\evil.example',
    `https://www.${DOMAIN}\\@evil.example`,
    `https://evil.example\\.${DOMAIN}`,
  ],
  'control characters': [
    '/\t/evil.example',
    '/\n/evil.example',
    '/\r\n/evil.example',
    '/%09/evil.example',
    '/%0d%0a/evil.example',
    '\u0000//evil.example',
    ' //evil.example',
    '/\u00a0/evil.example',
  ],
  'scheme-relative': [
    '//evil.example',
    '///evil.example',
    '////evil.example/',
    '//evil.example:443/',
    '//%65vil.example',
  ],
  'scheme-confused': [
    'https:evil.example',
    'https:/evil.example',
    'http:/\\evil.example',
    'HTTPS://evil.example',
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    'ftp://evil.example',
    `//${DOMAIN}@evil.example`,
  ],
  'user-info': [
    `https://www.${DOMAIN}@evil.example`,
    `https://www.${DOMAIN}:1@evil.example`,
    `https://user:pass@www.${DOMAIN}`,
    `https://evil.example@www.${DOMAIN}`,
    `https://www.${DOMAIN}%40evil.example`,
    `https://www.${DOMAIN}%2540evil.example`,
  ],
  'fragment or query before @': [
    `https://evil.example#@www.${DOMAIN}`,
    `https://evil.example?@www.${DOMAIN}`,
    `https://evil.example/#@www.${DOMAIN}`,
    `https://evil.example;@www.${DOMAIN}`,
    `https://evil.example%23@www.${DOMAIN}`,
  ],
  'look-alike host suffixes': [
    `https://www.${DOMAIN}.evil.example`,
    `https://evil${DOMAIN}`,
    `https://www.evil-${DOMAIN}`,
    `https://${DOMAIN}.`,
    `https://www.${DOMAIN}.`,
    `https://nosuchshare.${DOMAIN}`,
    `https://www.${DOMAIN}:1.evil.example`,
  ],
  IDN: [
    `https://www.${DOMAIN}\u3002evil.example`,
    `https://www.${DOMAIN}%E3%80%82evil.example`,
    `https://www.whitelisteddomaın.tld`, // dotless i
    `https://www.whitelisteddomаin.tld`, // Cyrillic а
    'https://xn--www-evil-example-x3b.tld',
    `https://www.${DOMAIN}\uff0fevil.example`, // fullwidth solidus
    `https://evil.example\u2044${DOMAIN}`, // fraction slash
  ],
  'numeric and IP hosts': ['http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://127.1/', 'http://0/'],
};
const ownCount = Object.values(OWN_CASES).reduce((n, list) => n + list.length, 0);

let idp1: Idp1Server;
let backend: EchoBackend;
let fe: TestFrontend;
let allowed: Set<string>;

beforeAll(async () => {
  [idp1, backend] = await Promise.all([startIdp1Server(), startEchoBackend()]);
  fe = await startTestFrontend({
    providers: [idp1.providerConfig('idp1')],
    shares: [
      { token: 'www', target: backend.url.href, oauth_provider: 'idp1' },
      { token: 'app', target: backend.url.href },
    ],
    oauth: { endpoint_url: `https://auth.${DOMAIN}:1`, cookie_domain: DOMAIN },
    domain: DOMAIN,
  });
  idp1.redirectUris = [`https://${fe.authHost}/idp1/auth/callback`];
  allowed = new Set([fe.authHost, fe.host('www'), fe.host('app')]);
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  await Promise.all([idp1?.close(), backend?.close()]);
});

/** Where a Location leads, judged the way a browser would resolve it. */
function staysHome(location: string): boolean {
  const url = new URL(location);
  return url.protocol === 'https:' && allowed.has(url.host) && url.username === '' && url.password === '';
}

describe('redirect_url after logout', () => {
  const logout = (payload: string) =>
    get(fe.port, fe.authHost, `/idp1/logout?redirect_url=${encodeURIComponent(payload)}`);

  it(`never leaves the frontend's hosts for the ${corpus.length} corpus payloads`, async () => {
    const tally = figures.attackClass('Open redirect: logout redirect_url, oauth2-proxy corpus');
    let followed = 0;
    for (const payload of corpus) {
      await tally.run(async () => {
        const reply = await logout(payload);
        expect([302, 400], payload).toContain(reply.status);
        if (reply.status === 302) {
          followed += 1;
          expect(staysHome(reply.headers.location ?? ''), `${payload} -> ${reply.headers.location}`).toBe(true);
        }
      });
    }
    expect(followed).toBeGreaterThan(0);
  });

  it(`never leaves the frontend's hosts for ${ownCount} parser-confusion payloads`, async () => {
    const tally = figures.attackClass('Open redirect: logout redirect_url, own parser-confusion classes');
    for (const [kind, payloads] of Object.entries(OWN_CASES)) {
      for (const payload of payloads) {
        await tally.run(async () => {
          const reply = await logout(payload);
          expect([302, 400], `${kind}: ${payload}`).toContain(reply.status);
          if (reply.status === 302) expect(staysHome(reply.headers.location ?? ''), `${kind}: ${payload}`).toBe(true);
        });
      }
    }
  });

  it('follows legitimate targets, absolute and relative', async () => {
    for (const [payload, expected] of [
      [`https://${fe.host('app')}/x?y=1`, `https://${fe.host('app')}/x?y=1`],
      ['/signed-out', `https://${fe.authHost}/signed-out`],
    ] as const) {
      const reply = await logout(payload);
      expect([reply.status, reply.headers.location]).toEqual([302, expected]);
    }
  });
});

describe('the original URL after login', () => {
  /**
   * Visits the OAuth share with `target` as the raw request target, logs in at the provider, and
   * returns where the callback sends the browser (undefined when the frontend refused the request).
   */
  async function afterLogin(target: string): Promise<string | undefined> {
    const start = await rawExchange(
      fe.port,
      `GET ${target} HTTP/1.1\r\nHost: ${fe.host('www')}\r\nConnection: close\r\n\r\n`,
      3_000,
    );
    if (start.status !== 302) {
      expect(start.status, target).toBeGreaterThanOrEqual(400);
      return undefined;
    }
    const head = start.text.slice(0, start.text.indexOf('\r\n\r\n'));
    const location = /\r\nlocation: ([^\r\n]+)/i.exec(head)?.[1] ?? '';
    const setBind = /\r\nset-cookie: ([^\r\n]+)/i.exec(head)?.[1] ?? '';
    const reply = { status: start.status, headers: { location, 'set-cookie': [setBind] }, body: '' };
    const started = await followStart(fe, reply);
    const bindCookie = setBind.split(';')[0] ?? '';
    const loginCookie = `${bindCookie}; ${(started.headers['set-cookie']?.[0] ?? '').split(';')[0] ?? ''}`;
    const done = await callback(fe, await idp1.authorize(started.headers.location ?? ''), loginCookie);
    expect(done.status, target).toBe(302);
    return done.headers.location;
  }

  const candidates = (payload: string): string[] => (payload.startsWith('/') ? [payload] : [payload, `/${payload}`]);

  it(`lands on the share host for every corpus payload used as the original URL`, async () => {
    const tally = figures.attackClass('Open redirect: post-login target, oauth2-proxy corpus (as sent and behind /)');
    let landed = 0;
    for (const payload of corpus) {
      for (const target of candidates(payload)) {
        await tally.run(async () => {
          const location = await afterLogin(target);
          if (location === undefined) return;
          landed += 1;
          expect(new URL(location).host, `${target} -> ${location}`).toBe(fe.host('www'));
          expect(location.startsWith(`https://${fe.host('www')}/`), location).toBe(true);
        });
      }
    }
    expect(landed).toBeGreaterThan(corpus.length / 2);
  }, 120_000);

  it('lands on the share host for every parser-confusion payload used as the original URL', async () => {
    const tally = figures.attackClass('Open redirect: post-login target, own parser-confusion classes');
    for (const payloads of Object.values(OWN_CASES)) {
      for (const payload of payloads) {
        for (const target of candidates(payload)) {
          await tally.run(async () => {
            const location = await afterLogin(target);
            if (location !== undefined) expect(new URL(location).host, `${target} -> ${location}`).toBe(fe.host('www'));
          });
        }
      }
    }
  }, 60_000);

  it('keeps the path and query of a legitimate original URL', async () => {
    expect(await afterLogin('/deep/path?x=1&y=%2F')).toBe(`https://${fe.host('www')}/deep/path?x=1&y=%2F`);
  });
});
