import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import Provider, { type Configuration, type Grant, type KoaContextWithOIDC } from 'oidc-provider';
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
  const client: DevClient = { id: 'svc-dev', secret: randomBytes(24).toString('base64url'), jwks: devSigningKeys() };
  const counts: Counts = { revocations: { requests: 0, revokedGrants: 0 }, refreshes: { count: 0 } };
  // Built at the first request: the redirect URIs may name a port the frontend binds only later.
  let handler: ReturnType<Provider['callback']> | undefined;
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handler ??= devProvider(issuer, client, options, counts).callback();
    void handler(req, res);
  });

  return {
    issuer,
    clientId: client.id,
    clientSecret: client.secret,
    ...counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The provider's one client (the frontend's credentials) and its signing keys. */
interface DevClient {
  readonly id: string;
  readonly secret: string;
  readonly jwks: NonNullable<Configuration['jwks']>;
}

/** What the provider counts for the tests (the same objects the started provider exposes). */
type Counts = Pick<DevIdentityProvider, 'revocations' | 'refreshes'>;

/** The oidc-provider instance: its configuration, the redirect URI check, the counters and the token endpoint rule. */
function devProvider(issuer: URL, client: DevClient, options: DevIdentityProviderOptions, counts: Counts): Provider {
  const given = typeof options.redirectUris === 'function' ? options.redirectUris() : options.redirectUris;
  const configuration = devConfiguration(client, given ?? ['http://localhost/callback'], options);
  const provider = new Provider(issuer.href.replace(/\/$/, ''), configuration);
  if (!given) allowLoopbackRedirects(provider);
  count(provider, counts);
  const only = options.onlyTokenEndpointAuthMethod;
  if (only) acceptOnlyAtTokenEndpoint(provider, only);
  return provider;
}

/** Configuration of the one client, the claims from the login name, the features and lifetimes. */
function devConfiguration(
  client: DevClient,
  redirectUris: readonly string[],
  options: DevIdentityProviderOptions,
): Configuration {
  const refreshTokens = options.refreshTokens ?? true;
  const unverified = new Set((options.unverifiedEmails ?? []).map((e) => e.toLowerCase()));
  return {
    clients: [
      {
        client_id: client.id,
        client_secret: client.secret,
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
      revocation: { enabled: true, allowedPolicy: (_ctx, c, token) => token.clientId === c.clientId },
      userinfo: { enabled: true },
    },
    pkce: { required: () => options.requirePkce ?? false },
    issueRefreshToken: (_ctx, c) => refreshTokens && c.grantTypeAllowed('refresh_token'),
    loadExistingGrant: grantEveryScope,
    ttl: { ...DEV_TTL, AccessToken: options.accessTokenTtlSeconds ?? 3600 },
    adapter: devStore(),
    jwks: client.jwks,
    cookies: { keys: [randomBytes(32).toString('hex')] },
    rotateRefreshToken: true,
  };
}

/** The development provider grants every requested scope without a consent screen. */
async function grantEveryScope(ctx: KoaContextWithOIDC): Promise<Grant> {
  const grantId = ctx.oidc.result?.consent?.grantId ?? ctx.oidc.session?.grantIdFor(ctx.oidc.client?.clientId ?? '');
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
}

/** Without configured redirect URIs: any http(s) callback on a loopback host. */
function allowLoopbackRedirects(provider: Provider): void {
  provider.Client.prototype.redirectUriAllowed = (uri: string): boolean => {
    try {
      const url = new URL(uri);
      return (url.protocol === 'http:' || url.protocol === 'https:') && isLoopbackHost(url.hostname);
    } catch {
      return false;
    }
  };
}

/** Counts revocation requests, revoked grants and refresh grants into `counts`. */
function count(provider: Provider, counts: Counts): void {
  provider.on('grant.revoked', () => {
    counts.revocations.revokedGrants += 1;
  });
  provider.on('grant.success', (ctx) => {
    if ((ctx.oidc.params as { grant_type?: string } | undefined)?.grant_type === 'refresh_token')
      counts.refreshes.count += 1;
  });
  provider.use(async (ctx, next) => {
    if (ctx.path === '/token/revocation' && ctx.method === 'POST') counts.revocations.requests += 1;
    await next();
  });
}

/** Refuses, as some providers do, a token request that authenticates the client the other way. */
function acceptOnlyAtTokenEndpoint(
  provider: Provider,
  only: NonNullable<DevIdentityProviderOptions['onlyTokenEndpointAuthMethod']>,
): void {
  provider.use(async (ctx, next) => {
    if (ctx.path === '/token' && ctx.method === 'POST') {
      const used = ctx.get('authorization') ? 'client_secret_basic' : 'client_secret_post';
      if (used !== only) {
        ctx.status = 401;
        ctx.body = { error: 'invalid_client', error_description: `only ${only} is accepted here` };
        return;
      }
    }
    await next();
  });
}
