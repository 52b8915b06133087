import { createHash } from 'node:crypto';
import { systemClock, type Clock } from '../../lib/clock.ts';
import type { OidcConfig } from '../../lib/config/providers.ts';
import { clientCredentials } from './http.ts';
import { idTokenVerifier } from './id-token.ts';
import { discoverIssuer, type IssuerMetadata } from './oidc-discovery.ts';
import {
  identityOf,
  revokeTokens,
  sessionTokens,
  tokenGrant,
  type Discovered,
  type OidcClient,
} from './oidc-tokens.ts';
import {
  callbackError,
  invalidToken,
  ProviderError,
  type AuthorizationRequest,
  type CallbackInput,
  type LoginResult,
  type Provider,
  type ProviderTokens,
} from './types.ts';

/**
 * Generic OpenID Connect (Core 1.0, authorization code flow) as a confidential client: discovery
 * from `issuer`, nonce always, PKCE S256 when `supports_pkce`, the RFC 9207 `iss` check where the
 * server supports it, the ID token verified (id-token.ts), email from the ID token or user info
 * (`email_verified` must be true), refresh with the stored refresh token (never the access token)
 * for the login's subject only, and RFC 7009 revocation of both tokens when discovered
 * (oidc-tokens.ts). The `state` of a callback is the login-state store's to check
 * (sidecar/login-state.ts), before this is called. Built on node:http and jose rather than
 * openid-client, whose `fetch` cost a sidecar 20-28 MiB of its memory
 * (docs/design.md).
 */
export function oidcProvider(config: OidcConfig, clock: Clock = systemClock): Provider {
  const oidc: OidcClient = {
    name: config.name,
    config,
    client: clientCredentials(config),
    discovery: onceDiscovered(config, clock),
  };
  return {
    name: config.name,
    type: 'oidc',
    ready: async () => {
      await oidc.discovery();
    },
    authorizationUrl: async (request) => authorizationUrl(config, (await oidc.discovery()).metadata, request),
    completeLogin: (input) => completeLogin(oidc, input),
    canRefresh: (tokens) => typeof tokens.refreshToken === 'string' && tokens.refreshToken !== '',
    refresh: (tokens) => refresh(oidc, tokens),
    revoke: (tokens) => revokeTokens(oidc, tokens),
    loginPageUrl: () => config.endpoints.login_url,
  };
}

/** Discovery of the issuer, done once and shared; a failure is forgotten, so the next call retries it. */
function onceDiscovered(config: OidcConfig, clock: Clock): () => Promise<Discovered> {
  let discovered: Promise<Discovered> | undefined;
  return () => {
    discovered ??= discoverIssuer(config).then(
      (metadata) => ({ metadata, idTokens: idTokenVerifier(config.name, metadata, config.clientId, clock) }),
      (err: unknown) => {
        discovered = undefined;
        throw err;
      },
    );
    return discovered;
  };
}

/** The authorization endpoint with this login's parameters (and the PKCE challenge when supported). */
function authorizationUrl(config: OidcConfig, metadata: IssuerMetadata, request: AuthorizationRequest): URL {
  const url = new URL(metadata.authorizationEndpoint);
  const params: Record<string, string> = {
    client_id: config.clientId,
    redirect_uri: request.redirectUri,
    scope: config.scopes.join(' '),
    state: request.state,
    nonce: request.nonce,
    response_type: 'code',
  };
  if (config.supportsPkce) {
    params.code_challenge = createHash('sha256').update(request.codeVerifier).digest('base64url');
    params.code_challenge_method = 'S256';
  }
  // The endpoint's own query (a tenant, a policy) is kept; ours is added after it.
  for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
  return url;
}

/** The login's callback: its authorization code exchanged for tokens, and the identity they vouch for. */
async function completeLogin(oidc: OidcClient, input: CallbackInput): Promise<LoginResult> {
  const { config } = oidc;
  const code = await callbackCode(oidc, input.callbackUrl);
  const tokens = await tokenGrant(
    oidc,
    'code exchange',
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: input.redirectUri,
      ...(config.supportsPkce ? { code_verifier: input.codeVerifier } : {}),
    },
    { required: true, nonce: input.nonce },
  );
  return { tokens: sessionTokens(tokens), identity: await identityOf(oidc, tokens, tokens.claims?.sub) };
}

/**
 * The authorization code of a callback from this issuer: an `error` the provider put there is
 * translated, and (RFC 9207) a response from another issuer — a mix-up attack — is refused before
 * any exchange.
 */
async function callbackCode(oidc: OidcClient, callbackUrl: URL): Promise<string> {
  const { name } = oidc;
  const refused = callbackError(name, callbackUrl);
  if (refused) throw refused;
  const { metadata } = await oidc.discovery();
  const iss = callbackUrl.searchParams.get('iss');
  if (iss === null && metadata.issParameterSupported)
    throw new ProviderError(name, 'the login response has no "iss" although the provider sends one');
  if (iss !== null && iss !== metadata.issuer)
    throw invalidToken(name, 'the login response comes from another issuer ("iss" does not match)');
  const code = callbackUrl.searchParams.get('code');
  if (!code) throw new ProviderError(name, 'the login response has no authorization code');
  return code;
}

/** A refresh with the session's refresh token, for the login's subject only. */
async function refresh(oidc: OidcClient, tokens: ProviderTokens): Promise<LoginResult> {
  const { name } = oidc;
  if (!tokens.refreshToken) throw new ProviderError(name, 'no refresh token');
  const fresh = await tokenGrant(
    oidc,
    'refresh',
    { grant_type: 'refresh_token', refresh_token: tokens.refreshToken },
    { required: false },
  );
  // OpenID Connect Core §12.2: a refreshed ID token names the same subject as the login's.
  const subject = tokens.sub ?? fresh.claims?.sub;
  if (fresh.claims && subject !== undefined && fresh.claims.sub !== subject)
    throw invalidToken(name, 'the refreshed ID token names another subject than the login ("sub" changed)');
  return { tokens: sessionTokens(fresh, tokens), identity: await identityOf(oidc, fresh, subject) };
}
