import { expect } from 'vitest';
import type { TestFrontend } from './frontend.ts';
import { cookiesFrom, get, type Reply } from './http.ts';

/** Steps of the browser's side of a login, driven over HTTP with cookies carried by hand. */
export const shareUrl = (f: TestFrontend, token: string, path = '/'): string => `http://${f.host(token)}${path}`;

/**
 * Visits a share without a session: the share host sets its binding cookie and sends the browser
 * to the endpoint host's start path, which sets the login cookie (host-only) and sends it on to the
 * provider. `loginCookie` is the browser's cookies of this login: the share host's binding cookie
 * and the endpoint host's login cookie (each host ignores the other's).
 */
export async function startLogin(
  f: TestFrontend,
  token: string,
  path = '/',
  loginCookie?: string,
): Promise<{ authorizeUrl: URL; loginCookie: string }> {
  const shareReply = await get(f.port, f.host(token), path, loginCookie ? { headers: { cookie: loginCookie } } : {});
  const started = await followStart(f, shareReply, loginCookie);
  expect(started.status).toBe(302);
  const cookies = mergeCookies(loginCookie, cookiesFrom(shareReply), cookiesFrom(started));
  return { authorizeUrl: new URL(started.headers.location ?? ''), loginCookie: cookies };
}

/** A cookie header with later pairs replacing earlier ones of the same name. */
function mergeCookies(...headers: (string | undefined)[]): string {
  const jar = new Map<string, string>();
  for (const pair of headers.flatMap((h) => (h ? h.split('; ') : []))) jar.set(pair.split('=')[0] ?? '', pair);
  return [...jar.values()].join('; ');
}

/**
 * The browser arriving back at the frontend's callback with its login cookie, and following the
 * callback's redirect to the share host's hand-over with the same cookies (its binding cookie among
 * them). The reply is the hand-over's (302 to the original share URL, the session cookie), with the
 * callback's Set-Cookie (the login cookie) after its own; a callback refused is returned as it is.
 */
export async function callback(f: TestFrontend, callbackUrl: URL, loginCookie: string): Promise<Reply> {
  expect(callbackUrl.host).toBe(f.authHost);
  const done = await get(f.port, callbackUrl.host, `${callbackUrl.pathname}${callbackUrl.search}`, {
    headers: { cookie: loginCookie },
  });
  if (done.status !== 302 || !/\/auth\/handover\?/.test(done.headers.location ?? '')) return done;
  const handOver = await followHandOver(f, done, loginCookie);
  const setCookie = [...(handOver.headers['set-cookie'] ?? []), ...(done.headers['set-cookie'] ?? [])];
  return { ...handOver, headers: { ...handOver.headers, 'set-cookie': setCookie } };
}

/** The browser following a callback's redirect to the share host's hand-over path with `cookie`. */
export function followHandOver(f: TestFrontend, callbackReply: Reply, cookie: string | undefined): Promise<Reply> {
  const to = new URL(callbackReply.headers.location ?? '');
  expect(to.pathname).toMatch(/^\/[\w-]+\/auth\/handover$/);
  return get(f.port, to.host, `${to.pathname}${to.search}`, cookie ? { headers: { cookie } } : {});
}

/**
 * The browser following a share host's login redirect to the endpoint host's start path (with its
 * login cookie there, if any): the reply is the endpoint host's (302 to the provider, login cookie).
 */
export function followStart(f: TestFrontend, shareReply: Reply, loginCookie?: string): Promise<Reply> {
  expect(shareReply.status).toBe(302);
  // The share host's one cookie here is its binding cookie, host-only.
  const set = shareReply.headers['set-cookie'] ?? [];
  expect(set).toHaveLength(1);
  expect(set[0]).toMatch(/^(__Host-)?[^=]+-bind=[\w-]{43}; Path=\/; /);
  expect(set[0]).not.toMatch(/domain=/i);
  const start = new URL(shareReply.headers.location ?? '');
  expect(start.host).toBe(f.authHost);
  expect(start.pathname).toMatch(/^\/[\w-]+\/auth\/start$/);
  return get(f.port, start.host, `${start.pathname}${start.search}`, {
    headers: loginCookie ? { cookie: loginCookie } : {},
  });
}

/** Where the browser lands after a share host's login redirect and the endpoint host's start: the provider. */
export async function providerRedirect(f: TestFrontend, shareReply: Reply, loginCookie?: string): Promise<Reply> {
  const started = await followStart(f, shareReply, loginCookie);
  expect(started.status).toBe(302);
  return started;
}
