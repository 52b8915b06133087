import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Provider, { type Configuration } from 'oidc-provider';
import { isLoopbackHost } from '../lib/loopback.ts';
import { createServer } from '../lib/node-http.ts';
import { DEV_TTL, devSigningKeys, devStore } from './store.ts';

export interface DevIdentityProviderOptions {
  /** Port to listen on (0 = any free port). */
  readonly port?: number;
  /** Host name used in the issuer URL (default localhost); it must resolve to loopback for browsers. */
  readonly issuerHost?: string;
  /**
   * Address to listen on (default 127.0.0.1). The Kubernetes end-to-end tests listen on their test
   * node's host-side address so that share pods reach the issuer too.
   */
  readonly listenAddress?: string;
  /**
   * Redirect URIs the client may use (the frontend's `/<name>/auth/callback`). A function is read at
   * the first request, so the provider can start before the frontend has picked its port. When
   * absent, any callback URL on a loopback host (`localhost`, `*.localhost`, 127.0.0.1) is accepted:
   * convenient for `--dev`, and still unusable from another machine.
   */
  readonly redirectUris?: readonly string[] | (() => readonly string[]);
  /** Issue refresh tokens (default true). */
  readonly refreshTokens?: boolean;
  /** Demand PKCE from the client (default false). */
  readonly requirePkce?: boolean;
  /** Accounts whose email is reported as not verified. */
  readonly unverifiedEmails?: readonly string[];
  /**
   * Accept only this way of client authentication at the token endpoint, as some providers do
   * (oidc-provider itself takes Basic and form credentials alike). Default: both.
   */
  readonly onlyTokenEndpointAuthMethod?: 'client_secret_basic' | 'client_secret_post';
  /** Access-token lifetime in seconds (default 3600). */
  readonly accessTokenTtlSeconds?: number;
}

export interface DevIdentityProvider {
  readonly issuer: URL;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Count of requests the revocation endpoint received, and of grants it revoked. */
  readonly revocations: { requests: number; revokedGrants: number };
  /** Count of refresh_token grants served. */
  readonly refreshes: { count: number };
  close(): Promise<void>;
}

/**
 * The bundled development identity provider: oidc-provider (OpenID Certified) in-process, with its
 * development login form that accepts any login — type an email address and any password. Used by
 * `svc serve --dev` / `svc controller --dev` and by the tests as the real OIDC peer. Never for production.
 */
export async function startDevIdentityProvider(options: DevIdentityProviderOptions = {}): Promise<DevIdentityProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, options.listenAddress ?? '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = new URL(`http://${options.issuerHost ?? 'localhost'}:${port}`);
  const clientId = 'svc-dev';
  const clientSecret = randomBytes(24).toString('base64url');
  const unverified = new Set((options.unverifiedEmails ?? []).map((e) => e.toLowerCase()));
  const revocations = { requests: 0, revokedGrants: 0 };
  const refreshes = { count: 0 };
  const refreshTokens = options.refreshTokens ?? true;
  const jwks = devSigningKeys();

  const configuration = (redirectUris: readonly string[]): Configuration => ({
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [...redirectUris],
        grant_types: refreshTokens ? ['authorization_code', 'refresh_token'] : ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: options.onlyTokenEndpointAuthMethod ?? 'client_secret_basic',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, email: sub, email_verified: !unverified.has(sub.toLowerCase()), name: sub }),
    }),
    features: {
      devInteractions: { enabled: true },
      revocation: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
      userinfo: { enabled: true },
    },
    pkce: { required: () => options.requirePkce ?? false },
    issueRefreshToken: (_ctx, client) => refreshTokens && client.grantTypeAllowed('refresh_token'),
    // The development provider grants every requested scope without a consent screen.
    loadExistingGrant: async (ctx) => {
      const grantId =
        ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session?.grantIdFor(ctx.oidc.client?.clientId ?? '');
      if (grantId) {
        const existing = await ctx.oidc.provider.Grant.find(grantId);
        if (existing) return existing;
      }
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client?.clientId,
        accountId: ctx.oidc.session?.accountId,
      });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    ttl: { ...DEV_TTL, AccessToken: options.accessTokenTtlSeconds ?? 3600 },
    adapter: devStore(),
    jwks,
    cookies: { keys: [randomBytes(32).toString('hex')] },
    rotateRefreshToken: true,
  });
  const build = (): Provider => {
    const given = typeof options.redirectUris === 'function' ? options.redirectUris() : options.redirectUris;
    const provider = new Provider(
      issuer.href.replace(/\/$/, ''),
      configuration(given ?? ['http://localhost/callback']),
    );
    if (!given) {
      provider.Client.prototype.redirectUriAllowed = (uri: string): boolean => {
        try {
          const url = new URL(uri);
          return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);
        } catch {
          return false;
        }
      };
    }
    provider.on('grant.revoked', () => {
      revocations.revokedGrants += 1;
    });
    provider.on('grant.success', (ctx) => {
      if ((ctx.oidc.params as { grant_type?: string } | undefined)?.grant_type === 'refresh_token')
        refreshes.count += 1;
    });
    provider.use(async (ctx, next) => {
      if (ctx.path === '/token/revocation' && ctx.method === 'POST') revocations.requests += 1;
      const only = options.onlyTokenEndpointAuthMethod;
      if (only && ctx.path === '/token' && ctx.method === 'POST') {
        const used = ctx.get('authorization') ? 'client_secret_basic' : 'client_secret_post';
        if (used !== only) {
          ctx.status = 401;
          ctx.body = { error: 'invalid_client', error_description: `only ${only} is accepted here` };
          return;
        }
      }
      await next();
    });
    return provider;
  };
  let handler: ReturnType<Provider['callback']> | undefined;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handler ??= build().callback();
    void handler(req, res);
  });

  return {
    issuer,
    clientId,
    clientSecret,
    revocations,
    refreshes,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
