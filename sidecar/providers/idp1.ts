import type { Idp1Config } from '../../lib/config/providers.ts';
import { ProviderError, statusFailure, type CallbackInput, type Provider, type ProviderTokens } from './types.ts';
import { form, providerRequest } from './http.ts';
import { exchangePkceCode, pkceAuthorizationUrl } from './pkce-code-flow.ts';

/**
 * idp1: the web-search company's OAuth 2.0 provider. Authorization code flow with PKCE against its
 * authorize and token endpoints, the email from its user info endpoint (`email_verified`, or
 * `verified_email` from the older v2 endpoint, must be true), and RFC 7009 revocation at its revocation endpoint. It issues no refresh token for online
 * access, so a re-check restarts the login.
 */
export function idp1Provider(config: Idp1Config): Provider {
  const { name, endpoints } = config;
  return {
    name,
    type: 'idp1',
    ready: () => Promise.resolve(),
    authorizationUrl(request) {
      return Promise.resolve(
        pkceAuthorizationUrl(config, request, {
          response_type: 'code',
          ...(config.scopes.includes('openid') ? { nonce: request.nonce } : {}),
          access_type: 'online',
        }),
      );
    },
    async completeLogin(input: CallbackInput) {
      const accessToken = await exchangePkceCode(config, input, { grant_type: 'authorization_code' });
      const info = await providerRequest(name, 'user info', endpoints.user_info_url, {
        method: 'GET',
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      });
      const claims = info.json as { email?: unknown; email_verified?: unknown; verified_email?: unknown } | undefined;
      if (info.status !== 200 || typeof claims?.email !== 'string') {
        throw statusFailure(name, `user info returned no email (HTTP ${info.status})`, info.status);
      }
      // The OpenID user-info endpoint says `email_verified`; the older OAuth2 v2 one (which
      // user_info_url may name) says `verified_email`. Only a literal true counts: a missing flag never does.
      const verified = claims.email_verified === true || claims.verified_email === true;
      return { tokens: { accessToken }, identity: { email: claims.email, verified } };
    },
    canRefresh: () => false,
    refresh: () => Promise.reject(new ProviderError(name, 'refresh is not supported')),
    async revoke(tokens: ProviderTokens) {
      const token = tokens.accessToken ?? tokens.refreshToken;
      if (!token) return;
      const result = await providerRequest(name, 'revocation', endpoints.revocation_url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form({ token }),
      });
      if (result.status !== 200) throw statusFailure(name, `revocation refused (HTTP ${result.status})`, result.status);
    },
    loginPageUrl: () => endpoints.login_url,
  };
}
