import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import { tunnelledShares } from '../../sidecar/tunnel/routes.ts';
import { launchBrowser } from '../support/browser.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures, type AttackTally } from '../support/figures.ts';
import { LogCapture, startTestFrontend, testFrontendConfig, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, startLogin } from '../support/oauth-flow.ts';

/**
 * A share's backend is its owner's code, and every share lives under the domain the frontend's own
 * cookies are set for. A hostile backend here answers with the frontend's cookies in every spelling
 * a browser would take, with Domain attributes that cover other shares, and with headers it names
 * in its own Connection header; behind a real frontend (an open share and an OAuth share, on the
 * fast path and Node's path, and through a tunnel), none of it may reach the visitor, while a
 * backend's ordinary cookie for its own host still does. A real browser then plays the measured
 * attack end to end: logged in as alice on one share, it visits the attacker's share, and the
 * first share must still see alice.
 */
const figures = suiteFigures('backend-cookies');
const DOMAIN = 'svc.localhost';
const TUNNEL_DOMAIN = 'tunnel.localhost';
const ENV_TOKEN = 'svcv_aaaaaaaaaaaa_secret-of-environment-a-0123456789abcdefghijk';

/** A share backend on raw sockets: `respond` writes the header lines of each answer. */
interface RawBackend {
  readonly url: URL;
  /** The request heads it read, newest last. */
  readonly heads: string[];
  close(): Promise<void>;
}

