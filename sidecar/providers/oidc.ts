import { createHash } from 'node:crypto';
import { systemClock, type Clock } from '../../lib/clock.ts';
import type { OidcConfig } from '../../lib/config/providers.ts';
import { errorText } from '../../lib/errors.ts';
import { clientCredentials, clientRequest, providerRequest, refusal } from './http.ts';
import { idTokenVerifier, type IdTokenClaims, type IdTokenVerifier } from './id-token.ts';
import { discoverIssuer, type IssuerMetadata } from './oidc-discovery.ts';
import {
  callbackError,
  invalidToken,
  ProviderError,
  unreachable,
  type Identity,
  type LoginResult,
  type Provider,
  type ProviderTokens,
} from './types.ts';

/** A successful token endpoint response (RFC 6749 §5.1), with the ID token's verified claims. */
interface Tokens {
  readonly accessToken: string;
  readonly refreshToken?: string;
  readonly claims?: IdTokenClaims;
}

interface Discovered {
  readonly metadata: IssuerMetadata;
  readonly idTokens: IdTokenVerifier;
}

/**
 * Generic OpenID Connect (Core 1.0, authorization code flow) as a confidential client: discovery
 * from `issuer`, nonce always, PKCE S256 when `supports_pkce`, the RFC 9207 `iss` check where the
 * server supports it, the ID token verified (id-token.ts), email from the ID token or user info
 * (`email_verified` must be true), refresh with the stored refresh token (never the access token)
 * for the login's subject only, and RFC 7009 revocation of both tokens when discovered. The `state`
 * of a callback is the login-state store's to check (sidecar/login-state.ts), before this is called. Built on node:http and jose rather than openid-client,
 * whose `fetch` cost a sidecar 20-28 MiB of its memory (docs/design.md).
 */
