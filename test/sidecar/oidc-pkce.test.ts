import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevIdentityProvider, type DevIdentityProvider } from '../../devidp/provider.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';
import { providerRedirect } from '../support/oauth-flow.ts';

/** `supports_pkce` is honoured both ways (zrok ignored it), against the real oidc-provider. */
describe('oidc PKCE option', () => {
  let idp: DevIdentityProvider;
  let backend: EchoBackend;
  let fe: TestFrontend;

  beforeAll(async () => {
    idp = await startDevIdentityProvider({ requirePkce: true });
    backend = await startEchoBackend();
    const provider = (name: string, pkce: boolean) => ({
      name,
      type: 'oidc',
      client_id: idp.clientId,
      client_secret: idp.clientSecret,
      scopes: ['openid', 'email'],
      issuer: idp.issuer.href,
      supports_pkce: pkce,
    });
    fe = await startTestFrontend({
      providers: [provider('withpkce', true), provider('nopkce', false)],
      shares: [
        { token: 'a', target: backend.url.href, oauth_provider: 'withpkce' },
        { token: 'b', target: backend.url.href, oauth_provider: 'nopkce' },
      ],
    });
  });
  afterAll(async () => {
    await fe?.close();
    await backend?.close();
    await idp?.close();
  });

  const authorize = async (token: string) => {
    let reply = await get(fe.port, fe.host(token), '/');
    for (let i = 0; i < 20 && reply.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 200));
      reply = await get(fe.port, fe.host(token), '/');
    }
    return new URL((await providerRedirect(fe, reply)).headers.location ?? '');
  };

  it('sends an S256 challenge and a nonce when supports_pkce is true', async () => {
    const url = await authorize('a');
    expect(url.origin).toBe(idp.issuer.origin);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('nonce')).toBeTruthy();
    // The provider accepts the request (it shows its login page rather than an error redirect).
    const page = await fetch(url, { redirect: 'manual' });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toMatch(/^\/interaction\//);
  });

  it('sends no challenge when supports_pkce is false, which a PKCE-only provider refuses', async () => {
    const url = await authorize('b');
    expect(url.searchParams.has('code_challenge')).toBe(false);
    const refused = await fetch(url, { redirect: 'manual' });
    expect(refused.status).toBe(303);
    const back = new URL(refused.headers.get('location') ?? '');
    expect(back.pathname).toBe('/nopkce/auth/callback');
    expect(back.searchParams.get('error')).toBe('invalid_request');
  });
});