async function startRawBackend(respond: (head: string) => string): Promise<RawBackend> {
  const heads: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = '';
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        heads.push(head);
        // An answer starting with `BODY:` is the page itself, served as HTML without extra headers.
        const answer = respond(head);
        // `SWITCH:` answers an upgrade with a 101 carrying these header lines, then goes quiet.
        if (answer.startsWith('SWITCH:')) {
          socket.write(`HTTP/1.1 101 Switching Protocols\r\n${answer.slice(7)}\r\n`, 'latin1');
          return;
        }
        const page = answer.startsWith('BODY:');
        const body = page ? answer.slice(5) : 'ok';
        socket.write(
          `HTTP/1.1 ${/\r\nupgrade:/i.test(head) ? '400 No' : '200 OK'}\r\n${page ? '' : answer}Content-Type: text/html\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
          'latin1',
        );
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    heads,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** What the hostile backend answers on `/case/<n>`: extra header lines, each ending in CRLF. */
const cases: string[] = [];
const respond = (head: string): string => {
  const match = /^\S+ \/case\/(\d+)/.exec(head);
  return match ? (cases[Number(match[1])] ?? '') : (browserAnswer(head) ?? '');
};
let browserAnswer: (head: string) => string | undefined = () => undefined;

let idp1: Idp1Server;
let hostile: RawBackend;
let echo: EchoBackend;
let fe: TestFrontend;
/** `svc-auth-session=…` for the OAuth share `evilauth`. */
let session: string;
let tunnelled: { frontend: RunningFrontend; endpoint: TunnelEndpoint; tunnel: RunningTunnel };

class OneShareDirectory implements ShareDirectory {
  lookup(token: string): PublishedShare | undefined {
    if (token !== 'tun') return undefined;
    return {
      token,
      instance: 'tun-1',
      envZId: 'aaaaaaaaaaaa',
      accountId: 'mallory',
      shareMode: 'public',
      backendMode: 'proxy',
    };
  }
  authenticate(token: string): Promise<EnvironmentIdentity | undefined> {
    return Promise.resolve(token === ENV_TOKEN ? { envZId: 'aaaaaaaaaaaa', accountId: 'mallory' } : undefined);
  }
  onRevoked(): () => void {
    return () => undefined;
  }
}

async function login(token: string, email: string): Promise<string> {
  idp1.nextUser = { email, email_verified: true };
  const { authorizeUrl, loginCookie } = await startLogin(fe, token);
  const done = await callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
  expect(done.status).toBe(302);
  return cookiesFrom(done);
}

async function startTunnelled(): Promise<typeof tunnelled> {
  const logger = createLogger('frontend', { destination: new LogCapture() });
  const limits = DEFAULT_TUNNEL_LIMITS;
  const directory = new OneShareDirectory();
  const locator = new LocalTunnels(limits.maxTunnelsPerEnvironment);
  const endpoint = new TunnelEndpoint({ directory, locator, limits, logger });
  const oauth = testFrontendConfig({ providers: [idp1.providerConfig('idp1')], shares: [], domain: TUNNEL_DOMAIN });
  const frontend = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`http://auth.${TUNNEL_DOMAIN}:${port}`),
    domain: TUNNEL_DOMAIN,
    oauth: oauth.oauth,
    shares: tunnelledShares({ directory, locator, limits, logger }),
    logger,
    onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
  });
  const tunnel = startTunnel({
    url: tunnelUrl(`http://127.0.0.1:${frontend.port}`, TUNNEL_PATH),
    token: ENV_TOKEN,
    logger: createLogger('agent', { level: 'silent' }),
    resolve: (t) => (t === 'tun' ? { shareMode: 'public', backendUrl: hostile.url } : undefined),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  for (let i = 0; i < 200 && !(tunnel.connected && locator.find('aaaaaaaaaaaa')); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  expect(locator.find('aaaaaaaaaaaa')).toBeDefined();
  return { frontend, endpoint, tunnel };
}

beforeAll(async () => {
  [idp1, hostile, echo] = await Promise.all([startIdp1Server(), startRawBackend(respond), startEchoBackend()]);
  const patterns = ['*@example.com'];
  fe = await startTestFrontend({
    providers: [idp1.providerConfig('idp1')],
    shares: [
      { token: 'evil', target: hostile.url.href },
      { token: 'evilauth', target: hostile.url.href, oauth_provider: 'idp1', oauth_email_address_patterns: patterns },
      { token: 'b', target: echo.url.href, oauth_provider: 'idp1', oauth_email_address_patterns: patterns },
    ],
    domain: DOMAIN,
  });
  idp1.redirectUris = [`http://${fe.authHost}/idp1/auth/callback`];
  session = await login('evilauth', 'mallory@example.com');
  tunnelled = await startTunnelled();
});

afterAll(async () => {
  figures.write();
  await tunnelled?.tunnel.close();
  tunnelled?.endpoint.close();
  await tunnelled?.frontend.close();
  await fe?.close();
  await Promise.all([idp1?.close(), hostile?.close(), echo?.close()]);
});

/** One way a visitor's request reaches the hostile backend. */
interface Route {
  readonly name: string;
  send(path: string, headers?: Record<string, string>): Promise<Reply>;
  /** The fast path counts this request (a GET without a body on a plain-HTTP share). */
  readonly fast: boolean;
}

/** A reply as the visitor's client read it. */
interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
}

/**
 * One request on a kept-alive connection of its own (the fast path takes a connection's requests
 * from the first, and only while they ask for keep-alive); the connection is closed after it.
 */
function send(port: number, host: string, path: string, method: string, headers: Record<string, string>) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return new Promise<Reply>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, agent, headers: { host, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(method === 'POST' ? 'x' : undefined);
  }).finally(() => agent.destroy());
}
const direct = (token: string, method: 'GET' | 'POST', cookie = '', fast = false): Route => ({
  name: `${token} ${method}`,
  fast,
  send: (path, headers = {}) =>
    send(fe.port, fe.host(token), path, method, { ...(cookie ? { cookie } : {}), ...headers }),
});
const tunnelRoute = (method: 'GET' | 'POST'): Route => ({
  name: `tunnel ${method}`,
  fast: false,
  send: (path, headers = {}) =>
    send(tunnelled.frontend.port, `tun.${TUNNEL_DOMAIN}:${tunnelled.frontend.port}`, path, method, headers),
});
const upgradeRoute: Route = {
  name: 'evil upgrade refused',
  fast: false,
  send: (path, headers = {}) =>
    send(fe.port, fe.host('evil'), path, 'GET', {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      ...headers,
    }),
};
const routes = (): Route[] => [
  direct('evil', 'GET', '', true),
  direct('evil', 'POST'),
  direct('evilauth', 'GET', session, true),
  direct('evilauth', 'POST', session),
  tunnelRoute('GET'),
  tunnelRoute('POST'),
  upgradeRoute,
];

async function fastPathCount(): Promise<number> {
  const reply = await get(fe.frontend.metricsPort ?? 0, '127.0.0.1', '/metrics');
  return Number(/^svc_frontend_fast_path_requests_total (\d+)$/m.exec(reply.body)?.[1] ?? Number.NaN);
}

/** Sends one case on every route; `check` sees each reply. */
async function everyRoute(
  lines: string,
  check: (reply: Reply, route: Route) => void,
  tally: AttackTally,
  headers?: Record<string, string>,
  cutHolds = false,
): Promise<void> {
  cases.push(lines);
  const path = `/case/${cases.length - 1}`;
  for (const route of routes()) {
    await tally.run(async () => {
      const before = await fastPathCount();
      const reply = await route.send(path, headers).catch((err: unknown) => {
        // A connection cut before any answer passed nothing on, which is all some cases ask.
        if (cutHolds) return undefined;
        throw new Error(`${route.name}: ${String(err)}`);
      });
      if (!reply) return;
      if (route.fast) expect(await fastPathCount(), route.name).toBe(before + 1);
      check(reply, route);
    });
  }
}

