import { expect } from 'vitest';
import type { TestFrontend } from './frontend.ts';
import { cookiesFrom, get, type Reply } from './http.ts';

/** Steps of the browser's side of a login, driven over HTTP with cookies carried by hand. */
export const shareUrl = (f: TestFrontend, token: string, path = '/'): string => `http://${f.host(token)}${path}`;

/** Visits a share without a session: the frontend must send the browser to the provider. */
export async function startLogin(
  f: TestFrontend,
  token: string,
  path = '/',
): Promise<{ authorizeUrl: URL; loginCookie: string }> {
  const reply = await get(f.port, f.host(token), path);
  expect(reply.status).toBe(302);
  return { authorizeUrl: new URL(reply.headers.location ?? ''), loginCookie: cookiesFrom(reply) };
}

/** The browser arriving back at the frontend's callback with its login cookie. */
export function callback(f: TestFrontend, callbackUrl: URL, loginCookie: string): Promise<Reply> {
  expect(callbackUrl.host).toBe(f.authHost);
  return get(f.port, callbackUrl.host, `${callbackUrl.pathname}${callbackUrl.search}`, {
    headers: { cookie: loginCookie },
  });
}
