import * as client from 'openid-client';
import type { OidcConfig } from '../../lib/config/providers.ts';
import { isLoopbackHost } from '../../lib/net.ts';
import { errorText } from '../../lib/errors.ts';
import {
  callbackError,
  ProviderError,
  type Identity,
  type LoginResult,
  type Provider,
  type ProviderTokens,
} from './types.ts';

type TokenResponse = Awaited<ReturnType<typeof client.authorizationCodeGrant>>;

/**
 * Generic OpenID Connect through openid-client (certified relying-party library): discovery from
 * `issuer`, nonce always, PKCE S256 when `supports_pkce`, the RFC 9207 `iss` check where the server
 * supports it, email from the ID token or user info (`email_verified` must be true), refresh with
 * the stored refresh token (never the access token), and RFC 7009 revocation when discovered.
 */
export function oidcProvider(config: OidcConfig): Provider {
  const { name, issuer } = config;
  let discovered: Promise<client.Configuration> | undefined;

  const translate = (what: string, err: unknown): ProviderError => {
    if (err instanceof ProviderError) return err;
    // The provider's own OAuth error (`invalid_client: …`) says more than openid-client's wrapper.
    if (err instanceof client.ResponseBodyError) {
      const detail = err.error_description ? `${err.error}: ${err.error_description}` : err.error;
      return new ProviderError(name, `${what} refused (HTTP ${err.status}, ${detail})`, err);
    }
    return new ProviderError(name, `${what} failed: ${errorText(err)}`, err);
  };

  const configuration = (): Promise<client.Configuration> => {
    discovered ??= client
      .discovery(
        issuer,
        config.clientId,
        undefined,
        config.tokenEndpointAuthMethod === 'client_secret_post'
          ? client.ClientSecretPost(config.clientSecret)
          : client.ClientSecretBasic(config.clientSecret),
        {
          ...(issuer.protocol === 'http:' && (config.insecureAllowHttp || isLoopbackHost(issuer.hostname))
            ? { execute: [client.allowInsecureRequests] }
            : {}),
          timeout: 10,
        },
      )
      .catch((err: unknown) => {
        discovered = undefined; // the next request retries discovery
        throw translate(`discovery at ${issuer.href}`, err);
      });
    return discovered;
  };

  const identityOf = async (cfg: client.Configuration, response: TokenResponse): Promise<Identity> => {
    const claims = response.claims();
    let email = claims?.email;
    let verified = claims?.email_verified;
    if (typeof email !== 'string' || typeof verified !== 'boolean') {
      const info = await client.fetchUserInfo(cfg, response.access_token, claims?.sub ?? client.skipSubjectCheck);
      email = info.email;
      verified = info.email_verified;
    }
    if (typeof email !== 'string')
      throw new ProviderError(name, 'the provider returned no email address (is the email scope granted?)');
    return { email, verified: verified === true };
  };

  const tokensOf = (response: TokenResponse, previous?: ProviderTokens): ProviderTokens => {
    const refreshToken = response.refresh_token ?? previous?.refreshToken;
    return { accessToken: response.access_token, ...(refreshToken ? { refreshToken } : {}) };
  };

  return {
    name,
    type: 'oidc',
    ready: async () => {
      await configuration();
    },
    async authorizationUrl(request) {
      const cfg = await configuration();
      const params: Record<string, string> = {
        redirect_uri: request.redirectUri,
        scope: config.scopes.join(' '),
        state: request.state,
        nonce: request.nonce,
        response_type: 'code',
      };
      if (config.supportsPkce) {
        params.code_challenge = await client.calculatePKCECodeChallenge(request.codeVerifier);
        params.code_challenge_method = 'S256';
      }
      return client.buildAuthorizationUrl(cfg, params);
    },
    async completeLogin(input): Promise<LoginResult> {
      const refused = callbackError(name, input.callbackUrl);
      if (refused) throw refused;
      const cfg = await configuration();
      try {
        const response = await client.authorizationCodeGrant(
          cfg,
          input.callbackUrl,
          {
            expectedState: input.state,
            expectedNonce: input.nonce,
            ...(config.supportsPkce ? { pkceCodeVerifier: input.codeVerifier } : {}),
          },
          { redirect_uri: input.redirectUri },
        );
        return { tokens: tokensOf(response), identity: await identityOf(cfg, response) };
      } catch (err) {
        throw translate('code exchange', err);
      }
    },
    canRefresh: (tokens) => typeof tokens.refreshToken === 'string' && tokens.refreshToken !== '',
    async refresh(tokens): Promise<LoginResult> {
      if (!tokens.refreshToken) throw new ProviderError(name, 'no refresh token');
      const cfg = await configuration();
      try {
        const response = await client.refreshTokenGrant(cfg, tokens.refreshToken);
        return { tokens: tokensOf(response, tokens), identity: await identityOf(cfg, response) };
      } catch (err) {
        throw translate('refresh', err);
      }
    },
    async revoke(tokens) {
      const cfg = await configuration();
      if (!cfg.serverMetadata().revocation_endpoint) return;
      const hints: [string | undefined, string][] = [
        [tokens.refreshToken, 'refresh_token'],
        [tokens.accessToken, 'access_token'],
      ];
      for (const [token, hint] of hints) {
        if (!token) continue;
        try {
          await client.tokenRevocation(cfg, token, { token_type_hint: hint });
        } catch (err) {
          throw translate('revocation', err);
        }
      }
    },
    loginPageUrl: () => config.endpoints.login_url,
  };
}