const setCookies = (reply: Reply): string[] => reply.headers['set-cookie'] ?? [];

const ownCookies = figures.attackClass(
  "Cookie tossing: a backend sets the frontend's own cookies (every spelling, every path)",
  'relayed on the fast path, Node\u2019s path and the tunnel; now dropped on every path (lib/backend-cookies.ts)',
);

describe("a backend setting the frontend's own cookies", () => {
  const sealed = 'svc-auth-session=SEALED; Domain=svc.localhost; Path=/; HttpOnly';
  const spellings = [
    `Set-Cookie: ${sealed}`,
    'set-cookie: svc-auth-session=; Domain=svc.localhost; Path=/; Max-Age=0',
    'SET-COOKIE: svc-auth-session-login=x; Domain=svc.localhost; Path=/',
    'Set-Cookie: SVC-AUTH-SESSION=x; Domain=svc.localhost',
    'Set-Cookie:  svc-auth-session =x; Domain=svc.localhost',
    'Set-Cookie: \tsvc-auth-session\t=x',
    'Set-Cookie: "svc-auth-session"=x',
    'Set-Cookie: =svc-auth-session=x; Domain=svc.localhost; Path=/',
    'Set-Cookie: svc-auth-session',
    'Set-Cookie: __Secure-svc-auth-session=x; Secure; Path=/',
    'Set-Cookie: __Host-svc-auth-session=x; Secure; Path=/',
    'Set-Cookie: __HOST-svc-auth-session-login=x',
    'Set-Cookie: svc-auth-sessionX=1; Domain=svc.localhost',
    'Set-Cookie: a=1, svc-auth-session=x; Domain=svc.localhost',
    'Set-Cookie2: svc-auth-session=x; Version=1',
    'Set-Cookie: a=1\r\nSet-Cookie: svc-auth-session=x\r\nset-cookie: b=2',
  ];

  it('is dropped in every spelling on every path, and the backend cookie beside it is kept', async () => {
    for (const spelling of spellings) {
      await everyRoute(
        `${spelling}\r\nSet-Cookie: keep=1; Path=/\r\n`,
        (reply, route) => {
          expect(reply.status, route.name).toBe(route === upgradeRoute ? 400 : 200);
          const relayed = [...setCookies(reply), String(reply.headers['set-cookie2'] ?? '')];
          expect(
            relayed.filter((c) => c.toLowerCase().includes('svc-auth-session')),
            route.name,
          ).toEqual([]);
          expect(setCookies(reply), route.name).toContain('keep=1; Path=/');
          expect(reply.headers['set-cookie2'], route.name).toBeUndefined();
        },
        ownCookies,
      );
    }
  });

  it('a folded header never carries one through either (refused, cut, or joined into an attribute)', async () => {
    await everyRoute(
      'Set-Cookie: keep=1;\r\n svc-auth-session=x\r\n',
      (reply, route) => {
        // Joined by the parser, the second line is an attribute of the first cookie, which browsers ignore.
        const names = setCookies(reply).map((c) => c.split(';')[0] ?? '');
        expect(
          names.filter((c) => c.includes('svc-auth-session')),
          route.name,
        ).toEqual([]);
      },
      ownCookies,
      undefined,
      true,
    );
  });
});

const domains = figures.attackClass(
  'Cookie tossing: a backend cookie whose Domain covers other shares (rewritten host-only)',
  'relayed with its Domain, so it reached every share; now host-only (lib/backend-cookies.ts)',
);