export function oidcProvider(config: OidcConfig, clock: Clock = systemClock): Provider {
  const { name } = config;
  const client = clientCredentials(config);
  let discovered: Promise<Discovered> | undefined;

  const discovery = (): Promise<Discovered> => {
    discovered ??= discoverIssuer(config).then(
      (metadata) => ({ metadata, idTokens: idTokenVerifier(name, metadata, config.clientId, clock) }),
      (err: unknown) => {
        discovered = undefined; // the next request retries discovery
        throw err;
      },
    );
    return discovered;
  };

  /** RFC 6749 §5.1/§5.2 at the token endpoint; an OpenID login must bring an ID token. */
  const tokenGrant = async (
    what: string,
    fields: Record<string, string>,
    idToken: { required: boolean; nonce?: string },
  ): Promise<Tokens> => {
    const { metadata, idTokens } = await discovery();
    const response = await clientRequest(name, what, metadata.tokenEndpoint, client, fields);
    const body = (response.json ?? {}) as Record<string, unknown>;
    if (response.status !== 200 || typeof body.access_token !== 'string' || body.access_token === '')
      throw refusal(name, what, response.status, response.json);
    if (typeof body.token_type !== 'string' || body.token_type.toLowerCase() !== 'bearer')
      throw new ProviderError(name, `${what}: unsupported token_type ${JSON.stringify(body.token_type)}`);
    if (body.refresh_token !== undefined && typeof body.refresh_token !== 'string')
      throw new ProviderError(name, `${what}: refresh_token is not a string`);
    if (body.id_token !== undefined && typeof body.id_token !== 'string')
      throw new ProviderError(name, `${what}: id_token is not a string`);
    if (idToken.required && body.id_token === undefined) throw new ProviderError(name, `${what}: no ID token`);
    const claims = body.id_token === undefined ? undefined : await idTokens.verify(body.id_token, idToken.nonce);
    return {
      accessToken: body.access_token,
      ...(body.refresh_token ? { refreshToken: body.refresh_token } : {}),
      ...(claims ? { claims } : {}),
    };
  };

  /** OpenID Connect Core §5.3: user info as JSON, for the same subject as the ID token. */
  const userInfo = async (accessToken: string, subject: string | undefined): Promise<Record<string, unknown>> => {
    const { metadata } = await discovery();
    if (!metadata.userinfoEndpoint)
      throw new ProviderError(name, 'the ID token has no email and the provider has no user info endpoint');
    const response = await providerRequest(name, 'user info', metadata.userinfoEndpoint, {
      method: 'GET',
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
    });
    const info = response.json as Record<string, unknown> | undefined;
    if (response.status !== 200) throw refusal(name, 'user info', response.status, response.json);
    if (!info || typeof info !== 'object' || !/^application\/json/i.test(response.contentType))
      throw new ProviderError(name, 'user info: the response is not a JSON object (signed user info is not supported)');
    if (subject !== undefined && info.sub !== subject)
      throw invalidToken(name, 'user info: "sub" is not the subject of the ID token');
    return info;
  };

  /** The identity the tokens vouch for; user info, when needed, must be about `subject`. */
  const identityOf = async (tokens: Tokens, subject: string | undefined): Promise<Identity> => {
    let email = tokens.claims?.email;
    let verified = tokens.claims?.email_verified;
    if (typeof email !== 'string' || typeof verified !== 'boolean') {
      const info = await userInfo(tokens.accessToken, subject);
      email = info.email;
      verified = info.email_verified;
    }
    if (typeof email !== 'string')
      throw new ProviderError(name, 'the provider returned no email address (is the email scope granted?)');
    return { email, verified: verified === true };
  };

  const sessionTokens = (tokens: Tokens, previous?: ProviderTokens): ProviderTokens => {
    const refreshToken = tokens.refreshToken ?? previous?.refreshToken;
    const sub = tokens.claims?.sub ?? previous?.sub;
    return { accessToken: tokens.accessToken, ...(refreshToken ? { refreshToken } : {}), ...(sub ? { sub } : {}) };
  };

  return {
    name,
    type: 'oidc',
    ready: async () => {
      await discovery();
    },
    async authorizationUrl(request) {
      const { metadata } = await discovery();
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
    },
    async completeLogin(input): Promise<LoginResult> {
      const callback = input.callbackUrl.searchParams;
      const refused = callbackError(name, input.callbackUrl);
      if (refused) throw refused;
      const { metadata } = await discovery();
      // RFC 9207: a response from another issuer (mix-up attack) is refused before any exchange.
      const iss = callback.get('iss');
      if (iss === null && metadata.issParameterSupported)
        throw new ProviderError(name, 'the login response has no "iss" although the provider sends one');
      if (iss !== null && iss !== metadata.issuer)
        throw invalidToken(name, 'the login response comes from another issuer ("iss" does not match)');
      const code = callback.get('code');
      if (!code) throw new ProviderError(name, 'the login response has no authorization code');
      const tokens = await tokenGrant(
        'code exchange',
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: input.redirectUri,
          ...(config.supportsPkce ? { code_verifier: input.codeVerifier } : {}),
        },
        { required: true, nonce: input.nonce },
      );
      return { tokens: sessionTokens(tokens), identity: await identityOf(tokens, tokens.claims?.sub) };
    },
    canRefresh: (tokens) => typeof tokens.refreshToken === 'string' && tokens.refreshToken !== '',
    async refresh(tokens): Promise<LoginResult> {
      if (!tokens.refreshToken) throw new ProviderError(name, 'no refresh token');
      const fresh = await tokenGrant(
        'refresh',
        { grant_type: 'refresh_token', refresh_token: tokens.refreshToken },
        { required: false },
      );
      // OpenID Connect Core §12.2: a refreshed ID token names the same subject as the login's.
      const subject = tokens.sub ?? fresh.claims?.sub;
      if (fresh.claims && subject !== undefined && fresh.claims.sub !== subject)
        throw invalidToken(name, 'the refreshed ID token names another subject than the login ("sub" changed)');
      return { tokens: sessionTokens(fresh, tokens), identity: await identityOf(fresh, subject) };
    },
    async revoke(tokens) {
      const { metadata } = await discovery();
      const endpoint = metadata.revocationEndpoint;
      if (!endpoint) return;
      const hints: [string | undefined, string][] = [
        [tokens.refreshToken, 'refresh_token'],
        [tokens.accessToken, 'access_token'],
      ];
      // Each token is revoked even when the other's revocation failed; the failures are reported
      // together, by token type only (never the token).
      const failures: ProviderError[] = [];
      for (const [token, hint] of hints) {
        if (!token) continue;
        const what = `revocation of the ${hint.replace('_', ' ')}`;
        try {
          const result = await clientRequest(name, what, endpoint, client, { token, token_type_hint: hint });
          if (result.status !== 200) failures.push(refusal(name, what, result.status, result.json));
        } catch (err) {
          failures.push(
            err instanceof ProviderError ? err : unreachable(name, `${what} failed: ${errorText(err)}`, err),
          );
        }
      }
      if (failures.length > 1) throw new AggregateError(failures, `${name}: revocation failed for both tokens`);
      const [failure] = failures;
      if (failure) throw failure;
    },
    loginPageUrl: () => config.endpoints.login_url,
  };
}
