import { expect } from 'vitest';
import { testOAuthSection } from './frontend.ts';
import { cookiesFrom, get, type Reply } from './http.ts';
import type { TestIssuer } from './test-issuer.ts';

/**
 * The auth endpoint's `oauth:` section (the installation's: test keys, client secrets, an internal
 * port on 127.0.0.1:0) for shares under `domain`; a share pod's is made from it (lib/config/share-pod.ts).
 */
export function authEndpointSection(domain: string, providers: Record<string, unknown>[]): Record<string, unknown> {
  return { ...testOAuthSection(domain, providers), internal_address: '127.0.0.1:0' };
}

/** A share pod and its auth endpoint as a browser reaches them: ports on 127.0.0.1, routed by Host. */
export interface SharePodShape {
  readonly podPort: number;
  readonly authPort: number;
  /** `<token>.<domain>[:port]`, the share host. */
  readonly shareHost: string;
  /** The provider's name in the paths. */
  readonly provider: string;
}

/**
 * A login at a share pod, driven over HTTP as the browser makes it: the pod's redirect to the auth
 * endpoint's start path, the test issuer's answer (its ID token carries the login's nonce), the auth
 * endpoint's callback, and the pod's hand-over with the binding cookie. Returns the last reply (the
 * hand-over's, or the callback's when it refused) and the session cookie pair it set, if any.
 */
export async function loginAtSharePod(
  shape: SharePodShape,
  issuer: TestIssuer,
  cookie = '',
): Promise<{ reply: Reply; cookie: string }> {
  const visited = await get(shape.podPort, shape.shareHost, '/page', cookie ? { headers: { cookie } } : {});
  expect(visited.status).toBe(302);
  const startUrl = new URL(visited.headers.location ?? '');
  const start = await get(shape.authPort, startUrl.host, `${startUrl.pathname}${startUrl.search}`);
  expect(start.status).toBe(302);
  const authorizeUrl = new URL(start.headers.location ?? '');
  const nonce = authorizeUrl.searchParams.get('nonce') ?? '';
  const claims = issuer.behaviour.claims;
  issuer.behaviour.claims = (base) => claims({ ...base, nonce });
  try {
    const back = new URL(`/${shape.provider}/auth/callback`, startUrl);
    back.searchParams.set('code', 'code-1');
    back.searchParams.set('state', authorizeUrl.searchParams.get('state') ?? '');
    back.searchParams.set('iss', issuer.issuer);
    const loginCookie = [cookie, cookiesFrom(start)].filter(Boolean).join('; ');
    const done = await get(shape.authPort, back.host, `${back.pathname}${back.search}`, {
      headers: { cookie: loginCookie },
    });
    if (done.status !== 302) return { reply: done, cookie: '' };
    const handOver = new URL(done.headers.location ?? '');
    expect(handOver.pathname).toBe(`/${shape.provider}/auth/handover`);
    const bound = [cookie, cookiesFrom(visited)].filter(Boolean).join('; ');
    const reply = await get(shape.podPort, handOver.host, `${handOver.pathname}${handOver.search}`, {
      headers: { cookie: bound },
    });
    return { reply, cookie: cookiesFrom(reply) };
  } finally {
    issuer.behaviour.claims = claims;
  }
}

/** The session cookie's `name=value` pair among a Cookie header's pairs (the binding cookie left out). */
export function sessionPair(cookie: string, name = 'svc-auth-session'): string {
  return cookie.split('; ').find((pair) => pair.startsWith(`${name}=`)) ?? '';
}