describe('a backend cookie for the whole share domain', () => {
  /** The Domain attributes a relayed cookie still carries, lower-case, without a leading dot. */
  const domainsOf = (cookie: string): string[] =>
    cookie
      .split(';')
      .slice(1)
      .map((a) => a.trim())
      .filter((a) => /^domain\s*=/i.test(a))
      .map((a) => a.replace(/^domain\s*=\s*\.?/i, '').toLowerCase());

  it('loses any Domain but its own host on every path; its own host is kept', async () => {
    const foreign = [
      'pref=1; Domain=svc.localhost; Path=/',
      'pref=1; domain=.SVC.LOCALHOST',
      'pref=1; Domain=localhost',
      'pref=1; Domain=b.svc.localhost',
      'pref=1; Domain=tunnel.localhost',
      'pref=1; Domain=evil.svc.localhost; Domain=svc.localhost',
    ];
    for (const cookie of foreign) {
      await everyRoute(
        `Set-Cookie: ${cookie}\r\n`,
        (reply, route) => {
          const relayed = setCookies(reply);
          expect(relayed.length, route.name).toBe(1);
          expect(relayed[0]?.startsWith('pref=1'), route.name).toBe(true);
          const host = route.name.startsWith('tunnel')
            ? `tun.${TUNNEL_DOMAIN}`
            : `${route.name.split(' ')[0]}.${DOMAIN}`;
          for (const domain of domainsOf(relayed[0] ?? '')) expect(domain, route.name).toBe(host);
        },
        domains,
      );
    }
  });

  it('a cookie for its own host passes unchanged', async () => {
    await everyRoute(
      'Set-Cookie: mine=1; Path=/; HttpOnly\r\n',
      (reply, route) => {
        expect(setCookies(reply), route.name).toEqual(['mine=1; Path=/; HttpOnly']);
      },
      domains,
    );
  });
});

const connectionNamed = figures.attackClass(
  'Headers named in Connection relayed (RFC 9110 §7.6.1), responses and requests, every path',
  'the named headers were relayed both ways; now removed by one rule (lib/hop-by-hop.ts)',
);

describe('a backend switching protocols', () => {
  it("passes neither the frontend's cookies, nor a whole-domain Domain, nor Connection-named headers with its 101", async () => {
    cases.push(
      'SWITCH:Upgrade: websocket\r\nConnection: Upgrade, X-Secret\r\nX-Secret: 1\r\n' +
        `Set-Cookie: svc-auth-session=x; Domain=${DOMAIN}\r\nSet-Cookie: pref=1; Domain=${DOMAIN}\r\n`,
    );
    const path = `/case/${cases.length - 1}`;
    for (const token of ['evil', 'evilauth']) {
      await ownCookies.run(async () => {
        const headers = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
          const req = httpRequest({
            host: '127.0.0.1',
            port: fe.port,
            path,
            headers: {
              host: fe.host(token),
              connection: 'Upgrade',
              upgrade: 'websocket',
              ...(token === 'evilauth' ? { cookie: session } : {}),
            },
          });
          req.on('upgrade', (res, socket) => {
            socket.destroy();
            resolve(res.headers);
          });
          req.on('response', (res) => reject(new Error(`${token}: answered ${res.statusCode ?? 0}, not 101`)));
          req.on('error', reject);
          req.end();
        });
        expect(headers['set-cookie'], token).toEqual(['pref=1']);
        expect(headers['x-secret'], token).toBeUndefined();
        expect(headers.upgrade, token).toBe('websocket');
      });
    }
  });
});

describe('headers a sender names in its own Connection header', () => {
  it('are removed from responses, before or after the Connection line, on every path', async () => {
    const answers = [
      'Connection: x-secret\r\nX-Secret: 1\r\nX-Other: 2\r\n',
      'X-Secret: 1\r\nConnection: keep-alive, X-Secret\r\nX-Other: 2\r\n',
      'X-Secret: 1\r\nConnection: x-a\r\nConnection: X-SECRET\r\nX-Other: 2\r\n',
    ];
    for (const answer of answers) {
      await everyRoute(
        answer,
        (reply, route) => {
          expect(reply.headers['x-secret'], route.name).toBeUndefined();
          expect(reply.headers['x-other'], route.name).toBe('2');
        },
        connectionNamed,
      );
    }
  });

  it('are removed from requests on every path, and the Connection passed on names none of them', async () => {
    cases.push('');
    const path = `/case/${cases.length - 1}`;
    for (const route of routes()) {
      await connectionNamed.run(async () => {
        const count = hostile.heads.length;
        await route.send(path, {
          connection: route === upgradeRoute ? 'Upgrade, X-Hop, x-forwarded-for' : 'X-Hop, x-forwarded-for',
          'x-hop': '1',
          'x-stay': '1',
        });
        const head = hostile.heads.at(-1) ?? '';
        expect(hostile.heads.length, route.name).toBe(count + 1);
        expect(head, route.name).not.toMatch(/\r\nx-hop:/i);
        expect(head, route.name).toMatch(/\r\nx-stay: 1/i);
        expect(head, route.name).toMatch(/\r\nx-forwarded-for: /i);
        expect(head, route.name).not.toMatch(/\r\nconnection:[^\r]*(x-hop|x-forwarded-for)/i);
      });
    }
  });
});

