import type { TestFrontend } from './frontend.ts';
import { cookiesFrom, get, type Reply } from './http.ts';
import { callback, startLogin } from './oauth-flow.ts';
import { TEST_CLIENT_ID, TEST_CLIENT_SECRET, type TestIssuer } from './test-issuer.ts';

/** An oidc provider entry of a test frontend's config, at the test issuer. */
export function issuerProvider(server: TestIssuer, name: string): Record<string, unknown> {
  return {
    name,
    type: 'oidc',
    client_id: TEST_CLIENT_ID,
    client_secret: TEST_CLIENT_SECRET,
    issuer: server.issuer,
    scopes: ['openid', 'email'],
    supports_pkce: true,
  };
}

/**
 * A login at `share` through the frontend and the test issuer: the frontend's redirect, the
 * issuer's answer (its ID token carries the login's nonce, its other claims as `behaviour` makes
 * them), the callback. Returns the callback's reply and the session cookie it set, if any.
 */
export async function loginThroughIssuer(
  fe: TestFrontend,
  server: TestIssuer,
  share: string,
  provider: string,
): Promise<{ reply: Reply; cookie: string }> {
  const { authorizeUrl, loginCookie } = await startLogin(fe, share);
  const nonce = authorizeUrl.searchParams.get('nonce') ?? '';
  const claims = server.behaviour.claims;
  server.behaviour.claims = (base) => claims({ ...base, nonce });
  const back = new URL(`http://${fe.authHost}/${provider}/auth/callback`);
  back.searchParams.set('code', 'code-1');
  back.searchParams.set('state', authorizeUrl.searchParams.get('state') ?? '');
  back.searchParams.set('iss', server.issuer);
  try {
    const reply = await callback(fe, back, loginCookie);
    return { reply, cookie: cookiesFrom(reply) };
  } finally {
    server.behaviour.claims = claims;
  }
}

/** The value of one series of the frontend's Prometheus metrics (0 when absent), e.g. `name{a="b"}`. */
export async function frontendMetric(fe: TestFrontend, series: string): Promise<number> {
  const port = fe.frontend.metricsPort as number;
  const text = (await get(port, `127.0.0.1:${port}`, '/metrics')).body;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
