import { expect } from 'vitest';
import type { TestFrontend } from './frontend.ts';
import { cookiesFrom, get, type Reply } from './http.ts';

/** Steps of the browser's side of a login, driven over HTTP with cookies carried by hand. */
export const shareUrl = (f: TestFrontend, token: string, path = '/'): string => `http://${f.host(token)}${path}`;

/**
 * Visits a share without a session: the share host sends the browser to the endpoint host's start
 * path, which sets the login cookie (host-only) and sends it on to the provider.
 */
export async function startLogin(
  f: TestFrontend,
  token: string,
  path = '/',
  loginCookie?: string,
): Promise<{ authorizeUrl: URL; loginCookie: string }> {
  const started = await followStart(f, await get(f.port, f.host(token), path), loginCookie);
  expect(started.status).toBe(302);
  return { authorizeUrl: new URL(started.headers.location ?? ''), loginCookie: cookiesFrom(started) };
}

/** The browser arriving back at the frontend's callback with its login cookie. */
export function callback(f: TestFrontend, callbackUrl: URL, loginCookie: string): Promise<Reply> {
  expect(callbackUrl.host).toBe(f.authHost);
  return get(f.port, callbackUrl.host, `${callbackUrl.pathname}${callbackUrl.search}`, {
    headers: { cookie: loginCookie },
  });
}

/**
 * The browser following a share host's login redirect to the endpoint host's start path (with its
 * login cookie there, if any): the reply is the endpoint host's (302 to the provider, login cookie).
 */
export function followStart(f: TestFrontend, shareReply: Reply, loginCookie?: string): Promise<Reply> {
  expect(shareReply.status).toBe(302);
  expect(shareReply.headers['set-cookie']).toBeUndefined();
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