const endToEnd = figures.attackClass(
  'Cookie tossing end to end in Chromium: alice on share B visits the attacker\u2019s share',
  'B saw alice as the attacker (a Set-Cookie, or a cookie its page\u2019s script wrote for a longer path) and the attacker could log her out; now B sees alice',
);

describe('the measured attack, in a real browser', () => {
  it("alice stays alice on B after the attacker's share hands her its sealed session, or a logout", async () => {
    const browser = await launchBrowser();
    try {
      const page = await browser.context.newPage();
      const emailOnB = async (): Promise<string | undefined> => {
        const response = await page.goto(`http://${fe.host('b')}/whoami`);
        expect(response?.status()).toBe(200);
        const seen = JSON.parse(await page.innerText('body')) as { headers: Record<string, string> };
        return seen.headers['svc-auth-email'];
      };
      // The attacker's own login on B, whose sealed cookie its backend will hand out.
      idp1.nextUser = { email: 'mallory@example.com', email_verified: true };
      expect(await emailOnB()).toBe('mallory@example.com');
      const mallory = (await browser.context.cookies()).find((c) => c.name === 'svc-auth-session')?.value ?? '';
      expect(mallory).not.toBe('');
      await browser.context.clearCookies();
      idp1.nextUser = { email: 'alice@example.com', email_verified: true };
      expect(await emailOnB()).toBe('alice@example.com');
      const attacks: Record<string, string> = {
        '/toss': `Set-Cookie: svc-auth-session=${mallory}; Domain=${DOMAIN}; Path=/; HttpOnly\r\n`,
        '/logout': `Set-Cookie: svc-auth-session=; Domain=${DOMAIN}; Path=/; Max-Age=0\r\n`,
        '/nameless': `Set-Cookie: =svc-auth-session=${mallory}; Domain=${DOMAIN}; Path=/whoami\r\n`,
      };
      browserAnswer = (head) => attacks[/^\S+ (\S+)/.exec(head)?.[1] ?? ''];
      for (const path of Object.keys(attacks)) {
        await endToEnd.run(async () => {
          const logins = idp1.authorizeRequests.length;
          // A page load (the fast path) and a POST from the page (Node's path) both carry the attack.
          await page.goto(`http://${fe.host('evil')}${path}`);
          await page.evaluate((p) => fetch(p, { method: 'POST', body: 'x' }).then((r) => r.status), path);
          expect(await emailOnB(), path).toBe('alice@example.com');
          // Still her own session: not logged out and back in behind the test's back.
          expect(idp1.authorizeRequests.length, path).toBe(logins);
        });
      }
      await endToEnd.run(async () => {
        // Script on the attacker's page writes the cookie itself, for a longer path than the
        // frontend's (HttpOnly keeps it from replacing that one): Chromium then sends both on that
        // path, the script's first. The frontend trusts neither copy, so B never sees mallory.
        const shadow = `svc-auth-session=${mallory}; domain=${DOMAIN}; path=/whoami`;
        browserAnswer = () => `BODY:<script>document.cookie = ${JSON.stringify(shadow)}</script>`;
        await page.goto(`http://${fe.host('evil')}/script`);
        const seen = echo.seen.length;
        await emailOnB().catch(() => undefined);
        const emails = echo.seen.slice(seen).map((r) => r.headers['svc-auth-email']);
        expect(emails).not.toContain('mallory@example.com');
        browserAnswer = () => undefined;
        // That path is lost to alice until the script's cookie expires (the attacker can deny
        // service on a shared domain in any case); every other path still serves her as herself.
        const other = await browser.context.newPage();
        const root = await other.goto(`http://${fe.host('b')}/`);
        expect(JSON.parse((await root?.text()) ?? '{}')).toMatchObject({
          headers: { 'svc-auth-email': 'alice@example.com' },
        });
      });
      await endToEnd.run(async () => {
        // The attacker's backend still keeps a cookie of its own, host-only.
        browserAnswer = () => `Set-Cookie: pref=dark; Domain=${DOMAIN}; Path=/\r\n`;
        const tab = await browser.context.newPage();
        await tab.goto(`http://${fe.host('evil')}/pref`);
        const pref = (await browser.context.cookies()).filter((c) => c.name === 'pref');
        expect(pref.map((c) => c.domain)).toEqual([`evil.${DOMAIN}`]);
        browserAnswer = () => undefined;
        await tab.goto(`http://${fe.host('b')}/`);
        expect(echo.seen.at(-1)?.headers.cookie ?? '').not.toContain('pref=');
      });
    } finally {
      browserAnswer = () => undefined;
      await browser.close();
    }
  });
});
