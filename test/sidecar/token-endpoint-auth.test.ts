import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { parseFrontendConfig } from '../../lib/config/frontend.ts';
import { ConfigError } from '../../lib/errors.ts';
import { startDevIdentityProvider, type DevIdentityProvider } from '../../devidp/provider.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { devLogin, launchBrowser } from '../support/browser.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, startLogin } from '../support/oauth-flow.ts';

/**
 * `token_endpoint_auth_method` per provider: `client_secret_basic` (the default for idp1 and oidc)
 * or `client_secret_post` (idp2's default), each tried against a token endpoint that accepts only
 * one of them: the idp1 server, and the real oidc-provider made to refuse the other method.
 */
let backend: EchoBackend;
beforeAll(async () => {
  backend = await startEchoBackend();
});
afterAll(() => backend?.close());

describe('config', () => {
  const provider = (extra: Record<string, unknown>) => ({
    oauth: {
      bind_address: '127.0.0.1:0',
      endpoint_url: 'http://auth.svc.localhost:1',
      cookie_name: 'svc-auth-session',
      cookie_domain: 'svc.localhost',
      session_lifetime: '6h',
      intermediate_lifetime: '5m',
      signing_key: 's'.repeat(32),
      encryption_key: 'e'.repeat(24),
      providers: [{ name: 'p', type: 'idp1', client_id: 'c', client_secret: 's', ...extra }],
    },
    shares: [],
  });

  it('defaults per type and accepts both methods', () => {
    expect(parseFrontendConfig(provider({})).oauth.providers[0]?.tokenEndpointAuthMethod).toBe('client_secret_basic');
    expect(parseFrontendConfig(provider({ type: 'idp2' })).oauth.providers[0]?.tokenEndpointAuthMethod).toBe(
      'client_secret_post',
    );
    expect(
      parseFrontendConfig(provider({ token_endpoint_auth_method: 'client_secret_post' })).oauth.providers[0]
        ?.tokenEndpointAuthMethod,
    ).toBe('client_secret_post');
  });

  it('refuses any other method, naming the field and the allowed values', () => {
    try {
      parseFrontendConfig(provider({ token_endpoint_auth_method: 'private_key_jwt' }));
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(
        'oauth.providers[0].token_endpoint_auth_method: must be one of client_secret_basic, client_secret_post, got "private_key_jwt"',
      );
    }
  });
});

describe('idp1 token endpoint that accepts one method', () => {
  let idp1: Idp1Server;
  let fe: TestFrontend;
  beforeAll(async () => {
    idp1 = await startIdp1Server();
    fe = await startTestFrontend({
      providers: [
        idp1.providerConfig('basic'),
        { ...idp1.providerConfig('post'), token_endpoint_auth_method: 'client_secret_post' },
      ],
      shares: [
        { token: 'b', target: backend.url.href, oauth_provider: 'basic' },
        { token: 'p', target: backend.url.href, oauth_provider: 'post' },
      ],
    });
    idp1.redirectUris = ['basic', 'post'].map((n) => `http://${fe.authHost}/${n}/auth/callback`);
  });
  afterAll(async () => {
    await fe?.close();
    await idp1?.close();
  });

  const loginAt = async (share: string) => {
    const { authorizeUrl, loginCookie } = await startLogin(fe, share);
    return callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
  };

  it.each([
    ['client_secret_basic', 'b', 'p'],
    ['client_secret_post', 'p', 'b'],
  ] as const)(
    'accepting only %s: the provider configured for it logs in, the other is refused',
    async (method, works, refused) => {
      idp1.tokenAuthMethods = [method];
      const ok = await loginAt(works);
      expect(ok.status).toBe(302);
      expect(idp1.tokenRequests.at(-1)?.authMethod).toBe(method);
      const no = await loginAt(refused);
      expect(no.status).toBe(502);
      expect(no.body).toContain('invalid_client');
    },
  );
});

describe('oidc-provider accepting one method at its token endpoint', () => {
  let basicOnly: DevIdentityProvider;
  let postOnly: DevIdentityProvider;
  let fe: TestFrontend;
  let browser: Awaited<ReturnType<typeof launchBrowser>>;

  beforeAll(async () => {
    let callbacks: string[] = [];
    basicOnly = await startDevIdentityProvider({
      redirectUris: () => callbacks,
      onlyTokenEndpointAuthMethod: 'client_secret_basic',
    });
    postOnly = await startDevIdentityProvider({
      redirectUris: () => callbacks,
      onlyTokenEndpointAuthMethod: 'client_secret_post',
    });
    const oidc = (name: string, p: DevIdentityProvider, method?: string) => ({
      name,
      type: 'oidc',
      client_id: p.clientId,
      client_secret: p.clientSecret,
      scopes: ['openid', 'email'],
      issuer: p.issuer.href,
      supports_pkce: true,
      ...(method ? { token_endpoint_auth_method: method } : {}),
    });
    fe = await startTestFrontend({
      providers: [
        oidc('basic-default', basicOnly),
        oidc('post', postOnly, 'client_secret_post'),
        oidc('basic-at-post-only', postOnly),
      ],
      shares: [
        { token: 'one', target: backend.url.href, oauth_provider: 'basic-default' },
        { token: 'two', target: backend.url.href, oauth_provider: 'post' },
        { token: 'three', target: backend.url.href, oauth_provider: 'basic-at-post-only' },
      ],
    });
    callbacks = ['basic-default', 'post', 'basic-at-post-only'].map((n) => `http://${fe.authHost}/${n}/auth/callback`);
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    await fe?.close();
    await basicOnly?.close();
    await postOnly?.close();
  });

  /** Signs in on the share through the provider's form; the page the browser ends on. */
  const signIn = async (token: string): Promise<{ status: number; text: string }> => {
    // A fresh provider session each time, so the provider shows its login form.
    await browser.context.clearCookies();
    const page: Page = await browser.context.newPage();
    try {
      await page.goto(`http://${fe.host(token)}/`);
      const [final] = await Promise.all([
        page.waitForResponse((r) => r.request().isNavigationRequest() && r.url().includes(fe.authHost)),
        devLogin(page, 'alice@example.com'),
      ]);
      await page.waitForLoadState();
      return { status: final.status(), text: await page.content() };
    } finally {
      await page.close();
    }
  };

  it('client_secret_basic (the default) against a basic-only client logs in', async () => {
    const result = await signIn('one');
    expect(result.status).toBe(302);
  });

  it('client_secret_post against a post-only client logs in', async () => {
    const result = await signIn('two');
    expect(result.status).toBe(302);
  });

  it('client_secret_basic against a post-only client is refused with a clear page', async () => {
    const result = await signIn('three');
    expect(result.status).toBe(502);
    expect(result.text).toContain('Login failed');
    expect(result.text).toContain('invalid_client');
  });
});
